/// SyncExecutor: a policy's round, checked, applied to the replicas.

#include "train/sync_executor.hpp"

#include "sync/elastic_problem.hpp"
#include "sync/group_scheduler.hpp"
#include "sync/stepping.hpp"

#include <numeric>
#include <set>
#include <stdexcept>

namespace actorpipe::train {

SyncExecutor::SyncExecutor(std::shared_ptr<SyncPolicy> policy, std::string label, PluginOptions options,
                           std::size_t pipelines, std::size_t stages, double batch_share, BufferSync buffers,
                           std::function<std::vector<StageWorker*>(std::size_t)> replicas)
    : policy_(std::move(policy)), label_(std::move(label)), options_(std::move(options)), pipelines_(pipelines),
      batch_share_(batch_share), buffers_(buffers),
      // A round works on replicas from another thread: their queued GPU work first.
      replicas_([replicas = std::move(replicas)](std::size_t stage) {
        std::vector<StageWorker*> all = replicas(stage);
        for (StageWorker* replica : all)
          replica->settle();
        return all;
      }),
      centres_(stages), servers_(stages), snapshots_(stages), rounds_(stages) {
  for (auto& stage : snapshots_)
    stage.resize(pipelines);
}

SyncExecutor::~SyncExecutor() = default;

SyncRound SyncExecutor::round_of(std::size_t stage, std::uint64_t step) {
  std::lock_guard<std::mutex> lock(rounds_mutex_);
  auto& kept = rounds_.at(stage);
  if (kept && kept->first == step) return kept->second;
  // Lockstep rounds: arrival times carry nothing, and are zeros (they matter only to
  // pipelines that step on their own, as under SDPipe).
  auto round = policy_->round({stage, pipelines_, step, std::vector<double>(pipelines_, 0.0), options_});
  if (!round) throw std::runtime_error(label_ + ": " + round.error().message);
  if (sync::is_asynchronous(round->kind))
    throw std::runtime_error(label_ + ": round " + std::to_string(step) + " of stage " + std::to_string(stage) +
                             " asks for asynchronous sync, which its round 0 did not");
  // The centre starts where the replicas do, before any of them steps (after a resume,
  // from the checkpoint's parameters).
  if (round->kind == SyncRound::Kind::elastic && !centres_[stage])
    centres_[stage] = std::make_unique<ElasticCentre>(first_replica(stage));
  kept.emplace(step, *round);
  return *std::move(round);
}

StageWorker& SyncExecutor::first_replica(std::size_t stage) {
  const std::vector<StageWorker*> all = replicas_(stage);
  std::size_t first = 0;
  while (across_ && first + 1 < all.size() && !across_->local(stage, first))
    ++first;
  return *all.at(first);
}

std::vector<std::size_t> SyncExecutor::every_pipeline() const {
  std::vector<std::size_t> every(pipelines_);
  std::iota(every.begin(), every.end(), std::size_t{0});
  return every;
}

void SyncExecutor::restored() {
  if (!elastic_alpha_) return;
  for (std::size_t s = 0; s < centres_.size(); ++s)
    centres_[s] = std::make_unique<ElasticCentre>(first_replica(s));
}

bool SyncExecutor::step_ahead(std::size_t stage, std::size_t pipeline, std::uint64_t step) {
  const SyncRound::Kind kind = round_of(stage, step).kind;
  if (kind == SyncRound::Kind::allreduce_gradients) return false;
  StageWorker& replica = *replicas_(stage).at(pipeline);
  // Planning saw round 0 only: a later round of another kind is refused here.
  if (auto problem = sync::clipping_problem(replica.setup().train.clip_norm, kind, pipelines_))
    throw std::runtime_error(label_ + ", round " + std::to_string(step) + ": train.clip_norm: " + *problem);
  // Each pipeline's gradient is its share of the batch's: scaled to its own batch's mean.
  scale_gradients(replica, 1.0 / batch_share_);
  replica.step(step, 0.0);
  return true;
}

bool SyncExecutor::run(std::size_t stage, std::uint64_t step) {
  const SyncRound round = round_of(stage, step);
  const std::vector<StageWorker*> all = replicas_(stage);
  const auto local = [&](std::size_t p) { return !across_ || across_->local(stage, p); };
  // The groups, checked: disjoint sets of pipelines that exist. In a run of several
  // processes each keeps this process's members, and whether others are elsewhere.
  std::vector<bool> grouped(pipelines_, false);
  std::vector<std::vector<StageWorker*>> groups;
  std::vector<bool> spans;          ///< by group: some members are in other processes
  std::vector<std::size_t> members; ///< by group: how many in all
  std::vector<bool> holds_first;    ///< by group: its first member is local
  for (const auto& named : round.groups) {
    auto& group = groups.emplace_back();
    spans.push_back(false);
    members.push_back(named.size());
    holds_first.push_back(!named.empty() && named.front() < pipelines_ && local(named.front()));
    for (const std::size_t p : named) {
      if (p >= pipelines_ || grouped[p])
        throw std::runtime_error(label_ + ": round " + std::to_string(step) + " of stage " + std::to_string(stage) +
                                 (p >= pipelines_
                                      ? " names pipeline " + std::to_string(p) + " of " + std::to_string(pipelines_)
                                      : " puts pipeline " + std::to_string(p) + " in two groups"));
      grouped[p] = true;
      if (local(p))
        group.push_back(all[p]);
      else
        spans.back() = true;
    }
  }
  // A group that spans processes sums over the processes of its members only.
  const auto across_group = [&](std::size_t g) -> SumAcross {
    return [this, stage, &named = round.groups[g]](const std::vector<Payload>& tensors) {
      across_->sum(stage, named, tensors);
    };
  };
  // Each pipeline's gradient is its share of the batch's: a group's sum is scaled to the
  // whole batch's, a pipeline's own to its own batch's mean.
  const double own = 1.0 / batch_share_;
  if (round.kind == SyncRound::Kind::allreduce_gradients) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const double scale = own / static_cast<double>(members[g]);
      if (!spans[g]) {
        sum_gradients(groups[g], scale);
        agree_buffers(groups[g], buffers_);
        continue;
      }
      if (groups[g].empty()) continue; // its members are all elsewhere
      const SumAcross across = across_group(g);
      sum_gradients_across(groups[g], scale, across);
      agree_buffers_across(groups[g], members[g], holds_first[g], buffers_, across);
    }
    for (std::size_t p = 0; p < pipelines_; ++p)
      if (!grouped[p] && local(p)) scale_gradients(*all[p], own);
    return false;
  }
  // Every replica has stepped on its own gradient as it arrived (step_ahead()).
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.empty()) continue; // its members are all elsewhere
    const SumAcross across = spans[g] ? across_group(g) : SumAcross();
    if (round.kind == SyncRound::Kind::average_parameters) {
      if (spans[g])
        average_parameters_across(group, members[g], across);
      else
        average_parameters(group);
    } else {
      if (!(round.alpha > 0 && round.alpha * static_cast<double>(members[g]) <= 1))
        throw std::runtime_error(label_ + ": elastic rate " + std::to_string(round.alpha) + " for a group of " +
                                 std::to_string(members[g]) + " (it must be in (0, 1 / group size])");
      centres_[stage]->move(group, round.alpha, spans[g] ? &across : nullptr);
    }
    if (spans[g])
      agree_buffers_across(group, members[g], holds_first[g], buffers_, across);
    else
      agree_buffers(group, buffers_);
  }
  return true;
}

