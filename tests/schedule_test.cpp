// The schedule IR: builders, validation (counts, sizes, order, deadlock), files; split
// backwards (I and W) and the zero-bubble schedules built on them.
#define BOOST_TEST_MODULE schedule
#include <boost/test/unit_test.hpp>

#include <actorpipe/schedule.hpp>
#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/schedule_io.hpp>
#include <actorpipe/simulator.hpp>

#include <numeric>
#include <random>

#include "test_support.hpp"

using namespace actorpipe;
using test::contains;

namespace {

std::string error_of(const Schedule& schedule) {
  const Status status = validate(schedule);
  BOOST_REQUIRE(!status.ok());
  return status.error().message;
}

} // namespace

BOOST_AUTO_TEST_CASE(builders_make_valid_schedules_with_the_expected_stash) {
  for (std::size_t stages : {1, 2, 3, 4, 8})
    for (std::uint32_t m : {1u, 2u, 4u, 7u, 16u}) {
      const std::vector<std::uint32_t> sizes(m, 4);
      const Schedule gpipe = gpipe_schedule(stages, sizes);
      const Schedule ofob = one_f_one_b_schedule(stages, sizes);
      BOOST_TEST_CONTEXT("stages " << stages << ", micro-batches " << m) {
        BOOST_TEST(validate(gpipe).ok());
        BOOST_TEST(validate(ofob).ok());
        const auto gpipe_peak = peak_stashed_samples(gpipe);
        const auto ofob_peak = peak_stashed_samples(ofob);
        for (std::size_t s = 0; s < stages; ++s) {
          BOOST_TEST(gpipe_peak[s] == 4u * m);
          BOOST_TEST(ofob_peak[s] == 4u * std::min<std::size_t>(m, stages - s));
        }
      }
    }
}

BOOST_AUTO_TEST_CASE(sliced_warm_up_is_counted_in_samples) {
  // The first micro-batch of 8 cut into four slices of 2: no stage stashes more samples
  // than plain 1F1B would.
  const Schedule sliced = one_f_one_b_schedule(4, {2, 2, 2, 2, 8, 8, 8}, 8);
  BOOST_REQUIRE(validate(sliced).ok());
  const auto peaks = peak_stashed_samples(sliced);
  for (std::size_t s = 0; s < 4; ++s)
    BOOST_TEST(peaks[s] <= 8u * (4 - s));
  // The last stage starts its first backward right after the first slice.
  BOOST_TEST(to_string(sliced.stages[3][1]) == "B0");
}

BOOST_AUTO_TEST_CASE(counts_sizes_and_order_are_checked) {
  Schedule s = one_f_one_b_schedule(2, {4, 4});
  s.stages[1].pop_back();
  BOOST_TEST(contains(error_of(s), "stage 1 never runs the backward of micro-batch 1"));

  s = one_f_one_b_schedule(2, {4, 4});
  s.stages[0][0].size = 3;
  BOOST_TEST(contains(error_of(s), "stage 0 action 0 (F0): size 3 differs from micro-batch 0's 4"));

  s = gpipe_schedule(1, {4, 4});
  std::swap(s.stages[0][0], s.stages[0][2]); // B0 F1 F0 B1
  BOOST_TEST(contains(error_of(s), "a backward before the micro-batch's forward"));

  s = gpipe_schedule(1, {4});
  s.stages[0].push_back(s.stages[0][0]);
  BOOST_TEST(contains(error_of(s), "a second forward"));
}

BOOST_AUTO_TEST_CASE(a_deadlock_names_who_waits_for_what) {
  // Stage 0 wants B0 before sending F1; stage 1 wants F1 before sending B0.
  Schedule s;
  s.name = "bad";
  s.micro_batch_sizes = {1, 1};
  s.stages = {{{Op::forward, 0, 1}, {Op::backward, 0, 1}, {Op::forward, 1, 1}, {Op::backward, 1, 1}},
              {{Op::forward, 0, 1}, {Op::forward, 1, 1}, {Op::backward, 0, 1}, {Op::backward, 1, 1}}};
  const std::string message = error_of(s);
  BOOST_TEST(contains(message, "schedule 'bad': deadlock"), message);
  BOOST_TEST(contains(message, "stage 0 waits at B0 for B0 or I0 of stage 1"), message);
  BOOST_TEST(contains(message, "stage 1 waits at F1 for F1 of stage 0"), message);
}

