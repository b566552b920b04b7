/// Session: data, replicas and workers of a run; batches, evaluation, checkpoints.

#include "train/session.hpp"

#include "base/atomic_file.hpp"
#include "base/input_file.hpp"
#include "base/text.hpp"
#include "device/placement.hpp"
#include "train/checkpoint_file.hpp"
#include "train/cores.hpp"
#include "train/datasets.hpp"
#include "train/freed_memory.hpp"
#include "train/stage_worker_impl.hpp"
#include "train/tensor_box.hpp"

#include <cstring>
#include <deque>
#include <mutex>
#include <sstream>
#include <tuple>

namespace actorpipe::train {

struct Session::Data {
  JobSpec job;
  Plan plan;
  DataSets data;
  std::vector<std::shared_ptr<const Model>> replicas;             ///< one model per pipeline
  std::vector<std::vector<std::unique_ptr<StageWorker>>> workers; ///< [pipeline][stage]
  /// The epoch's sample order and the last batches made, which the driver and, in a
  /// worker, the stage threads making rows share.
  mutable std::mutex batching;
  mutable std::uint64_t order_epoch = ~0ULL;
  mutable std::vector<std::int64_t> order;
  /// The last batches made, by (epoch, index), newest last: the driver runs up to two
  /// steps ahead of the stages making rows.
  mutable std::deque<std::pair<std::pair<std::uint64_t, std::uint64_t>, Batch>> made;
  int caller_threads = 1; ///< the opening thread's LibTorch threads, given back at the end
  bool pin = false;       ///< batches in page-locked memory: some stage is on a GPU
};

Session::Session() : d_(std::make_unique<Data>()) {}
Session::~Session() { use_compute_threads(d_->caller_threads); }

Result<std::unique_ptr<Session>> Session::open(const JobSpec& job, const Plan& plan,
                                               std::shared_ptr<const TrainingData> data, std::size_t stages_here,
                                               const std::vector<std::vector<char>>& runs_here) {
  std::unique_ptr<Session> session(new Session());
  Data& d = *session->d_;
  d.job = job;
  d.plan = plan;
  d.caller_threads = at::get_num_threads();
  if (job.train.retain_memory) retain_freed_memory();
  auto loaded = given_or_loaded(job, std::move(data));
  ACTORPIPE_TRY(loaded);
  d.data = (*loaded)->sets; // tensors share their storage
  if (d.data.train.size() < plan.batch_size)
    return Error::bad_input(job.where("train.batch_size") + std::to_string(plan.batch_size) +
                            " samples per batch, but the training data has " + std::to_string(d.data.train.size()));
  const std::vector<std::vector<char>> gpu_shared = device::shares_gpu(job.cluster, plan, runs_here);
  for (std::size_t p = 0; p < plan.pipelines; ++p) {
    auto model = build_model(job, d.data.shape);
    ACTORPIPE_TRY(model);
    if (model->blocks.size() != job.profile.blocks.size() && !job.profile.blocks.empty())
      return Error::bad_input(job.where("model.profile") + "the profile has " +
                              std::to_string(job.profile.blocks.size()) + " blocks, model '" +
                              std::string(option_name(job.model.zoo)) + "' " + std::to_string(model->blocks.size()));
    d.replicas.push_back(std::make_shared<const Model>(std::move(*model)));
    d.workers.emplace_back();
    for (std::size_t s = 0; s < plan.stages.size(); ++s) {
      StageSetup setup{p,
                       s,
                       plan.stages.size(),
                       plan.stages[s].begin,
                       plan.stages[s].end,
                       job.train,
                       compute_threads_for(stages_here > 0 ? stages_here : plan.pipelines * plan.stages.size()),
                       job.job.seed,
                       device::place_of(job.cluster.devices[plan.devices[p][s]]).cuda_index};
      setup.gpu_shared = gpu_shared[p][s];
      // The profile's units are the model's where it was measured from it; a profile of
      // whole blocks marks whole blocks, which "full" needs no more than.
      const Recompute recompute = plan.stages[s].recompute;
      if (recompute != Recompute::none) {
        const std::size_t units = d.replicas.back()->units(setup.begin, setup.end).size();
        setup.recomputed = recomputed_units(job.profile, plan.stages[s]);
        if (setup.recomputed.size() != units) {
          if (recompute == Recompute::selective)
            return Error::bad_input(job.where("plan.recompute") + "\"selective\" weighs each unit of stage " +
                                    std::to_string(s) + " by its profile, whose units (" +
                                    std::to_string(setup.recomputed.size()) + ") are not the model's (" +
                                    std::to_string(units) + "): measure the profile (actorpipe profile)");
          setup.recomputed.assign(units, true);
        }
      }
      try {
        d.workers.back().push_back(std::make_unique<StageWorker>(d.replicas.back(), setup));
      } catch (const std::exception& e) {
        return Error::run_failed("stage " + std::to_string(s) + " of pipeline " + std::to_string(p) + ": " +
                                 text::message_of(e));
      }
    }
  }
  d.pin = device::uses_cuda(job.cluster, plan);
  // fp32 means fp32 on a GPU too: no TF32 in matrix products and convolutions, so that a
  // job computes there what it computes on the CPU (bf16 and fp16 are the fast ways).
  if (d.pin && job.train.precision == Precision::fp32) {
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
  }
  return session;
}

std::uint64_t Session::steps_per_epoch() const {
  return static_cast<std::uint64_t>(d_->data.train.size()) / d_->plan.batch_size;
}

std::int64_t Session::train_samples() const { return d_->data.train.size(); }

Batch Session::batch(std::uint64_t epoch, std::uint64_t index) const {
  // The driver slices batches while the stage actors compute (in a worker, a stage
  // thread making rows, whose next action sets its own count again): an OpenMP team
  // here would spin on the cores they need.
  use_compute_threads(1);
  const std::lock_guard lock(d_->batching);
  for (const auto& [key, kept] : d_->made)
    if (key == std::pair{epoch, index}) return kept;
  if (d_->order_epoch != epoch) {
    d_->order = epoch_order(d_->data.train.size(), d_->job.data.seed, epoch, d_->job.data.shuffle);
    d_->order_epoch = epoch;
  }
  const std::int64_t n = d_->plan.batch_size;
  const auto picked = torch::from_blob(d_->order.data() + index * n, {n}, torch::kLong).clone();
  const Batch named = batch_rows_only(epoch, index);
  Batch made{std::make_shared<const TensorBox>(
                 TensorBox{device::pinned_if(d_->pin, model_inputs(d_->data.train.inputs.index_select(0, picked))),
                           named.inputs->rows, nullptr}),
             std::make_shared<const TensorBox>(
                 TensorBox{device::pinned_if(d_->pin, model_labels(d_->data.train.labels.index_select(0, picked))),
                           named.labels->rows, nullptr}),
             named.samples};
  d_->made.emplace_back(std::pair{epoch, index}, made);
  if (d_->made.size() > 4) d_->made.pop_front();
  return made;
}

Batch Session::batch_rows_only(std::uint64_t epoch, std::uint64_t index) const {
  const auto n = static_cast<std::uint32_t>(d_->plan.batch_size);
  const auto rows = [&](bool labels) {
    return std::make_shared<const TensorBox>(
        TensorBox{torch::Tensor(), BatchRows{epoch, index, 0, n, labels}, nullptr});
  };
  return {rows(false), rows(true), n};
}

Payload Session::rows(const BatchRows& rows) const {
  const Batch made = batch(rows.epoch, rows.index);
  const Payload& all = rows.labels ? made.labels : made.inputs;
  return std::make_shared<const TensorBox>(TensorBox{all->tensor.narrow(0, rows.first, rows.count), rows, nullptr});
}

std::uint64_t Session::data_fingerprint() const {
  // FNV-1a over both tensors, eight bytes at a time: a data set of hundreds of MB
  // takes a fraction of a second.
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  const auto mix = [&](std::uint64_t word) { hash = (hash ^ word) * 0x100000001b3ULL; };
  for (const torch::Tensor& t : {d_->data.train.inputs, d_->data.train.labels}) {
    const torch::Tensor dense = t.contiguous();
    const auto* bytes = static_cast<const unsigned char*>(dense.data_ptr());
    const std::size_t n = static_cast<std::size_t>(dense.numel()) * dense.element_size();
    mix(n);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes + i, 8);
      mix(word);
    }
    for (; i < n; ++i)
      mix(bytes[i]);
  }
  return hash;
}

