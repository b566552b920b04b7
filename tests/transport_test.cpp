// Tensors between ranks through c10d (transport/tensor_transport.hpp). The ranks here
// are threads of one process, each with its own transport, talking over loopback TCP
// as processes would.
#define BOOST_TEST_MODULE transport
#include <boost/test/unit_test.hpp>

#include "test_support.hpp"
#include "launch/job_token.hpp"
#include "transport_ranks.hpp"
#include "train/tensor_box.hpp"
#include "transport/tensor_transport.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <filesystem>
#include <functional>
#include <sstream>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>

#include <sched.h>

using namespace actorpipe;
using namespace actorpipe::transport;
using test::each_rank;
using test::joined;

namespace {

/// How many of this process's threads run under SCHED_IDLE.
std::size_t idle_threads() {
  std::size_t idle = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task"))
    if (::sched_getscheduler(std::stoi(task.path().filename().string())) == SCHED_IDLE) ++idle;
  return idle;
}

} // namespace

namespace {

/// The local addresses (as /proc/net/tcp{,6} write them, in hex) of the sockets that
/// listen on `port`.
std::vector<std::string> listening_on(std::uint16_t port) {
  std::vector<std::string> addresses;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const auto colon = local.rfind(':');
      if (state == "0A" && std::stoul(local.substr(colon + 1), nullptr, 16) == port)
        addresses.push_back(local.substr(0, colon));
    }
  }
  return addresses;
}

} // namespace

BOOST_AUTO_TEST_CASE(the_store_listens_only_where_it_is_told) {
  // c10d's store listened on every interface ("*:PORT"): anyone who could reach the
  // machine could read and write a job's keys. It listens where the control plane does.
  TransportOptions options;
  options.store = {"127.0.0.1", 0};
  auto store = TensorTransport::open(options);
  REQUIRE_OK(store);
  const std::vector<std::string> addresses = listening_on((*store)->store_port());
  BOOST_TEST(addresses == std::vector<std::string>{"0100007F"}, boost::test_tools::per_element()); // 127.0.0.1
  // An address that is not this machine's cannot be listened on: said at once, naming it.
  options.store = {"not an address", 0};
  auto nowhere = TensorTransport::open(options);
  BOOST_REQUIRE(!nowhere.ok());
  BOOST_TEST(test::contains(nowhere.error().message, "the tensor store at not an address:0: cannot listen: "),
             nowhere.error().message);
}

BOOST_AUTO_TEST_CASE(a_client_without_the_jobs_token_can_name_none_of_the_jobs_keys_in_the_store) {
  const std::string token = launch::new_token();
  auto ranks = joined(2, 0, false, launch::store_prefix(token));
  // A client that reaches the port: c10d's store admits it. It knows the names of the
  // keys (they are in the source), not the prefix the token gives them.
  c10d::TCPStoreOptions client;
  client.port = ranks[0]->store_port();
  client.isServer = false;
  client.waitWorkers = false;
  client.timeout = std::chrono::seconds(5);
  auto intruder = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", client);
  c10d::PrefixStore with_token(launch::store_prefix(token), intruder);
  BOOST_REQUIRE(with_token.check({"gpu-count/0", "gpu-count/1"})); // the keys the intruder is after
  const std::vector<std::uint8_t> value = with_token.get("gpu-count/1");
  for (const std::string& prefix : {std::string(), std::string("job"), launch::store_prefix(launch::new_token())}) {
    BOOST_TEST_CONTEXT("prefix '" << prefix << "'") {
      c10d::PrefixStore guess(prefix, intruder);
      BOOST_TEST(!guess.check({"gpu-count/0"}));
      BOOST_TEST(!intruder->check({prefix + "gpu-count/0"}));
      guess.set("gpu-count/1", std::vector<std::uint8_t>{'9', '9'}); // lands beside the job's key, not on it
    }
  }
  BOOST_TEST(with_token.get("gpu-count/1") == value, boost::test_tools::per_element());
  BOOST_TEST(launch::store_prefix(token) != launch::store_prefix(token + "x"));
  BOOST_TEST(launch::store_prefix(token).size() == 36u); // "job-" and 128 bits
}