BOOST_AUTO_TEST_CASE(files_round_trip_and_errors_name_the_line) {
  const Schedule original = one_f_one_b_schedule(3, {2, 2, 1, 1});
  const std::string text = format_schedule(original);
  auto parsed = parse_schedule(text, "s.toml");
  REQUIRE_OK(parsed);
  BOOST_TEST(parsed->name == original.name);
  BOOST_TEST(parsed->micro_batch_sizes == original.micro_batch_sizes);
  BOOST_TEST((parsed->stages == original.stages));

  auto typo = parse_schedule("micro_batch_sizes = [1]\nstages = [\n  \"F0 X0\",\n]\n", "s.toml");
  BOOST_REQUIRE(!typo.ok());
  BOOST_TEST(contains(typo.error().message, "s.toml:3:3: stages[0]: 'X0' is not an action"), typo.error().message);

  // A float, however large, is no sample count (found by the schedule fuzzer).
  auto huge = parse_schedule("micro_batch_sizes = [555555e55]\nstages = [\"F0 B0\"]\n", "h.toml");
  BOOST_REQUIRE(!huge.ok());
  BOOST_TEST(contains(huge.error().message, "h.toml:1:22: micro_batch_sizes: expected a positive sample count"),
             huge.error().message);

  auto deadlock = parse_schedule("micro_batch_sizes = [1, 1]\nstages = [\"F0 B0 F1 B1\", \"F0 F1 B0 B1\"]\n", "d.toml");
  BOOST_REQUIRE(!deadlock.ok());
  BOOST_TEST(contains(deadlock.error().message, "d.toml: schedule 'custom': deadlock"), deadlock.error().message);

  auto missing = load_schedule("/nonexistent/schedule.toml");
  BOOST_REQUIRE(!missing.ok());
  BOOST_TEST(contains(missing.error().message, "/nonexistent/schedule.toml: file not found"));
}

BOOST_AUTO_TEST_CASE(advance_forward_runs_ahead_as_far_as_its_cap_between_1f1b_and_gpipe) {
  for (std::size_t stages : {1, 2, 4, 8})
    for (std::uint32_t m : {1u, 3u, 8u}) {
      const std::vector<std::uint32_t> sizes(m, 4);
      BOOST_TEST_CONTEXT("stages " << stages << ", micro-batches " << m) {
        // ahead 0 is 1F1B's order, ahead m − 1 (and beyond) GPipe's.
        BOOST_TEST((advance_forward_schedule(stages, sizes, 0).stages == one_f_one_b_schedule(stages, sizes).stages));
        BOOST_TEST((advance_forward_schedule(stages, sizes, m - 1).stages == gpipe_schedule(stages, sizes).stages));
        for (std::size_t ahead = 0; ahead < m + 2; ++ahead) {
          const Schedule afp = advance_forward_schedule(stages, sizes, ahead);
          REQUIRE_OK(validate(afp));
          BOOST_TEST(afp.name == "afp");
          // The cap: stage s stashes at most stages − s + ahead micro-batches.
          const auto stash = peak_stashed_samples(afp);
          for (std::size_t s = 0; s < stages; ++s)
            BOOST_TEST(stash[s] == 4u * std::min<std::uint64_t>(m, stages - s + ahead), "stage " << s);
        }
      }
    }
}

