// Sync logic without actors or tensors: SDPipe's group scheduler, driven with arrival
// times of the test's own, and the parameter server's gate. The group-scheduler actor
// around the first is soaked with random arrivals in actor_protocol_test; runs with
// both are soaked in runtime_test.
#define BOOST_TEST_MODULE sync
#include <boost/test/unit_test.hpp>

#include "sync/group_scheduler.hpp"
#include "sync/server_gate.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>

using namespace actorpipe::sync;
using actorpipe::GroupScheduling;

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
  GroupScheduling small;
  small.max_window_ms = 1;
  GroupScheduler lone(3, small);
  lone.arrive(1, 0);
  const auto alone = lone.close(1);
  BOOST_REQUIRE_EQUAL(alone.size(), 1u);
  BOOST_TEST(alone[0] == (Group{1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_window_closes_at_once_when_no_one_else_can_come) {
  GroupScheduler scheduler(3);
  scheduler.arrive(1, 0.0);
  scheduler.arrive(0, 0.2);
  BOOST_TEST(scheduler.deadline().value() == 1.0); // 2 may still come
  scheduler.arrive(2, 0.4);
  BOOST_TEST(scheduler.deadline().value() == 0.0); // everyone is here
  const auto all = scheduler.close(0.4);
  BOOST_REQUIRE_EQUAL(all.size(), 1u);
  BOOST_TEST(all[0] == (Group{1, 0, 2}), boost::test_tools::per_element());
  BOOST_TEST(scheduler.window_ms() == 0.9);
  // Alone with everyone else away: let go alone at once, the window as it was.
  scheduler.set_away(0, true);
  scheduler.set_away(2, true);
  scheduler.arrive(1, 5.0);
  BOOST_TEST(scheduler.deadline().value() == 5.0);
  const auto alone = scheduler.close(5.0);
  BOOST_REQUIRE_EQUAL(alone.size(), 1u);
  BOOST_TEST(alone[0] == (Group{1}), boost::test_tools::per_element());
  BOOST_TEST(scheduler.window_ms() == 0.9);
}

BOOST_AUTO_TEST_CASE(above_eight_askers_pair_up_and_a_forced_round_waits_for_an_asker_of_every_part) {
  GroupScheduler many(9);
  for (std::size_t p = 0; p < 9; ++p)
    many.arrive(8 - p, 0.1 * static_cast<double>(p));
  const auto pairs = many.close(5);
  BOOST_REQUIRE_EQUAL(pairs.size(), 4u); // in arrival order; the odd one out joins the last pair
  BOOST_TEST(pairs[0] == (Group{8, 7}), boost::test_tools::per_element());
  BOOST_TEST(pairs[3] == (Group{2, 1, 0}), boost::test_tools::per_element());

  GroupScheduling every_other;
  every_other.force_every = 2;
  GroupScheduler forced(4, every_other);
  forced.arrive(0, 0);
  forced.arrive(1, 0);
  BOOST_TEST(forced.close(1).size() == 1u); // {0, 1}: 2 and 3 are still apart
  BOOST_TEST(forced.forcing());
  forced.arrive(2, 2);
  forced.arrive(1, 2);
  BOOST_TEST(!forced.deadline()); // a forced round waits for an asker of {3} too
  BOOST_TEST(forced.close(100).empty());
  forced.set_away(3, true); // 3 cannot ask for now: not waited for
  forced.set_away(0, true);
  const auto joined = forced.close(100);
  // One of each part apart among the askers, {1} of {0, 1} and {2}: they average.
  BOOST_REQUIRE_EQUAL(joined.size(), 1u);
  BOOST_TEST(joined[0] == (Group{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(forced.forcing()); // 3 was away: still apart, the next round is forced too
  forced.set_away(0, false);
  forced.arrive(3, 101);
  BOOST_TEST(!forced.deadline()); // none of {0, 1, 2} asks yet
  forced.arrive(0, 102);
  BOOST_TEST(forced.deadline().value() == 101.0); // 1 and 2 need not ask: 0 is of their part
  const auto all = forced.close(102);
  BOOST_REQUIRE_EQUAL(all.size(), 1u); // 0 stands for {0, 1, 2}, 3 for itself
  BOOST_TEST(all[0] == (Group{0, 3}), boost::test_tools::per_element());
  BOOST_TEST(!forced.forcing()); // connected: the count starts afresh

  BOOST_CHECK_THROW(forced.arrive(9, 103), std::logic_error);
  forced.arrive(1, 103);
  BOOST_CHECK_THROW(forced.arrive(1, 103), std::logic_error);
  GroupScheduling inverted;
  inverted.min_window_ms = 2;
  BOOST_CHECK_THROW(GroupScheduler(2, inverted), std::invalid_argument);
}

namespace {
using Pipelines = std::vector<std::size_t>;
}

BOOST_AUTO_TEST_CASE(a_synchronous_server_steps_once_on_every_present_pipelines_push) {
  ServerGate gate(3, 0);
  ServerDecision d = gate.push(1);
  BOOST_TEST(d.apply.empty());
  BOOST_TEST(d.answer.empty());
  BOOST_CHECK_THROW(gate.push(1), std::logic_error); // unanswered yet
  d = gate.push(0);
  BOOST_TEST(d.apply.empty());
  d = gate.push(2);
  BOOST_TEST(d.apply == (Pipelines{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(d.answer == (Pipelines{0, 1, 2}), boost::test_tools::per_element());
  // A pipeline with no work is not waited for; the round closes when it goes.
  d = gate.push(0);
  BOOST_TEST(d.apply.empty());
  d = gate.set_away(2, true);
  BOOST_TEST(d.apply.empty()); // pipeline 1 is still to push
  d = gate.push(1);
  BOOST_TEST(d.apply == (Pipelines{0, 1}), boost::test_tools::per_element());
  d = gate.push(0);
  d = gate.set_away(2, false); // work again: the round waits for it too
  d = gate.set_away(1, true);
  BOOST_TEST(d.apply.empty());
  d = gate.push(2);
  BOOST_TEST(d.apply == (Pipelines{0, 2}), boost::test_tools::per_element());
  BOOST_TEST(d.answer == (Pipelines{0, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_stale_synchronous_server_holds_a_pipeline_more_than_its_bound_ahead) {
  ServerGate gate(3, 2);
  // Each push is applied at once; pipeline 0 runs ahead of 1 and 2, which have none.
  for (std::uint64_t k = 1; k <= 2; ++k) {
    const ServerDecision d = gate.push(0);
    BOOST_TEST(d.apply == (Pipelines{0}), boost::test_tools::per_element());
    BOOST_TEST(d.answer == (Pipelines{0}), boost::test_tools::per_element());
  }
  ServerDecision d = gate.push(0); // three ahead of the slowest: held
  BOOST_TEST(d.apply == (Pipelines{0}), boost::test_tools::per_element());
  BOOST_TEST(d.answer.empty());
  BOOST_TEST(gate.waiting(0));
  d = gate.push(1);
  BOOST_TEST(d.answer == (Pipelines{1}), boost::test_tools::per_element()); // 2 is still at 0
  d = gate.push(2);
  BOOST_TEST(d.answer == (Pipelines{0, 2}), boost::test_tools::per_element());
  BOOST_TEST(gate.pushes(0) == 3u);
  // A pipeline with no work holds no one back, and comes back level with the slowest.
  BOOST_TEST(gate.push(1).answer == (Pipelines{1}), boost::test_tools::per_element());
  BOOST_TEST(gate.push(1).answer == (Pipelines{1}), boost::test_tools::per_element());
  d = gate.push(0); // 4 against 2's 1
  BOOST_TEST(d.answer.empty());
  d = gate.set_away(2, true);
  BOOST_TEST(d.answer == (Pipelines{0}), boost::test_tools::per_element());
  gate.set_away(2, false);
  BOOST_TEST(gate.pushes(2) == gate.pushes(1));
  BOOST_TEST(gate.push(2).answer == (Pipelines{2}), boost::test_tools::per_element());
  BOOST_CHECK_THROW(gate.push(3), std::logic_error);
  BOOST_CHECK_THROW(ServerGate(0, 1), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(an_unbounded_server_answers_every_push_at_once) {
  ServerGate gate(2, actorpipe::SyncRound::unbounded);
  for (int k = 0; k < 1000; ++k)
    BOOST_TEST_REQUIRE(gate.push(0).answer == (Pipelines{0}), boost::test_tools::per_element());
}
