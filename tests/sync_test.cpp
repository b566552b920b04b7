// Sync logic without actors or tensors: SDPipe's group scheduler, driven with arrival
// times of the test's own.
#define BOOST_TEST_MODULE sync
#include <boost/test/unit_test.hpp>

#include "sync/group_scheduler.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>

using namespace actorpipe::sync;

namespace {

/// Whether `groups` since the count started connect every pipeline.
struct Connectivity {
  std::vector<std::size_t> part;
  explicit Connectivity(std::size_t n) : part(n) { std::iota(part.begin(), part.end(), std::size_t{0}); }
  std::size_t find(std::size_t p) { return part[p] == p ? p : part[p] = find(part[p]); }
  void add(const Group& g) {
    for (std::size_t i = 1; i < g.size(); ++i)
      part[find(g[i])] = find(g[0]);
  }
  bool connected() {
    for (std::size_t p = 1; p < part.size(); ++p)
      if (find(p) != find(0)) return false;
    return true;
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(groups_never_overlap_and_every_pipeline_is_connected_within_p_rounds) {
  std::mt19937 random(7);
  for (const std::size_t pipelines : {2, 3, 5, 8, 9, 16})
    for (const std::size_t p : {2, 3, 10})
      BOOST_TEST_CONTEXT(pipelines << " pipelines, a forced round every " << p) {
        GroupSchedulerOptions options;
        options.force_every = p;
        GroupScheduler scheduler(pipelines, options);
        // Each pipeline computes for 1–5 ms between asks, a tenth of the time 20 ms more.
        std::uniform_real_distribution<double> compute(1, 5), coin(0, 1);
        std::vector<double> next(pipelines);
        for (double& t : next)
          t = compute(random);
        std::vector<bool> waiting(pipelines, false);
        Connectivity connectivity(pipelines);
        std::size_t since_connected = 0, rounds = 0, longest = 0;
        double now = 0;
        while (rounds < 400) {
          // The next event: a pipeline asking, or the round's deadline.
          double event = scheduler.deadline().value_or(1e18);
          for (std::size_t q = 0; q < pipelines; ++q)
            if (!waiting[q]) event = std::min(event, next[q]);
          BOOST_REQUIRE_LT(event, 1e18); // someone always has something to do: no deadlock
          now = event;
          for (std::size_t q = 0; q < pipelines; ++q)
            if (!waiting[q] && next[q] <= now) {
              scheduler.arrive(q, now);
              waiting[q] = true;
            }
          const bool forced = scheduler.forcing();
          const std::vector<Group> groups = scheduler.close(now);
          if (groups.empty()) continue;
          ++rounds;
          std::set<std::size_t> released;
          for (const Group& g : groups) {
            BOOST_TEST(!g.empty());
            for (const std::size_t q : g) {
              BOOST_TEST(waiting[q], "pipeline " << q << " released without asking");
              BOOST_TEST(released.insert(q).second, "pipeline " << q << " in two groups");
            }
            connectivity.add(g);
          }
          // More askers than pairs_above pair up (a triple for the odd one out).
          if (!forced && released.size() > options.pairs_above)
            for (const Group& g : groups)
              BOOST_TEST((g.size() == 2u || g.size() == 3u));
          // Everyone who asked is let go by the close.
          for (std::size_t q = 0; q < pipelines; ++q)
            BOOST_TEST(waiting[q] == (released.count(q) == 1));
          for (const std::size_t q : released) {
            waiting[q] = false;
            next[q] = now + compute(random) + (coin(random) < 0.1 ? 20 : 0);
          }
          ++since_connected;
          longest = std::max(longest, since_connected);
          if (connectivity.connected()) {
            connectivity = Connectivity(pipelines);
            since_connected = 0;
          }
          BOOST_TEST_REQUIRE(since_connected < p, "round " << rounds << ": not connected for " << since_connected);
        }
        BOOST_TEST(longest <= p);
        BOOST_TEST(scheduler.window_ms() >= options.min_window_ms);
        BOOST_TEST(scheduler.window_ms() <= options.max_window_ms);
      }
}

BOOST_AUTO_TEST_CASE(the_window_grows_for_a_lone_asker_and_shrinks_for_a_group) {
  GroupScheduler scheduler(4); // window 1 ms, forced every 10 rounds
  scheduler.arrive(2, 0.0);
  BOOST_TEST(scheduler.deadline().value() == 1.0);
  BOOST_TEST(scheduler.close(0.5).empty()); // not yet
  BOOST_TEST(scheduler.close(1.0).empty()); // alone: the window doubles and stays open
  BOOST_TEST(scheduler.window_ms() == 2.0);
  BOOST_TEST(scheduler.deadline().value() == 2.0);
  scheduler.arrive(0, 1.5);
  const auto groups = scheduler.close(2.0);
  BOOST_REQUIRE_EQUAL(groups.size(), 1u);
  BOOST_TEST(groups[0] == (Group{2, 0}), boost::test_tools::per_element());
  BOOST_TEST(scheduler.window_ms() == 1.8);
  // Alone at the largest window: let go alone, a local step.
  GroupSchedulerOptions small;
  small.max_window_ms = 1;
  GroupScheduler lone(3, small);
  lone.arrive(1, 0);
  const auto alone = lone.close(1);
  BOOST_REQUIRE_EQUAL(alone.size(), 1u);
  BOOST_TEST(alone[0] == (Group{1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(above_eight_askers_pair_up_and_a_forced_round_waits_for_everyone) {
  GroupScheduler many(9);
  for (std::size_t p = 0; p < 9; ++p)
    many.arrive(8 - p, 0.1 * static_cast<double>(p));
  const auto pairs = many.close(5);
  BOOST_REQUIRE_EQUAL(pairs.size(), 4u); // in arrival order; the odd one out joins the last pair
  BOOST_TEST(pairs[0] == (Group{8, 7}), boost::test_tools::per_element());
  BOOST_TEST(pairs[3] == (Group{2, 1, 0}), boost::test_tools::per_element());

  GroupSchedulerOptions every_other;
  every_other.force_every = 2;
  GroupScheduler forced(4, every_other);
  forced.arrive(0, 0);
  forced.arrive(1, 0);
  BOOST_TEST(forced.close(1).size() == 1u); // {0, 1}: 2 and 3 are still apart
  BOOST_TEST(forced.forcing());
  forced.arrive(2, 2);
  forced.arrive(3, 2);
  BOOST_TEST(!forced.deadline()); // a forced round waits for every pipeline
  BOOST_TEST(forced.close(100).empty());
  forced.arrive(0, 3);
  forced.arrive(1, 3);
  const auto joined = forced.close(3);
  // One of each part apart: {0, 1}, {2}, {3}.
  BOOST_REQUIRE(!joined.empty());
  BOOST_TEST(joined[0] == (Group{0, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(!forced.forcing()); // connected: the count starts afresh

  BOOST_CHECK_THROW(forced.arrive(9, 4), std::logic_error);
  forced.arrive(1, 4);
  BOOST_CHECK_THROW(forced.arrive(1, 4), std::logic_error);
}