namespace {

/// A stage's one backward of micro-batch k split in two, I then W, where its B was.
Schedule split_backwards(Schedule s) {
  for (auto& actions : s.stages) {
    std::vector<Action> split;
    for (const Action& a : actions) {
      if (a.op != Op::backward) {
        split.push_back(a);
        continue;
      }
      split.push_back({Op::input_gradient, a.micro_batch, a.size});
      split.push_back({Op::weight_gradient, a.micro_batch, a.size});
    }
    actions = std::move(split);
  }
  return s;
}

/// What a device spends idle in an iteration, on average (the bubble), F = I = W = 1
/// per sample on a whole stage (a chunk its share), each send `send` per sample.
double bubble(const Schedule& s, double send = 0) {
  const std::size_t devices = s.stages.size(), virtual_stages = s.virtual_stages();
  const double share = 1.0 / s.chunks;
  const PipelineTiming t =
      simulate_pipeline(s, std::vector<double>(virtual_stages, share), std::vector<double>(virtual_stages, 2 * share),
                        std::vector<double>(virtual_stages - 1, send));
  const double busy = std::accumulate(t.busy_ms.begin(), t.busy_ms.end(), 0.0);
  return t.makespan_ms - busy / static_cast<double>(devices);
}

/// The most a device stashes, in samples of a whole stage.
double peak(const Schedule& s) {
  const auto peaks = peak_stash_per_device(s);
  return *std::max_element(peaks.begin(), peaks.end());
}

} // namespace

BOOST_AUTO_TEST_CASE(split_backwards_are_checked_and_written_as_i_and_w) {
  // 1F1B with each B split in place is valid and holds what 1F1B holds: a micro-batch
  // stays stashed until its W.
  const Schedule ofob = one_f_one_b_schedule(3, {2, 2, 2, 2});
  const Schedule split = split_backwards(ofob);
  REQUIRE_OK(validate(split));
  BOOST_TEST(peak_stashed_samples(split) == peak_stashed_samples(ofob), boost::test_tools::per_element());
  // The text form writes and reads I and W.
  const std::string text = format_schedule(split);
  BOOST_TEST(contains(text, "I0 W0"), text);
  auto parsed = parse_schedule(text, "split.toml");
  REQUIRE_OK(parsed);
  BOOST_TEST((parsed->stages == split.stages));

  // A W before its I, a W of a whole backward, an I twice, a W never run.
  Schedule s = split_backwards(gpipe_schedule(1, {4}));
  std::swap(s.stages[0][1], s.stages[0][2]); // F0 W0 I0
  BOOST_TEST(
      contains(error_of(s), "stage 0 action 1 (W0): a weight gradient before the micro-batch's input gradient (I)"));
  s = gpipe_schedule(1, {4});
  s.stages[0].push_back({Op::weight_gradient, 0, 4}); // F0 B0 W0
  BOOST_TEST(contains(error_of(s), "a weight gradient of a micro-batch whose backward was whole (B)"));
  s = split_backwards(gpipe_schedule(1, {4}));
  s.stages[0].insert(s.stages[0].begin() + 1, {Op::input_gradient, 0, 4}); // F0 I0 I0 W0
  BOOST_TEST(contains(error_of(s), "a second backward of the micro-batch"));
  s = split_backwards(gpipe_schedule(1, {4}));
  s.stages[0].pop_back(); // F0 I0
  BOOST_TEST(contains(error_of(s), "stage 0 never runs the weight gradient (W, after its I) of micro-batch 0"));

  // W waits for nothing from elsewhere; I waits for the next stage's I, as B for its B.
  auto hand_written = parse_schedule("micro_batch_sizes = [1, 1]\nstages = [\"F0 F1 I0 I1 W0 W1\", "
                                     "\"F0 I0 F1 W0 I1 W1\"]\n",
                                     "zb.toml");
  REQUIRE_OK(hand_written);
  auto waits = parse_schedule("micro_batch_sizes = [1]\nstages = [\"F0 I0 W0\", \"F0 W0 I0\"]\n", "w.toml");
  BOOST_REQUIRE(!waits.ok());
  BOOST_TEST(contains(waits.error().message, "stage 1 action 1 (W0): a weight gradient before"), waits.error().message);
}