BOOST_AUTO_TEST_CASE(tensors_on_the_cpu_keep_to_gloo_whatever_link_they_are_sent_on) {
  // A link between stages on GPUs (here none: no rank has a GPU it could open it on)
  // carries only tensors on GPUs through NCCL; a tensor on the CPU goes through Gloo
  // under its tag, and the ticket says so.
  auto ranks = joined(2);
  const std::vector<GpuLink> links{{1, 0, 1, 0, 0}, {2, 1, 0, 0, 0}};
  std::vector<std::size_t> opened(2, 9);
  each_rank(2, [&](std::size_t r) {
    auto n = ranks[r]->open_gpu_links(links);
    REQUIRE_OK(n);
    opened[r] = *n;
  });
  if (torch::cuda::is_available()) return; // transport_cuda covers a machine with GPUs
  BOOST_TEST(opened[0] == 0u);
  BOOST_TEST(opened[1] == 0u);
  const torch::Tensor sent = torch::arange(10, torch::kFloat);
  const TensorTicket ticket = ranks[0]->send(train::wrap(sent), 1, 1);
  BOOST_TEST(ticket.link == 0u);
  BOOST_TEST(torch::equal(ranks[1]->receive(ticket)->tensor, sent));
  // A group given its members' GPUs on a machine without them sums through Gloo.
  std::vector<bool> nccl(2, true);
  each_rank(2, [&](std::size_t r) {
    auto group = ranks[r]->group("cpu", {0, 1}, {0, 1});
    nccl[r] = TensorTransport::uses_nccl(*group);
    ranks[r]->all_reduce_sum(*group, {train::wrap(torch::ones({3}))});
  });
  BOOST_TEST(!nccl[0]);
  BOOST_TEST(!nccl[1]);
}

BOOST_AUTO_TEST_CASE(a_link_has_one_number_for_each_direction_of_each_pair_of_neighbours) {
  std::set<std::uint32_t> seen;
  const std::size_t pipelines = 3, stages = 4;
  for (std::size_t p = 0; p < pipelines; ++p)
    for (std::size_t s = 0; s + 1 < stages; ++s) {
      const std::uint32_t forward = TensorTransport::link_id(p, stages, s, s + 1);
      const std::uint32_t backward = TensorTransport::link_id(p, stages, s + 1, s);
      BOOST_TEST(forward != 0u);
      BOOST_TEST(seen.insert(forward).second);
      BOOST_TEST(seen.insert(backward).second);
    }
  BOOST_TEST(seen.size() == pipelines * (stages - 1) * 2);
}

BOOST_AUTO_TEST_CASE(a_sent_tensor_arrives_whole_with_its_shape_and_type) {
  auto ranks = joined(3);
  const torch::Tensor matrix = torch::arange(12, torch::kFloat).reshape({3, 4});
  const torch::Tensor indices = torch::tensor({7, -1, 3}, torch::kLong);
  TensorTicket to_one = ranks[0]->send(train::wrap(matrix), 1);
  TensorTicket to_two = ranks[0]->send(train::wrap(matrix.t()), 2); // not contiguous
  TensorTicket back = ranks[1]->send(train::wrap(indices), 0);
  BOOST_TEST(to_one.from == 0u);
  BOOST_TEST(to_one.shape == (std::vector<std::int64_t>{3, 4}), boost::test_tools::per_element());
  BOOST_TEST(to_two.shape == (std::vector<std::int64_t>{4, 3}), boost::test_tools::per_element());

  train::Payload one, two, zero;
  each_rank(3, [&](std::size_t r) {
    if (r == 1) one = ranks[1]->receive(to_one);
    if (r == 2) two = ranks[2]->receive(to_two);
    if (r == 0) zero = ranks[0]->receive(back);
  });
  BOOST_TEST(torch::equal(one->tensor, matrix));
  BOOST_TEST(torch::equal(two->tensor, matrix.t()));
  BOOST_TEST(zero->tensor.scalar_type() == torch::kLong);
  BOOST_TEST(torch::equal(zero->tensor, indices));
}