std::optional<SyncRound> SyncExecutor::asynchronous() {
  std::optional<SyncRound> first;
  for (std::size_t s = 0; s < centres_.size(); ++s) {
    auto round = policy_->round({s, pipelines_, 0, std::vector<double>(pipelines_, 0.0), options_});
    if (!round) throw std::runtime_error(label_ + ": " + round.error().message);
    const bool asynchronous = sync::is_asynchronous(round->kind);
    if (s == 0 && asynchronous) first = *round;
    if (s > 0 && (asynchronous != first.has_value() || (first && round->kind != first->kind)))
      throw std::runtime_error(label_ + ": stage " + std::to_string(s) +
                               " is synced otherwise than stage 0 (asynchronous for some stages only, or of "
                               "another kind)");
  }
  // The planner refuses these too; a host may run a plan it did not make.
  if (first && first->kind == SyncRound::Kind::scheduled_averaging)
    if (auto problem = sync::scheduling_problem(first->scheduling))
      throw std::runtime_error(label_ + ": returned group scheduling that cannot run: " + *problem);
  if (first && first->kind == SyncRound::Kind::elastic_asynchronous) {
    if (auto problem = sync::elastic_problem(*first)) throw std::runtime_error(label_ + ": " + *problem);
    // The centres start where the replicas do (after a resume, at the checkpoint).
    elastic_alpha_ = first->alpha;
    for (std::size_t s = 0; s < centres_.size(); ++s)
      centres_[s] = std::make_unique<ElasticCentre>(first_replica(s));
  }
  averaging_ = first && first->kind == SyncRound::Kind::scheduled_averaging;
  return first;
}

void SyncExecutor::snapshot(std::size_t stage, std::size_t pipeline) {
  snapshots_.at(stage).at(pipeline).take(*replicas_(stage).at(pipeline));
}

