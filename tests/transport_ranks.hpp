#pragma once

/// Ranks of a tensor transport as threads of one process, each with its own transport,
/// talking over loopback TCP (and NCCL between GPUs) as processes would: what the
/// transport suites run their ranks as.

#include "transport/tensor_transport.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace actorpipe::test {

/// `world` ranks, joined: rank 0 hosts the store on a free port, the others connect,
/// their keys under `key_prefix`. A failure fails the test case.
std::vector<std::unique_ptr<transport::TensorTransport>> joined(std::size_t world, std::size_t compute_threads = 0,
                                                                bool follows_others = false,
                                                                const std::string& key_prefix = "job");

/// Runs `work(rank)` for every rank at once, each on a thread of its own.
void each_rank(std::size_t world, const std::function<void(std::size_t)>& work);

} // namespace actorpipe::test
