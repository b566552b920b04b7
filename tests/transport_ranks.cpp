#include "transport_ranks.hpp"

#include "test_support.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>

namespace actorpipe::test {

using transport::TensorTransport;
using transport::TransportOptions;

std::vector<std::unique_ptr<TensorTransport>> joined(std::size_t world, std::size_t compute_threads,
                                                     bool follows_others, const std::string& key_prefix) {
  std::vector<std::unique_ptr<TensorTransport>> ranks(world);
  TransportOptions options;
  options.key_prefix = key_prefix;
  options.compute_threads = compute_threads;
  options.follows_others = follows_others;
  options.store = {"127.0.0.1", 0};
  options.world = world;
  options.timeout = std::chrono::seconds(30);
  auto first = TensorTransport::open(options);
  REQUIRE_OK(first);
  ranks[0] = std::move(first.value());
  options.store.port = ranks[0]->store_port();
  BOOST_REQUIRE(options.store.port != 0);
  for (std::size_t r = 1; r < world; ++r) {
    options.rank = r;
    auto next = TensorTransport::open(options);
    REQUIRE_OK(next);
    ranks[r] = std::move(next.value());
  }
  // join() returns once all have joined: each on a thread of its own.
  std::vector<std::thread> threads;
  std::vector<std::string> errors(world);
  for (std::size_t r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      if (auto status = ranks[r]->join(); !status) errors[r] = status.error().message;
    });
  for (auto& thread : threads)
    thread.join();
  for (const auto& error : errors)
    BOOST_REQUIRE_MESSAGE(error.empty(), error);
  return ranks;
}

void each_rank(std::size_t world, const std::function<void(std::size_t)>& work) {
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < world; ++r)
    threads.emplace_back(work, r);
  for (auto& thread : threads)
    thread.join();
}

} // namespace actorpipe::test