BOOST_AUTO_TEST_CASE(sends_never_wait_for_their_receiver_and_tickets_find_their_own_bytes) {
  auto ranks = joined(2);
  constexpr int count = 40;
  // Both ranks send all before either receives (as two stages sending each other
  // activations and gradients would); each then takes its tensors newest first.
  std::vector<std::vector<TensorTicket>> tickets(2);
  each_rank(2, [&](std::size_t r) {
    for (int i = 0; i < count; ++i)
      tickets[r].push_back(ranks[r]->send(train::wrap(torch::full({16384}, float(1000 * r + i))), 1 - r));
  });
  std::vector<std::vector<float>> firsts(2);
  each_rank(2, [&](std::size_t r) {
    for (int i = count - 1; i >= 0; --i)
      firsts[r].push_back(ranks[r]->receive(tickets[1 - r][i])->tensor[5].item<float>());
  });
  for (std::size_t r = 0; r < 2; ++r)
    for (int i = 0; i < count; ++i)
      BOOST_TEST(firsts[r][i] == float(1000 * (1 - r) + (count - 1 - i)));
}

BOOST_AUTO_TEST_CASE(a_group_sums_over_its_members_only) {
  auto ranks = joined(3);
  // Ranks 0 and 2 hold a stage's replicas; rank 1 is not in their group.
  std::vector<std::vector<train::Payload>> held(3);
  each_rank(3, [&](std::size_t r) {
    if (r == 1) return;
    auto group = ranks[r]->group("stage-0", {0, 2});
    held[r] = {train::wrap(torch::full({2, 3}, float(r + 1))), train::wrap(torch::full({5}, float(10 * (r + 1))))};
    ranks[r]->all_reduce_sum(*group, held[r]);
  });
  for (std::size_t r : {0u, 2u}) {
    BOOST_TEST(torch::equal(held[r][0]->tensor, torch::full({2, 3}, 4.0f)));
    BOOST_TEST(torch::equal(held[r][1]->tensor, torch::full({5}, 40.0f)));
  }
}

BOOST_AUTO_TEST_CASE(a_group_sums_each_element_type_one_collective_after_another_and_names_one_it_cannot) {
  auto ranks = joined(2);
  const std::vector<torch::ScalarType> types{torch::kFloat32, torch::kFloat64, torch::kFloat16,
                                             torch::kInt64,   torch::kInt32,   torch::kUInt8};
  std::vector<std::vector<torch::Tensor>> held(2);
  std::vector<torch::Tensor> large(2);
  std::vector<std::string> refused(2);
  each_rank(2, [&](std::size_t r) {
    auto group = ranks[r]->group("stage-0", {0, 1});
    for (const torch::ScalarType type : types) {
      held[r].push_back(torch::arange(7, torch::kFloat64).add(double(10 * r)).to(type));
      ranks[r]->all_reduce_sum(*group, {train::wrap(held[r].back())});
    }
    // More than a few of Gloo's segments, each element its own value.
    large[r] = torch::arange(1 << 20, torch::kFloat32).mul(float(r + 1));
    ranks[r]->all_reduce_sum(*group, {train::wrap(large[r])});
    try {
      ranks[r]->all_reduce_sum(*group, {train::wrap(torch::ones({3}, torch::kBool))});
    } catch (const std::runtime_error& e) {
      refused[r] = e.what();
    }
  });
  const torch::Tensor sum = torch::arange(7, torch::kFloat64).mul(2).add(10.0);
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t t = 0; t < types.size(); ++t) {
      BOOST_TEST(held[r][t].scalar_type() == types[t]);
      BOOST_TEST(torch::equal(held[r][t].to(torch::kFloat64), sum), "type " << c10::toString(types[t]));
    }
    BOOST_TEST(torch::equal(large[r], torch::arange(1 << 20, torch::kFloat32).mul(3.0f)));
    BOOST_TEST(refused[r].find("Bool") != std::string::npos, refused[r]);
    BOOST_TEST(refused[r].find("stage-0") != std::string::npos, refused[r]);
  }
}