void Session::schedule(std::uint64_t first_step, std::uint64_t total_steps) {
  for (auto& pipeline : d_->workers)
    for (auto& worker : pipeline)
      worker->set_schedule(first_step, total_steps);
}

StageWorker& Session::worker(std::size_t pipeline, std::size_t stage) { return *d_->workers[pipeline][stage]; }

std::vector<StageWorker*> Session::replicas(std::size_t stage) {
  std::vector<StageWorker*> out;
  for (auto& pipeline : d_->workers)
    out.push_back(pipeline[stage].get());
  return out;
}

Evaluation Session::evaluate() {
  // Between steps the stage actors are idle: every core evaluates.
  use_compute_threads(compute_threads_for(1));
  settle();
  torch::NoGradGuard no_grad;
  const auto& pipeline = d_->workers.front();
  d_->replicas.front()->set_training(false);
  const Split& test = d_->data.test;
  Evaluation e;
  double loss_sum = 0, right = 0, positions = 0;
  for (std::int64_t at = 0; at < test.size(); at += 500) {
    const std::int64_t n = std::min<std::int64_t>(500, test.size() - at);
    torch::Tensor x = model_inputs(test.inputs.narrow(0, at, n));
    for (auto& w : pipeline)
      x = w->impl().run(x.to(w->impl().device.device()));
    const torch::Tensor logits = x.to(torch::kFloat).reshape({-1, x.size(-1)});
    const torch::Tensor labels = model_labels(test.labels.narrow(0, at, n)).reshape({-1}).to(logits.device());
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    right += logits.argmax(1).eq(labels).sum().item<double>();
    positions += static_cast<double>(labels.size(0));
  }
  d_->replicas.front()->set_training(true);
  e.samples = test.size();
  e.accuracy = positions > 0 ? right / positions : 0;
  e.loss = positions > 0 ? loss_sum / positions : 0;
  return e;
}

