/// Single-process LibTorch and PyTorch eager runners of the runtime bench.

#include "baselines.hpp"

#include "train/single_process.hpp"

#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

namespace actorpipe::bench {

namespace {

/// The times (ms) of `steps` steps after the warm-up ones; `after_step` runs inside each.
std::vector<double> timed_steps(train::SingleProcessTraining& training, std::uint64_t steps,
                                const std::function<void()>& after_step = {}) {
  std::vector<double> times;
  for (std::uint64_t k = 0; k < warmup_steps + steps; ++k) {
    const auto start = std::chrono::steady_clock::now();
    training.step();
    if (after_step) after_step();
    if (k >= warmup_steps)
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return times;
}

} // namespace

Rate libtorch(const JobSpec& job, int threads, std::uint64_t steps) {
  torch::set_num_threads(threads);
  auto training = need(train::SingleProcessTraining::open(job));
  const std::vector<double> times = timed_steps(*training, steps);
  torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return rate_of(times, job.train.batch_size);
}

Rate libtorch_side_by_side(const JobSpec& job, unsigned copies, std::uint64_t steps, bool lockstep) {
  JobSpec copy_job = job;
  if (lockstep) copy_job.train.batch_size = job.train.batch_size / copies;
  std::vector<std::unique_ptr<train::SingleProcessTraining>> trainings;
  for (unsigned c = 0; c < copies; ++c)
    trainings.push_back(need(train::SingleProcessTraining::open(copy_job)));
  std::vector<Rate> rates(copies);
  std::latch start(copies);
  std::barrier step_done(copies);
  {
    std::vector<std::jthread> threads;
    for (unsigned c = 0; c < copies; ++c)
      threads.emplace_back([&, c] {
        torch::set_num_threads(1);
        start.arrive_and_wait();
        const std::vector<double> times = timed_steps(*trainings[c], steps, [&] {
          if (lockstep) step_done.arrive_and_wait();
        });
        rates[c] = rate_of(times, copy_job.train.batch_size);
      });
  }
  torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  Rate sum;
  std::vector<double> step_ms;
  for (const Rate& r : rates) {
    sum.samples_per_s += r.samples_per_s;
    step_ms.push_back(r.step_ms);
  }
  sum.step_ms = median(step_ms);
  return sum;
}

std::optional<Rate> pytorch(const std::string& root, int threads, std::uint32_t batch, std::uint64_t steps) {
  std::string python;
  const char* chosen = std::getenv("PYTHON");
  for (const std::string candidate : {chosen ? chosen : "", ACTORPIPE_BUILD_PYTHON, "python3"})
    if (!candidate.empty() && std::system(("'" + candidate + "' -c 'import torch' >/dev/null 2>&1").c_str()) == 0) {
      python = candidate;
      break;
    }
  if (python.empty()) return std::nullopt;
  const std::string command = "'" + python + "' '" + root + "/bench/pytorch_eager.py' --threads " +
                              std::to_string(threads) + " --batch " + std::to_string(batch) + " --steps " +
                              std::to_string(steps) + " --warmup " + std::to_string(warmup_steps) + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe))
    out += buffer;
  if (pclose(pipe) != 0) return std::nullopt;
  // {"samples_per_s": X, "step_ms": Y}
  Rate r;
  if (std::sscanf(out.c_str(), "{\"samples_per_s\": %lf, \"step_ms\": %lf}", &r.samples_per_s, &r.step_ms) != 2)
    return std::nullopt;
  return r;
}

} // namespace actorpipe::bench