BOOST_AUTO_TEST_CASE(groups_of_two_three_and_four_sum_every_element_whichever_way_gloo_goes) {
  // 2 and 4 members halve and double, 3 go round the ring; an odd length leaves the
  // chunks uneven.
  for (const std::size_t members : {2u, 3u, 4u})
    BOOST_TEST_CONTEXT(members << " members") {
      auto ranks = joined(members);
      const std::int64_t length = (1 << 18) + 3;
      std::vector<torch::Tensor> held(members);
      each_rank(members, [&](std::size_t r) {
        std::vector<std::size_t> all(members);
        std::iota(all.begin(), all.end(), std::size_t{0});
        auto group = ranks[r]->group("stage-0", all);
        held[r] = torch::arange(length, torch::kFloat64).mul(double(r + 1));
        ranks[r]->all_reduce_sum(*group, {train::wrap(held[r])});
      });
      const double factor = static_cast<double>(members * (members + 1) / 2);
      for (std::size_t r = 0; r < members; ++r)
        BOOST_TEST(torch::equal(held[r], torch::arange(length, torch::kFloat64).mul(factor)), "rank " << r);
    }
}

BOOST_AUTO_TEST_CASE(a_broadcast_gives_every_member_the_roots_tensors_of_any_type) {
  auto ranks = joined(3);
  // Member 1 of the group (rank 2) is the root: two float tensors apart, then an
  // int64 one, then a large float64 one alone.
  std::vector<std::vector<torch::Tensor>> held(3);
  std::vector<std::string> refused(3);
  each_rank(3, [&](std::size_t r) {
    if (r == 1) return;
    auto group = ranks[r]->group("stage-0", {0, 2});
    const std::int64_t mark = r == 2 ? 7 : -1;
    held[r] = {torch::full({2, 3}, float(mark)), torch::full({5}, float(mark)),
               torch::full({4}, (std::int64_t{1} << 40) + mark, torch::kInt64),
               torch::arange(1 << 16, torch::kFloat64).mul(double(mark))};
    ranks[r]->broadcast(*group, 1, {train::wrap(held[r][0]), train::wrap(held[r][1])});
    ranks[r]->broadcast(*group, 1, {train::wrap(held[r][2])});
    ranks[r]->broadcast(*group, 1, {train::wrap(held[r][3])});
    try {
      ranks[r]->broadcast(*group, 2, {train::wrap(held[r][0])});
    } catch (const std::logic_error& e) {
      refused[r] = e.what();
    }
  });
  for (std::size_t r : {0u, 2u}) {
    BOOST_TEST(torch::equal(held[r][0], torch::full({2, 3}, 7.0f)), "rank " << r);
    BOOST_TEST(torch::equal(held[r][1], torch::full({5}, 7.0f)), "rank " << r);
    BOOST_TEST(torch::equal(held[r][2], torch::full({4}, (std::int64_t{1} << 40) + 7, torch::kInt64)), "rank " << r);
    BOOST_TEST(torch::equal(held[r][3], torch::arange(1 << 16, torch::kFloat64).mul(7.0)), "rank " << r);
    BOOST_TEST(refused[r].find("no member 2") != std::string::npos, refused[r]);
  }
}