BOOST_AUTO_TEST_CASE(a_schedule_places_each_stages_sync_and_step_or_none) {
  // Placed: each (virtual) stage's sync once its gradients are made, its step after it,
  // last; the device's other actions may come between. Read, written and read back.
  const std::string text = "micro_batch_sizes = [1, 1]\nchunks = 2\nstages = [\n"
                           "  \"F0 F1 F0@1 I0@1 F1@1 I1@1 I0 W0@1 I1 W1@1 sync@1 W0 W1 sync step@1 step\",\n"
                           "  \"F0 F0@1 F1 I0@1 F1@1 I0 I1@1 W0@1 I1 W0 W1@1 sync@1 W1 sync step@1 step\",\n]\n";
  auto v = parse_schedule(text + "shape = \"v\"\n", "placed.toml");
  REQUIRE_OK(v);
  BOOST_TEST(v->places_steps());
  BOOST_TEST(to_string(v->stages[0][10]) == "sync@1");
  BOOST_TEST(to_string(v->stages[0].back()) == "step");
  auto again = parse_schedule(format_schedule(*v), "again.toml");
  REQUIRE_OK(again);
  BOOST_TEST((again->stages == v->stages));
  // They hold nothing: the peaks are those of the same lists without them.
  Schedule bare = *v;
  for (auto& list : bare.stages)
    std::erase_if(list, [](const Action& a) { return !per_micro_batch(a.op); });
  BOOST_TEST(!bare.places_steps());
  REQUIRE_OK(validate(bare));
  BOOST_TEST(peak_stashed_samples(*v) == peak_stashed_samples(bare), boost::test_tools::per_element());

  // A sync before the stage's last W, a step before its sync, a second sync, an action
  // after the step, one stage placing none where another does.
  const auto with = [&](std::size_t stage, std::vector<Action> tail) {
    Schedule t = gpipe_schedule(2, {1, 1});
    for (std::size_t d = 0; d < 2; ++d)
      if (d != stage) t.stages[d].insert(t.stages[d].end(), {{Op::sync}, {Op::step}});
    t.stages[stage].insert(t.stages[stage].end(), tail.begin(), tail.end());
    return t;
  };
  REQUIRE_OK(validate(with(0, {{Op::sync}, {Op::step}})));
  Schedule s = with(0, {{Op::sync}, {Op::step}});
  std::swap(s.stages[0][3], s.stages[0][4]); // F0 F1 B1 sync B0 step
  BOOST_TEST(contains(error_of(s), "stage 0 action 3 (sync): a sync before the stage's gradients are made (1 of its "
                                   "micro-batches' B or W come after it)"));
  BOOST_TEST(
      contains(error_of(with(1, {{Op::step}, {Op::sync}})), "stage 1 action 4 (step): a step before the stage's sync"));
  BOOST_TEST(contains(error_of(with(1, {{Op::sync}, {Op::sync}, {Op::step}})), "a second sync of the stage"));
  BOOST_TEST(contains(error_of(with(1, {{Op::sync}, {Op::step}, {Op::step}})),
                      "stage 1 action 6 (step): after the "
                      "stage's step, which ends its iteration"));
  BOOST_TEST(contains(error_of(with(1, {})), "stage 1 has no sync and step, where the schedule places the others'"));
  BOOST_TEST(contains(error_of(with(1, {{Op::sync}})), "stage 1 has a sync and no step after it"));
  // Unknown words are no actions.
  auto typo = parse_schedule("micro_batch_sizes = [1]\nstages = [\"F0 B0 synk step\"]\n", "typo.toml");
  BOOST_REQUIRE(!typo.ok());
  BOOST_TEST(contains(typo.error().message, "'synk' is not an action (F<k>, B<k>, I<k>, W<k>, sync or step"),
             typo.error().message);
}

