/// measure_profile(): time and size every unit of a zoo model.

#include <actorpipe/training.hpp>

#include "base/statistics.hpp"
#include "base/boundary.hpp"
#include "base/text.hpp"

#include "device/cuda_queries.hpp"
#include "device/memory_meter.hpp"
#include "device/pass_clock.hpp"
#include "device/placement.hpp"
#include "device/precision.hpp"
#include "device/stage_device.hpp"
#include "train/cores.hpp"
#include "train/datasets.hpp"
#include "train/freed_memory.hpp"
#include "train/model_zoo.hpp"
#include "train/split_backward.hpp"

#include <algorithm>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>

#include <ATen/Parallel.h>

namespace actorpipe {

using namespace train;

namespace {

/// Warm-up passes at most, however long a model's times keep moving; and how many of
/// the last must agree for the times to have settled.
constexpr std::size_t max_warmup_passes = 30;
constexpr std::size_t settled_passes = 3;

/// (slowest − fastest) / median of pass times, the slowest and the fastest set aside
/// from five passes on: one pass that a page fault or another process slowed says
/// little about the rest, and each unit's median ignores it too.
double spread(std::vector<double> passes) {
  if (passes.size() < 2) return 0;
  std::sort(passes.begin(), passes.end());
  const std::size_t aside = passes.size() >= 5 ? 1 : 0;
  return (passes[passes.size() - 1 - aside] - passes[aside]) / passes[passes.size() / 2];
}

/// The part of `ms` (at `n` samples) that does not grow with the samples, on the line
/// through it and `small_ms` (at `small` < n samples); all of it where the small batch
/// took as long (a unit whose time its samples do not move).
double fixed_part(double ms, double small_ms, std::int64_t n, std::int64_t small) {
  const double per_sample = (ms - small_ms) / static_cast<double>(n - small);
  return std::clamp(ms - per_sample * static_cast<double>(n), 0.0, ms);
}

std::uint64_t bytes_of(const torch::Tensor& t) { return static_cast<std::uint64_t>(t.numel() * t.element_size()); }

/// Copies of the model training on the other cores while the units are timed: in a
/// run every device share computes at once, and a unit timed beside idle cores runs
/// faster than it will there (shared caches and memory bandwidth).
class Load {
public:
  /// Copy c runs on share c + 1 of the usable cores, `threads` cores each: the timed
  /// passes have share 0 to themselves, as a bound stage actor has its core.
  Load(std::vector<Model> copies, const torch::Tensor& input, int threads) : started_(copies.size()) {
    const std::vector<int> cores = usable_cores();
    const auto share = static_cast<std::size_t>(threads);
    for (std::size_t c = 0; c < copies.size(); ++c)
      workers_.emplace_back([this, copy = std::move(copies[c]), input, threads,
                             mine = cores_of(cores, (c + 1) * share, share)](std::stop_token stop) {
        const CoreBinding bound(mine);
        use_compute_threads(threads);
        started_.count_down();
        try {
          while (!stop.stop_requested()) {
            torch::Tensor y = input;
            for (const ModelBlock& b : copy.blocks)
              for (const ModelUnit& u : b.units)
                y = u.forward(y);
            if (y.requires_grad()) y.backward(torch::ones_like(y));
            for (const ModelBlock& b : copy.blocks)
              for (const ModelUnit& u : b.units)
                for (const auto& p : u.parameters)
                  p.mutable_grad() = torch::Tensor();
          }
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (failure_.empty()) failure_ = text::message_of(e);
        }
      });
    started_.wait();
  }
  ~Load() {
    for (auto& w : workers_)
      w.request_stop();
  }
  /// Why a copy stopped early (it ran out of memory, say), leaving its core idle; empty
  /// when none did. Stops the copies first.
  std::string failure() {
    for (auto& w : workers_)
      w.request_stop();
    workers_.clear();
    return failure_;
  }

private:
  std::latch started_;
  std::mutex mutex_;
  std::string failure_;
  std::vector<std::jthread> workers_;
};

/// Where to measure: as options.on asks; for On::job, the first CUDA device of the
/// job's cluster where this machine has it, else the CPU (a cluster of GPUs can be
/// planned from a machine without them, and its profile is then the CPU's).
Result<device::StageDevice> measuring_device(const JobSpec& job, const MeasureOptions& options) {
  int index = -1;
  if (options.on == MeasureOptions::On::cuda) index = options.cuda_index;
  if (options.on == MeasureOptions::On::job)
    for (const Device& d : job.cluster.devices) {
      const device::Place place = device::place_of(d);
      if (place.kind != device::Kind::cuda) continue;
      if (torch::cuda::is_available() && place.cuda_index < static_cast<int>(torch::cuda::device_count()))
        index = place.cuda_index;
      break;
    }
  if (index < 0) return device::StageDevice();
  try {
    return device::StageDevice::cuda(index);
  } catch (const std::exception& e) {
    return Error::bad_input("profile device: " + text::message_of(e));
  }
}

/// "cuda:0 (NVIDIA H100 80GB HBM3)", or "cuda:0" where LibTorch cannot name it.
std::string gpu_name(c10::DeviceIndex index) {
  std::string name = "cuda:" + std::to_string(index);
  if (auto gpus = device::query_gpus())
    for (const GpuInfo& gpu : *gpus)
      if (gpu.index == index) name += " (" + gpu.name + ")";
  return name;
}

} // namespace

/// Options a caller of the public API may give out of bounds, refused before anything
/// is measured.
static Status check_options(const MeasureOptions& options) {
  if (options.repeats < 1 || options.repeats > max_measure_passes)
    return Error::bad_input("profile repeats " + std::to_string(options.repeats) + ": from 1 to " +
                            std::to_string(max_measure_passes) + " timed passes");
  if (options.warmup > max_measure_passes)
    return Error::bad_input("profile warm-up " + std::to_string(options.warmup) + ": at most " +
                            std::to_string(max_measure_passes) + " passes");
  if (options.batch_size > max_measured_batch)
    return Error::bad_input("profile batch size " + std::to_string(options.batch_size) + ": at most " +
                            std::to_string(max_measured_batch));
  if (options.threads < 0 || static_cast<std::uint64_t>(options.threads) > max_measure_threads)
    return Error::bad_input("profile threads " + std::to_string(options.threads) + ": from 0 (one device's share) to " +
                            std::to_string(max_measure_threads));
  if (options.load < -1)
    return Error::bad_input("profile load " + std::to_string(options.load) + ": -1 (fill the cores) or a count");
  return Ok{};
}

static Result<ModelProfile> measure_profile_unguarded(const JobSpec& job, const MeasureOptions& options) {
  ACTORPIPE_TRY(check_options(options));
  // As the run it predicts will allocate (Session::open).
  if (job.train.retain_memory) retain_freed_memory();
  auto loaded = given_or_loaded(job, options.data, options.plugins);
  ACTORPIPE_TRY(loaded);
  const DataSets* data = &(*loaded)->sets;
  auto model = build_model(job, data->shape);
  ACTORPIPE_TRY(model);
  if (static_cast<std::int64_t>(options.batch_size) > data->train.size())
    return Error::bad_input("profile batch size " + std::to_string(options.batch_size) + ": more than the " +
                            std::to_string(data->train.size()) + " training samples");
  const std::int64_t n =
      std::min<std::int64_t>(options.batch_size ? options.batch_size : job.train.batch_size, data->train.size());
  auto on = measuring_device(job, options);
  ACTORPIPE_TRY(on);
  const device::StageDevice& stage = *on;
  const c10::Device where = stage.device();
  const Precision precision = job.train.precision;
  ModelProfile profile = model->skeleton();
  profile.name = option_name(job.model.zoo);
  profile.precision = precision;
  const int threads = options.threads > 0 ? options.threads : compute_threads_for(job.cluster.devices.size());
  profile.reference_device = stage.is_cuda()
                                 ? gpu_name(where.index())
                                 : "cpu, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  const int caller_threads = at::get_num_threads();
  use_compute_threads(threads);
  profile.batch_size = static_cast<std::uint32_t>(n);
  const auto entered = stage.enter(); // a GPU's work on a stream of its own, as a stage's
  for (const ModelBlock& b : model->blocks)
    for (const ModelUnit& u : b.units) {
      for (torch::Tensor p : u.parameters)
        stage.adopt(p);
      for (torch::Tensor buffer : u.buffers)
        stage.adopt(buffer);
    }
  torch::Tensor x = stage.take(model_inputs(data->train.inputs.narrow(0, 0, n)));
  profile.input_bytes = bytes_of(x);
  const std::size_t cores = usable_cores().size();
  const std::size_t shares = std::max<std::size_t>(1, cores / static_cast<std::size_t>(threads));
  // A copy beyond one per core measures nothing a run would see, and costs a model's memory.
  if (options.load > static_cast<int>(cores))
    return Error::bad_input("profile load " + std::to_string(options.load) + ": more copies of the model than the " +
                            std::to_string(cores) + " cores they would keep busy");
  // On a GPU the other stages compute elsewhere (or on the same GPU), not on these cores.
  const std::size_t load_copies = stage.is_cuda()     ? 0
                                  : options.load >= 0 ? static_cast<std::size_t>(options.load)
                                                      : shares - 1;
  std::vector<Model> copies;
  for (std::size_t c = 0; c < load_copies; ++c) {
    auto copy = build_model(job, data->shape);
    ACTORPIPE_TRY(copy);
    copies.push_back(std::move(*copy));
  }
  if (load_copies > 0)
    profile.reference_device +=
        ", " + std::to_string(load_copies) + (load_copies == 1 ? " copy" : " copies") + " of the model busy beside it";
  std::optional<Load> load;
  std::optional<CoreBinding> bound; // with copies beside it, on cores of its own
  if (!copies.empty()) {
    load.emplace(std::move(copies), x, threads);
    bound.emplace(cores_of(usable_cores(), 0, static_cast<std::size_t>(threads)));
  }

  // Every pass runs the whole model, unit by unit, forward and then backward, as a
  // step does: each unit is timed in every pass, so all units see the same spells of
  // a machine whose speed drifts, and their times keep their proportions.
  std::vector<const ModelUnit*> units;
  for (const ModelBlock& b : model->blocks)
    for (const ModelUnit& u : b.units)
      units.push_back(&u);
  // Times per unit, at the full batch and at the small one.
  struct Times {
    std::vector<std::vector<double>> forward, backward;
  };
  Times full{std::vector<std::vector<double>>(units.size()), std::vector<std::vector<double>>(units.size())};
  Times reduced = full;
  std::vector<torch::Tensor> inputs(units.size()), outputs(units.size());
  device::PassClock clock(where);
  // After the batch, the model runs on a batch of `small` samples: what a unit's time
  // owes to its samples is the difference, and the rest a micro-batch pays whatever its
  // size. Each size has passes of its own, warm-up included: alternating them within a
  // pass made TorchScript's profiling executor, which specialises its graph to the
  // shape, run some units of the scripted models of tests/fixtures a third to a half slower.
  const std::int64_t small = std::max<std::int64_t>(1, n / 8);
  // One unit's forward on its input, as a stage's (the model's input needs no gradient;
  // every later unit's does), in the job's precision.
  auto forward = [&](std::size_t k, const torch::Tensor& y) {
    inputs[k] = k > 0 && y.is_floating_point() ? y.detach().requires_grad_(true) : y;
    const device::AutocastScope autocast(precision, where);
    outputs[k] = units[k]->forward(inputs[k]);
  };
  // The gradient of unit k's output: what the unit after it passed back to its input;
  // undefined where unit k has nothing to differentiate (it has no backward).
  auto output_grad = [&](std::size_t k) {
    const torch::Tensor grad = k + 1 == units.size() ? torch::ones_like(outputs[k]) : inputs[k + 1].grad();
    return outputs[k].requires_grad() ? grad : torch::Tensor();
  };
  auto drop_grads = [&] {
    for (const ModelUnit* u : units)
      for (const auto& p : u->parameters)
        p.mutable_grad() = torch::Tensor();
  };
  // The whole model, unit by unit, forward and then backward, as a step does, with a
  // mark of the device's clock between units; each unit's times go to `times` (when
  // given). Returns their sum.
  auto run_batch = [&](const torch::Tensor& batch, Times* times) {
    clock.clear();
    std::vector<std::size_t> forward_marks(units.size() + 1), backward_marks(units.size() + 1);
    forward_marks[0] = clock.mark();
    for (std::size_t k = 0; k < units.size(); ++k) {
      forward(k, k == 0 ? batch : outputs[k - 1]);
      forward_marks[k + 1] = clock.mark();
    }
    backward_marks[units.size()] = forward_marks[units.size()];
    for (std::size_t k = units.size(); k-- > 0;) {
      if (const torch::Tensor grad = output_grad(k); grad.defined()) outputs[k].backward(grad);
      backward_marks[k] = clock.mark();
    }
    clock.finish();
    drop_grads();
    double total = 0;
    for (std::size_t k = 0; k < units.size(); ++k) {
      const double forward_ms = clock.ms(forward_marks[k], forward_marks[k + 1]);
      const double backward_ms = clock.ms(backward_marks[k + 1], backward_marks[k]);
      total += forward_ms + backward_ms;
      if (times) {
        times->forward[k].push_back(forward_ms);
        times->backward[k].push_back(backward_ms);
      }
    }
    return total;
  };
  // The model again, its backward unit by unit in the halves a zero-bubble schedule
  // runs apart (train/split_backward.hpp): I, the unit's input gradient, then W, its
  // weights'. Each unit's times of the two go to `input_part` and `weight_part`.
  std::vector<std::vector<double>> input_part(units.size()), weight_part(units.size());
  auto run_split = [&](const torch::Tensor& batch) {
    clock.clear();
    for (std::size_t k = 0; k < units.size(); ++k)
      forward(k, k == 0 ? batch : outputs[k - 1]);
    std::vector<torch::Tensor> input_grads(units.size());
    std::vector<std::size_t> marks(2 * units.size() + 1);
    marks[2 * units.size()] = clock.mark();
    for (std::size_t k = units.size(); k-- > 0;) {
      const torch::Tensor grad = k + 1 == units.size() ? torch::ones_like(outputs[k]) : input_grads[k + 1];
      if (outputs[k].requires_grad() && grad.defined()) {
        auto [input_grad, weights] = WeightGradients::input_gradient(outputs[k], grad, inputs[k], units[k]->parameters);
        input_grads[k] = input_grad;
        marks[2 * k + 1] = clock.mark();
        weights.accumulate(units[k]->parameters);
      } else {
        marks[2 * k + 1] = clock.mark();
      }
      marks[2 * k] = clock.mark();
    }
    clock.finish();
    drop_grads();
    for (std::size_t k = 0; k < units.size(); ++k) {
      input_part[k].push_back(clock.ms(marks[2 * k + 2], marks[2 * k + 1]));
      weight_part[k].push_back(clock.ms(marks[2 * k + 1], marks[2 * k]));
    }
  };
  const std::size_t sizes = small < n ? 2 : 1;
  // The most passes it may take, which progress counts against: a warm-up that settles
  // early moves progress on by the passes it did not need, so that the count neither
  // changes nor goes back. The split passes come last, as many as the timed.
  const std::size_t most_warmup = options.warmup == 0 ? 0 : std::max<std::size_t>(options.warmup, max_warmup_passes);
  const std::size_t passes = sizes * (most_warmup + options.repeats) + options.repeats;
  std::size_t done = 0, warmup_passes = 0;
  // Warm-up until the times settle: the passes asked for, then more until the last
  // `settled_passes` agree within 5% (TorchScript's profiling executor runs a scripted
  // model several times as slow until it has optimised its graph, and two of those
  // slow passes agree; caches and clocks warm up too), at most `max_warmup_passes`;
  // then the timed passes, whose whole-model times it returns.
  auto measure = [&](const torch::Tensor& batch, Times& times) {
    auto pass = [&](Times* kept) {
      const double total = run_batch(batch, kept);
      if (options.on_pass) options.on_pass(++done, passes);
      return total;
    };
    std::vector<double> warm;
    auto settled = [&] {
      if (warm.size() < options.warmup) return false;
      if (options.warmup == 0 || warm.size() >= max_warmup_passes) return true;
      if (warm.size() < settled_passes) return false;
      const auto [least, most] = std::minmax_element(warm.end() - settled_passes, warm.end());
      return *most <= 1.05 * *least;
    };
    while (!settled())
      warm.push_back(pass(nullptr));
    warmup_passes += warm.size();
    done += most_warmup - warm.size();
    std::vector<double> timed;
    for (std::uint32_t r = 0; r < options.repeats; ++r)
      timed.push_back(pass(&times));
    return timed;
  };
  profile.spread = spread(measure(x, full));
  // Warm already: the split passes follow the timed ones at once.
  for (std::uint32_t r = 0; r < options.repeats; ++r) {
    run_split(x);
    if (options.on_pass) options.on_pass(++done, passes);
  }
  // What the batch's units give out, before the small batch replaces it.
  std::vector<std::uint64_t> output_bytes(units.size());
  for (std::size_t k = 0; k < units.size(); ++k)
    output_bytes[k] = bytes_of(outputs[k]);
  if (small < n) measure(x.narrow(0, 0, small), reduced);
  profile.warmup_passes = static_cast<std::uint32_t>(warmup_passes);
  // The copies allocate too: they stop before the memory is weighed.
  const std::string load_failure = load ? load->failure() : std::string();

  // One more pass over the batch, weighing each unit with the device's allocator: what
  // its forward leaves allocated is what autograd keeps for its backward (saved inputs,
  // masks, casts of weights) and its output; what a forward or backward allocates above
  // that and gives back is its workspace. The backward's workspace counts the gradient
  // it is handed, and not the parameters' gradients, which stay (the optimizer's bytes).
  std::vector<std::int64_t> kept(units.size()), workspace(units.size());
  {
    device::MemoryMeter meter(where);
    drop_grads();
    for (std::size_t k = 0; k < units.size(); ++k) {
      const std::int64_t before = meter.live();
      meter.reset_peak();
      forward(k, k == 0 ? x : outputs[k - 1]);
      kept[k] = meter.live() - before;
      workspace[k] = meter.peak() - meter.live();
    }
    for (std::size_t k = units.size(); k-- > 0;) {
      const torch::Tensor grad = output_grad(k);
      if (!grad.defined()) continue;
      const std::int64_t before = meter.live();
      meter.reset_peak();
      outputs[k].backward(grad);
      std::int64_t gradients = 0;
      for (const auto& p : units[k]->parameters)
        gradients += p.grad().defined() ? static_cast<std::int64_t>(bytes_of(p.grad())) : 0;
      workspace[k] =
          std::max(workspace[k], meter.peak() - before - gradients + static_cast<std::int64_t>(bytes_of(grad)));
    }
    stage.settle();
    drop_grads();
    inputs.assign(units.size(), torch::Tensor());
    outputs.assign(units.size(), torch::Tensor());
  }

  std::size_t k = 0;
  for (std::size_t bi = 0; bi < model->blocks.size(); ++bi) {
    const ModelBlock& block = model->blocks[bi];
    Block& out = profile.blocks[bi];
    for (std::size_t ui = 0; ui < block.units.size(); ++ui, ++k) {
      const ModelUnit& unit = block.units[ui];
      SubBlock figures;
      figures.name = unit.name;
      figures.forward_ms = median(full.forward[k]);
      figures.backward_ms = median(full.backward[k]);
      if (small < n) {
        figures.forward_fixed_ms = fixed_part(figures.forward_ms, median(reduced.forward[k]), n, small);
        figures.backward_fixed_ms = fixed_part(figures.backward_ms, median(reduced.backward[k]), n, small);
      }
      // I's share of the halves, of the whole backward: run apart, they cost a little
      // more than at once, and a schedule that runs B whole takes backward_ms.
      const double input_ms = median(input_part[k]), weight_ms = median(weight_part[k]);
      figures.input_gradient_ms =
          input_ms + weight_ms > 0 ? figures.backward_ms * input_ms / (input_ms + weight_ms) : 0.0;
      figures.output_bytes = output_bytes[k];
      for (const auto& p : unit.parameters)
        figures.parameter_bytes += bytes_of(p);
      const auto per_sample = [n](std::int64_t bytes) {
        return static_cast<std::uint64_t>(std::max<std::int64_t>(0, bytes) / n);
      };
      figures.stash_bytes_per_sample = per_sample(kept[k]);
      figures.workspace_bytes_per_sample = per_sample(workspace[k]);
      if (block.has_sub_blocks) out.sub_blocks.at(ui) = figures;
      out.add(figures);
    }
  }
  use_compute_threads(caller_threads);
  if (!load_failure.empty())
    return Error::run_failed("a copy of the model that keeps the other cores busy while measuring failed (" +
                             load_failure + "); measure with --load 0");
  return profile;
}

Result<ModelProfile> measure_profile(const JobSpec& job, const MeasureOptions& options) {
  return at_boundary("profile", [&] { return measure_profile_unguarded(job, options); });
}

} // namespace actorpipe