BOOST_AUTO_TEST_CASE(tensors_that_lie_one_after_another_in_one_buffer_are_summed_there) {
  // A stage's gradient buckets: views of one buffer, in order, go as that buffer.
  const torch::Tensor buffer = torch::arange(11, torch::kFloat32);
  const std::vector<train::Payload> in_order{train::wrap(buffer.narrow(0, 0, 6).view({2, 3})),
                                             train::wrap(buffer.narrow(0, 6, 5))};
  const train::Payload whole = TensorTransport::as_one_buffer(in_order);
  BOOST_REQUIRE(whole);
  BOOST_TEST(whole->tensor.data_ptr() == buffer.data_ptr());
  BOOST_TEST(whole->tensor.numel() == 11);
  const std::vector<train::Payload> later{train::wrap(buffer.narrow(0, 2, 3)), train::wrap(buffer.narrow(0, 5, 6))};
  BOOST_TEST(TensorTransport::as_one_buffer(later)->tensor.data_ptr() == buffer.narrow(0, 2, 1).data_ptr());
  // Out of order, with a gap, strided, or apart: copied through a buffer of the group's.
  BOOST_TEST(!TensorTransport::as_one_buffer({in_order[1], in_order[0]}));
  BOOST_TEST(!TensorTransport::as_one_buffer({train::wrap(buffer.narrow(0, 0, 5)), in_order[1]}));
  BOOST_TEST(!TensorTransport::as_one_buffer({train::wrap(buffer.narrow(0, 0, 6).view({2, 3}).t())}));
  BOOST_TEST(!TensorTransport::as_one_buffer({in_order[0], train::wrap(buffer.narrow(0, 6, 5).clone())}));

  auto ranks = joined(2);
  std::vector<torch::Tensor> buffers(2);
  each_rank(2, [&](std::size_t r) {
    auto group = ranks[r]->group("stage-0", {0, 1});
    buffers[r] = torch::full({11}, float(r + 1));
    ranks[r]->all_reduce_sum(
        *group, {train::wrap(buffers[r].narrow(0, 0, 6).view({2, 3})), train::wrap(buffers[r].narrow(0, 6, 5))});
  });
  for (const torch::Tensor& summed : buffers)
    BOOST_TEST(torch::equal(summed, torch::full({11}, 3.0f)));
}

BOOST_AUTO_TEST_CASE(receives_posted_ahead_are_taken_in_any_order_and_one_never_taken_is_let_go) {
  auto ranks = joined(2);
  std::vector<TensorTicket> tickets;
  for (const float value : {1.0f, 2.0f, 3.0f})
    tickets.push_back(ranks[0]->send(train::wrap(torch::full({1000}, value)), 1));
  auto first = ranks[1]->post_receive(tickets[0]);
  auto second = ranks[1]->post_receive(tickets[1]);
  auto never = ranks[1]->post_receive(tickets[2]); // its receiver gave up: the run ended
  BOOST_TEST(torch::equal(ranks[1]->take(*second)->tensor, torch::full({1000}, 2.0f)));
  BOOST_TEST(ranks[1]->landed(*second));
  BOOST_TEST(torch::equal(ranks[1]->take(*first)->tensor, torch::full({1000}, 1.0f)));
  never.reset();
  ranks[0]->flush(); // its bytes land in the buffer the transport kept
  ranks.clear();
}

BOOST_AUTO_TEST_CASE(a_rank_whose_peers_never_come_fails_to_join_in_one_line) {
  TransportOptions options;
  options.store = {"127.0.0.1", 0};
  options.world = 2;
  options.timeout = std::chrono::seconds(1);
  auto alone = TensorTransport::open(options);
  REQUIRE_OK(alone);
  const Status status = (*alone)->join();
  BOOST_REQUIRE(!status.ok());
  const std::string& why = status.error().message;
  BOOST_TEST(test::contains(why, "rank 0 could not join the others: "), why);
  // The store's own reason, without the C++ backtrace LibTorch appends to it.
  BOOST_TEST(why.size() > why.find("others: ") + 8, why);
  BOOST_TEST(why.find('\n') == std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(gloos_loop_yields_to_compute_only_where_stages_crowd_the_cores_and_wait_for_each_other) {
  const std::size_t before = idle_threads();
  {
    auto ranks = joined(2);
    BOOST_TEST(idle_threads() == before);
    BOOST_TEST(!ranks[0]->loop_yields());
  }
  {
    // Copies that follow the others' moves take their bytes in while the stages compute.
    auto ranks = joined(2, 1000, true);
    BOOST_TEST(idle_threads() == before);
    BOOST_TEST(!ranks[1]->loop_yields());
  }
  auto ranks = joined(2, 1000);             // a thousand stage threads: more than any machine's cores
  BOOST_TEST(idle_threads() == before + 2); // one loop per rank
  BOOST_TEST(ranks[0]->loop_yields());
  BOOST_TEST(ranks[1]->loop_yields());
}

BOOST_AUTO_TEST_CASE(a_rank_outside_the_world_is_refused) {
  TransportOptions options;
  options.rank = 2;
  options.world = 2;
  auto refused = TensorTransport::open(options);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(test::contains(refused.error().message, "rank 2 is not one of 2"));
}