void SyncExecutor::average(std::size_t stage, const std::vector<std::size_t>& pipelines) {
  if (elastic_alpha_) {
    if (pipelines.size() != 1 || pipelines.front() >= pipelines_)
      throw std::logic_error(label_ + ": asynchronous elastic averaging moves one pipeline");
    const std::size_t p = pipelines.front();
    ElasticCentre& centre = *centres_.at(stage);
    if (!across_) return snapshots_.at(stage).at(p).move_with(centre, *elastic_alpha_);
    // Every process with replicas of the stage keeps a copy of its centre and hears of
    // every move, in one order: the mover's process sends its move to the others (or,
    // without a broadcast, sums it in, the others adding nothing).
    const std::vector<std::size_t> every = every_pipeline();
    const SumAcross across = [&](const std::vector<Payload>& tensors) {
      if (across_->broadcast)
        across_->broadcast(stage, every, p, tensors);
      else
        across_->sum(stage, every, tensors);
    };
    if (across_->local(stage, p))
      snapshots_.at(stage).at(p).move_with(centre, *elastic_alpha_, across);
    else
      centre.follow(across);
    return;
  }
  // In a run of several processes, this process's members; the others' are summed in.
  std::vector<AveragingSnapshot*> local;
  bool spans = false;
  for (const std::size_t p : pipelines) {
    if (p >= pipelines_) throw std::logic_error(label_ + ": a group with pipeline " + std::to_string(p));
    if (!across_ || across_->local(stage, p))
      local.push_back(&snapshots_.at(stage).at(p));
    else
      spans = true;
  }
  if (local.empty()) return;
  const bool holds_first = !across_ || across_->local(stage, pipelines.front());
  if (!spans) return AveragingSnapshot::average(local, pipelines.size(), holds_first, buffers_);
  AveragingSnapshot::average(local, pipelines.size(), holds_first, buffers_,
                             [&](const std::vector<Payload>& tensors) { across_->sum(stage, pipelines, tensors); });
}

void SyncExecutor::correct(std::size_t stage, std::size_t pipeline) {
  snapshots_.at(stage).at(pipeline).apply(*replicas_(stage).at(pipeline));
}

void SyncExecutor::serve(std::size_t stage, const std::vector<std::size_t>& pushers) {
  const std::vector<StageWorker*> all = replicas_(stage);
  std::vector<StageWorker*> group; // in a run of several processes, this one's
  for (const std::size_t p : pushers)
    if (!across_ || across_->local(stage, p)) group.push_back(all.at(p));
  // Every replica starts where the first push finds this one (after a resume, at the
  // checkpoint's parameters): none has stepped on its own.
  if (!servers_[stage]) {
    StageWorker& first = first_replica(stage);
    servers_[stage] = std::make_unique<ServerWeights>(first, first.setup().train);
  }
  if (!across_) return servers_[stage]->serve(group, pushers.size(), batch_share_);
  // Every process with replicas of the stage keeps a copy of its server and steps it
  // on every push, in one order, on the pushers' gradients summed over the processes.
  // Pushers of one process alone: theirs are the sum, sent from there as they are.
  std::set<std::size_t> from;
  if (across_->process && across_->broadcast)
    for (const std::size_t p : pushers)
      from.insert(across_->process(stage, p));
  const std::vector<std::size_t> every = every_pipeline();
  if (from.size() == 1)
    servers_[stage]->serve(group, pushers.size(), batch_share_, [&](const std::vector<Payload>& tensors) {
      across_->broadcast(stage, every, pushers.front(), tensors);
    });
  else
    servers_[stage]->serve(group, pushers.size(), batch_share_,
                           [&](const std::vector<Payload>& tensors) { across_->sum(stage, every, tensors); });
}

void SyncExecutor::with_model(const std::function<void()>& use) {
  if (averaging_) {
    for (std::size_t s = 0; s < centres_.size(); ++s) {
      const std::vector<StageWorker*> all = replicas_(s);
      if (!across_) {
        average_parameters(all);
        agree_buffers(all, buffers_);
        continue;
      }
      // Every process with replicas of the stage takes part, its own summed first.
      std::vector<StageWorker*> local;
      for (std::size_t p = 0; p < pipelines_; ++p)
        if (across_->local(s, p)) local.push_back(all[p]);
      const std::vector<std::size_t> every = every_pipeline();
      if (local.empty()) continue;
      const SumAcross across = [&](const std::vector<Payload>& tensors) { across_->sum(s, every, tensors); };
      average_parameters_across(local, pipelines_, across);
      agree_buffers_across(local, pipelines_, across_->local(s, 0), buffers_, across);
    }
    use();
    return;
  }
  const auto swap = [&] {
    for (std::size_t s = 0; s < centres_.size(); ++s) {
      if (centres_[s]) centres_[s]->swap(*replicas_(s).front());
      if (servers_[s]) servers_[s]->swap(*replicas_(s).front());
    }
  };
  swap();
  try {
    use();
  } catch (...) {
    swap();
    throw;
  }
  swap();
}

} // namespace actorpipe::train