std::uint64_t Session::skipped_steps() const {
  std::uint64_t skipped = 0;
  for (const auto& pipeline : d_->workers)
    for (const auto& w : pipeline)
      skipped += w->skipped_steps();
  return skipped;
}

void Session::settle() {
  for (auto& pipeline : d_->workers)
    for (auto& w : pipeline)
      w->settle();
}

Status Session::save_checkpoint(const std::string& path, const Progress& progress) {
  settle();
  try {
    torch::serialize::OutputArchive archive;
    archive.write("step", torch::tensor(static_cast<std::int64_t>(progress.step)));
    archive.write("epoch", torch::tensor(static_cast<std::int64_t>(progress.epoch)));
    archive.write("index", torch::tensor(static_cast<std::int64_t>(progress.index)));
    archive.write("stages", torch::tensor(static_cast<std::int64_t>(d_->plan.stages.size())));
    // What a resume must match: the batches the progress counts in, and the data.
    archive.write("batch_size", torch::tensor(static_cast<std::int64_t>(d_->plan.batch_size)));
    archive.write("train_samples", torch::tensor(static_cast<std::int64_t>(d_->data.train.size())));
    // Pipelines hold equal parameters, buffers and optimizer state after a synchronous
    // step, so pipeline 0 speaks for all.
    for (std::size_t s = 0; s < d_->plan.stages.size(); ++s) {
      torch::serialize::OutputArchive stage;
      write_state(d_->workers.front()[s]->impl(), stage);
      archive.write("stage" + std::to_string(s), stage);
    }
    std::ostringstream bytes;
    archive.save_to(bytes);
    return write_file_atomically(path, seal_checkpoint(bytes.str()));
  } catch (const std::exception& e) {
    return Error::run_failed(path + ": cannot write the checkpoint: " + text::message_of(e));
  }
}