BOOST_AUTO_TEST_CASE(zero_bubble_schedules_cut_1f1bs_bubble_at_its_memory_or_twice_it) {
  // The goals: F = I = W, p = 4, m = 8: zb-h1's bubble at most 0.4 of 1F1B's at the same
  // peak stash (the formulas: 1F1B's (p − 1)(F + I + W), ZB-H1's (p − 1)(F + I − W)).
  const std::vector<std::uint32_t> sizes(8, 1);
  const Schedule ofob = one_f_one_b_schedule(4, sizes);
  const Schedule h1 = zb_h1_schedule(4, sizes);
  REQUIRE_OK(validate(h1));
  BOOST_TEST_MESSAGE("bubble 1f1b " << bubble(ofob) << ", zb-h1 " << bubble(h1) << "; peak 1f1b " << peak(ofob)
                                    << ", zb-h1 " << peak(h1));
  BOOST_TEST(bubble(ofob) == 9.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(bubble(h1) == 3.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(bubble(h1) <= 0.4 * bubble(ofob));
  BOOST_TEST(peak(h1) == peak(ofob));
  // GPipe: 1F1B's bubble, holding every micro-batch.
  const Schedule gpipe = gpipe_schedule(4, sizes);
  BOOST_TEST(bubble(gpipe) == 9.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(peak(gpipe) == 8.0);
  BOOST_TEST(peak(ofob) == 4.0);
  // With sends that take time, forwards run ahead (ZB-H2's shape, up to 2p − 1 held)
  // hide them where zb-h1's order waits.
  StageTimes slow_sends{{1, 1, 1, 1}, {2, 2, 2, 2}, {0.5, 0.5, 0.5}};
  const Schedule ahead = zero_bubble_schedule("zb-h2", 4, sizes, 7, slow_sends);
  REQUIRE_OK(validate(ahead));
  BOOST_TEST_MESSAGE("with sends of 0.5: bubble 1f1b " << bubble(ofob, 0.5) << ", zb-h1 " << bubble(h1, 0.5)
                                                       << ", ahead " << bubble(ahead, 0.5) << " (peak " << peak(ahead)
                                                       << ")");
  BOOST_TEST(bubble(ahead, 0.5) < bubble(h1, 0.5));
  BOOST_TEST(peak(ahead) <= 7.0);
  // Every stage and micro-batch count, equal sizes or a first slice: valid, 1F1B's peak
  // on every stage (zb-h1) or the limit's (ahead), never slower than 1F1B.
  for (std::size_t stages : {1, 2, 3, 4, 8})
    for (std::uint32_t m : {1u, 2u, 4u, 7u, 16u}) {
      std::vector<std::uint32_t> mixed(m, 4);
      mixed[0] = 1;
      for (const auto& sized : {std::vector<std::uint32_t>(m, 4), mixed}) {
        const Schedule base = one_f_one_b_schedule(stages, sized);
        const Schedule zb = zb_h1_schedule(stages, sized);
        const Schedule greedy = zero_bubble_schedule("zb-h2", stages, sized, 2 * stages - 1);
        BOOST_TEST_CONTEXT("stages " << stages << ", micro-batches " << m << ", first " << sized[0]) {
          REQUIRE_OK(validate(zb));
          REQUIRE_OK(validate(greedy));
          BOOST_TEST(peak(zb) <= peak(base));
          BOOST_TEST(peak(greedy) <= 4.0 * (2 * stages - 1));
          BOOST_TEST(bubble(zb) <= bubble(base) + 1e-9);
        }
      }
    }
}

BOOST_AUTO_TEST_CASE(chunks_place_virtual_stages_in_a_loop_or_a_v) {
  Schedule loop;
  loop.stages.resize(4);
  loop.chunks = 3;
  Schedule v = loop;
  v.chunks = 2;
  v.shape = ChunkShape::v;
  // Loop: virtual stage c · 4 + d; V: 0 1 2 3 on devices 0 … 3, then 4 5 6 7 on 3 … 0.
  BOOST_TEST(loop.virtual_stage(1, 2) == 9u);
  BOOST_TEST((loop.place_of(9) == ChunkPlace{1, 2}));
  BOOST_TEST(v.virtual_stage(3, 1) == 4u);
  BOOST_TEST(v.virtual_stage(0, 1) == 7u);
  BOOST_TEST((v.place_of(5) == ChunkPlace{2, 1}));
  for (const Schedule* s : {&loop, &v})
    for (std::size_t j = 0; j < s->virtual_stages(); ++j)
      BOOST_TEST(s->virtual_stage(s->place_of(j).stage, s->place_of(j).chunk) == j);
  // Every send leaves its device but the V's turn, from virtual stage 3 to 4 on device 3.
  for (std::size_t j = 0; j + 1 < 8; ++j)
    BOOST_TEST(v.crosses_devices(j) == (j != 3), "boundary " << j);
  for (std::size_t j = 0; j + 1 < loop.virtual_stages(); ++j)
    BOOST_TEST(loop.crosses_devices(j));
}

BOOST_AUTO_TEST_CASE(interleaved_1f1b_divides_1f1bs_bubble_by_its_chunks) {
  // Every shape, micro-batches a multiple of the devices or not: valid, and never a
  // bigger bubble than 1F1B's.
  for (std::size_t stages : {1, 2, 3, 4, 8})
    for (std::uint32_t m : {1u, 2u, 3u, 4u, 7u, 9u, 16u})
      for (std::uint32_t chunks : {2u, 3u}) {
        const std::vector<std::uint32_t> sizes(m, 2);
        const Schedule interleaved = interleaved_one_f_one_b_schedule(stages, sizes, chunks);
        BOOST_TEST_CONTEXT("stages " << stages << ", micro-batches " << m << ", chunks " << chunks) {
          REQUIRE_OK(validate(interleaved));
          BOOST_TEST(interleaved.virtual_stages() == stages * chunks);
          BOOST_TEST(bubble(interleaved) <= bubble(one_f_one_b_schedule(stages, sizes)) + 1e-9);
        }
      }
  // p = 4, m = 8, two chunks: the formula's (p − 1)(F + B) / chunks, half 1F1B's 9.
  const std::vector<std::uint32_t> sizes(8, 1);
  const Schedule interleaved = interleaved_one_f_one_b_schedule(4, sizes, 2);
  BOOST_TEST_MESSAGE("bubble interleaved " << bubble(interleaved) << ", peak " << peak(interleaved));
  BOOST_TEST(bubble(interleaved) == 4.5, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(zbv_nearly_closes_the_bubble_at_1f1bs_memory) {
  // The goal: F = I = W, p = 4, m = 8: ZB-V's bubble at most 0.2 of 1F1B's, at no more
  // than 1F1B's peak stash (in samples of a whole stage).
  const std::vector<std::uint32_t> sizes(8, 1);
  const Schedule ofob = one_f_one_b_schedule(4, sizes);
  const Schedule zbv = zbv_schedule(4, sizes);
  REQUIRE_OK(validate(zbv));
  BOOST_TEST(zbv.chunks == 2u);
  BOOST_TEST((zbv.shape == ChunkShape::v));
  BOOST_TEST_MESSAGE("bubble 1f1b " << bubble(ofob) << ", zbv " << bubble(zbv) << "; peak 1f1b " << peak(ofob)
                                    << ", zbv " << peak(zbv));
  BOOST_TEST(bubble(zbv) <= 0.2 * bubble(ofob));
  BOOST_TEST(peak(zbv) <= peak(ofob));
  // Uneven times (a real model's chunks): still every micro-batch, within the peak.
  std::mt19937 random(7);
  std::uniform_real_distribution<double> ms(0.2, 3.0);
  for (std::size_t stages : {2, 3, 4, 8})
    for (std::uint32_t m : {1u, 3u, 8u, 16u})
      for (int trial = 0; trial < 5; ++trial) {
        StageTimes times;
        for (std::size_t j = 0; j < 2 * stages; ++j) {
          times.forward_ms.push_back(ms(random));
          times.backward_ms.push_back(2 * ms(random));
          if (j + 1 < 2 * stages) times.send_ms.push_back(ms(random) / 4);
        }
        const std::vector<std::uint32_t> equal(m, 2);
        const Schedule v = zbv_schedule(stages, equal, times);
        BOOST_TEST_CONTEXT("stages " << stages << ", micro-batches " << m << ", trial " << trial) {
          REQUIRE_OK(validate(v));
          BOOST_TEST(peak(v) <= peak(one_f_one_b_schedule(stages, equal)));
        }
      }
  for (std::size_t stages : {1, 2, 3, 4, 8})
    for (std::uint32_t m : {1u, 2u, 4u, 7u, 16u}) {
      const std::vector<std::uint32_t> equal(m, 4);
      const Schedule v = zbv_schedule(stages, equal);
      BOOST_TEST_CONTEXT("stages " << stages << ", micro-batches " << m) {
        REQUIRE_OK(validate(v));
        BOOST_TEST(peak(v) <= peak(one_f_one_b_schedule(stages, equal)));
        BOOST_TEST(bubble(v) <= bubble(one_f_one_b_schedule(stages, equal)) + 1e-9);
      }
    }
}

BOOST_AUTO_TEST_CASE(chunks_are_checked_and_written_with_their_shape) {
  const Schedule interleaved = interleaved_one_f_one_b_schedule(2, {1, 1}, 2);
  const std::string text = format_schedule(interleaved);
  BOOST_TEST(contains(text, "chunks = 2\nshape = \"loop\""), text);
  BOOST_TEST(contains(text, "F0@1"), text);
  auto parsed = parse_schedule(text, "interleaved.toml");
  REQUIRE_OK(parsed);
  BOOST_TEST((parsed->stages == interleaved.stages));
  BOOST_TEST(parsed->chunks == 2u);

  // A chunk the device does not have; a V of three chunks; a chunk out of order (chunk
  // 1's forward before chunk 0's on device 0 waits forever for itself).
  Schedule s = interleaved;
  s.stages[0][0].chunk = 2;
  BOOST_TEST(contains(error_of(s), "stage 0 action 0 (F0@2): chunk 2 does not exist (there are 2)"));
  s = interleaved;
  s.shape = ChunkShape::v;
  s.chunks = 3;
  BOOST_TEST(contains(error_of(s), "a V shape has 2 chunks, not 3"));
  auto out_of_order = parse_schedule("micro_batch_sizes = [1]\nchunks = 2\nstages = [\"F0@1 F0 B0@1 B0\", "
                                     "\"F0 F0@1 B0@1 B0\"]\n",
                                     "order.toml");
  BOOST_REQUIRE(!out_of_order.ok());
  BOOST_TEST(contains(out_of_order.error().message, "deadlock: stage 0 waits at F0@1 for F0 of stage 1"),
             out_of_order.error().message);
  auto bad_shape =
      parse_schedule("micro_batch_sizes = [1]\nchunks = 2\nshape = \"w\"\nstages = [\"F0 B0\"]\n", "shape.toml");
  BOOST_REQUIRE(!bad_shape.ok());
  BOOST_TEST(contains(bad_shape.error().message, "shape.toml:3"), bad_shape.error().message);
  BOOST_TEST(contains(bad_shape.error().message, "expected \"loop\" or \"v\""), bad_shape.error().message);

  // A hand-written ZB-V of two devices runs: the V turns on device 1 without a send.
  auto v = parse_schedule("micro_batch_sizes = [1, 1]\nchunks = 2\nshape = \"v\"\nstages = [\n"
                          "  \"F0 F1 F0@1 I0@1 F1@1 I1@1 I0 W0@1 I1 W1@1 W0 W1\",\n"
                          "  \"F0 F0@1 F1 I0@1 F1@1 I0 I1@1 W0@1 I1 W0 W1@1 W1\",\n]\n",
                          "zbv.toml");
  REQUIRE_OK(v);
  BOOST_TEST(v->virtual_stages() == 4u);
}