Result<Progress> Session::load_checkpoint(const std::string& path) {
  auto file = read_file(path);
  ACTORPIPE_TRY(file);
  auto content = unseal_checkpoint(*file, path);
  ACTORPIPE_TRY(content);
  try {
    torch::serialize::InputArchive archive;
    std::istringstream bytes(*content);
    archive.load_from(bytes);
    auto integer = [&](const char* key) {
      torch::Tensor t;
      archive.read(key, t);
      return static_cast<std::uint64_t>(t.item<std::int64_t>());
    };
    if (integer("stages") != d_->plan.stages.size())
      return Error::bad_input(path + ": the checkpoint has " + std::to_string(integer("stages")) +
                              " stages, the plan " + std::to_string(d_->plan.stages.size()));
    if (integer("batch_size") != d_->plan.batch_size)
      return Error::bad_input(path + ": the checkpoint was written at train.batch_size " +
                              std::to_string(integer("batch_size")) + ", the job has " +
                              std::to_string(d_->plan.batch_size) + "; resume with the same batch");
    if (integer("train_samples") != static_cast<std::uint64_t>(d_->data.train.size()))
      return Error::bad_input(path + ": the checkpoint was written for " + std::to_string(integer("train_samples")) +
                              " training samples, the job's data has " + std::to_string(d_->data.train.size()) +
                              "; resume with the same data");
    Progress progress{integer("step"), integer("epoch"), integer("index")};
    // A position the run could not have reached (one a valid CRC over altered bytes
    // still carries) would resume past the data or count epochs from nowhere.
    const std::uint64_t per_epoch = steps_per_epoch();
    if (per_epoch != 0 && (progress.index >= per_epoch || progress.epoch > progress.step / per_epoch ||
                           progress.step != progress.epoch * per_epoch + progress.index))
      return Error::bad_input(path + ": the checkpoint's position (step " + std::to_string(progress.step) + ", epoch " +
                              std::to_string(progress.epoch) + ", batch " + std::to_string(progress.index) +
                              ") is not one a run of this job reaches at " + std::to_string(per_epoch) +
                              " batches an epoch");
    torch::NoGradGuard no_grad;
    // Each pipeline reads its own copy: tensors read from one archive are shared, and
    // optimizer state shared between pipelines would be updated once per pipeline.
    // Each stage reads it onto its own device (optimizer state too): a checkpoint written
    // on GPUs resumes on the CPU, and the other way round.
    for (std::size_t p = 0; p < d_->workers.size(); ++p) {
      for (std::size_t s = 0; s < d_->plan.stages.size(); ++s) {
        torch::serialize::InputArchive copy;
        std::istringstream copy_bytes(*content);
        copy.load_from(copy_bytes, d_->workers[p][s]->impl().device.device());
        torch::serialize::InputArchive stage;
        copy.read("stage" + std::to_string(s), stage);
        if (const std::string wrong = read_state(d_->workers[p][s]->impl(), stage); !wrong.empty())
          return Error::bad_input(path + ": stage " + std::to_string(s) + " " + wrong);
      }
    }
    return progress;
  } catch (const std::exception& e) {
    return Error::bad_input(path + ": not a checkpoint of this job: " + text::message_of(e).substr(0, 300));
  }
}

} // namespace actorpipe::train
