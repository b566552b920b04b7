/// Sync operations on the replicas of one stage index (see replica_sync.hpp).

#include "train/replica_sync.hpp"

#include "train/lr_schedule.hpp"
#include "train/stage_worker_impl.hpp"
#include "train/step_parts.hpp"
#include "train/tensor_box.hpp"

namespace actorpipe::train {

namespace {

/// Exchanges a copy's parameters (a centre, a server's) with a replica's.
void swap_parameters(std::vector<torch::Tensor>& copy, StageWorker& replica) {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < copy.size(); ++i) {
    torch::Tensor& x = replica.impl().parameters[i];
    const torch::Tensor kept = x.clone();
    x.copy_(copy[i]);
    copy[i].copy_(kept);
  }
}

} // namespace

void agree_buffers(const std::vector<StageWorker*>& replicas, BufferSync how) {
  if (replicas.size() < 2) return;
  torch::NoGradGuard no_grad;
  const auto& first = replicas.front()->impl().buffers;
  for (std::size_t i = 0; i < first.size(); ++i) {
    if (how == BufferSync::average && first[i].is_floating_point()) {
      torch::Tensor sum = first[i].clone();
      for (std::size_t r = 1; r < replicas.size(); ++r)
        sum.add_(replicas[r]->impl().buffers[i]);
      sum.div_(static_cast<double>(replicas.size()));
      for (StageWorker* r : replicas)
        r->impl().buffers[i].copy_(sum);
    } else {
      for (std::size_t r = 1; r < replicas.size(); ++r)
        replicas[r]->impl().buffers[i].copy_(first[i]);
    }
  }
}

void sum_gradients_across(const std::vector<StageWorker*>& local, double scale, const SumAcross& across) {
  // The sums go across as views of one flat buffer: no copies on the way.
  local.front()->impl().buckets.bind(local.front()->impl().parameters);
  sum_gradients(local, 1);
  torch::NoGradGuard no_grad;
  std::vector<Payload> sums;
  for (torch::Tensor& parameter : local.front()->impl().parameters)
    if (parameter.grad().defined()) sums.push_back(wrap(parameter.grad()));
  across(sums);
  if (scale != 1)
    for (const Payload& sum : sums)
      sum->tensor.mul_(scale);
}

void agree_buffers_across(const std::vector<StageWorker*>& local, std::size_t members, bool holds_first, BufferSync how,
                          const SumAcross& across) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor>& first = local.front()->impl().buffers;
  // Floating-point and integer buffers apart: one flat all-reduce takes one type.
  for (const bool floating : {true, false}) {
    std::vector<Payload> parts;
    for (std::size_t i = 0; i < first.size(); ++i) {
      if (first[i].is_floating_point() != floating) continue;
      torch::Tensor part = first[i].clone();
      if (how == BufferSync::average && floating) {
        for (std::size_t r = 1; r < local.size(); ++r)
          part.add_(local[r]->impl().buffers[i]);
      } else if (!holds_first) {
        part.zero_(); // the group's first replica's, from its process alone
      }
      parts.push_back(wrap(part));
    }
    if (parts.empty()) continue;
    across(parts);
    std::size_t at = 0;
    for (std::size_t i = 0; i < first.size(); ++i) {
      if (first[i].is_floating_point() != floating) continue;
      torch::Tensor agreed = parts[at++]->tensor;
      if (how == BufferSync::average && floating) agreed.div_(static_cast<double>(members));
      for (StageWorker* r : local)
        r->impl().buffers[i].copy_(agreed);
    }
  }
}

void sum_gradients(const std::vector<StageWorker*>& replicas, double scale) {
  if (replicas.empty()) return;
  torch::NoGradGuard no_grad;
  const auto& first = replicas.front()->impl().parameters;
  for (std::size_t i = 0; i < first.size(); ++i) {
    torch::Tensor sum = first[i].mutable_grad();
    if (!sum.defined()) continue;
    for (std::size_t r = 1; r < replicas.size(); ++r)
      if (const torch::Tensor& g = replicas[r]->impl().parameters[i].grad(); g.defined()) sum.add_(g);
    if (scale != 1) sum.mul_(scale);
    // Every replica's optimizer reads this one tensor (optimizers only read
    // gradients), so nothing is copied back.
    for (std::size_t r = 1; r < replicas.size(); ++r)
      replicas[r]->impl().parameters[i].mutable_grad() = sum;
  }
  if (replicas.size() > 1)
    for (StageWorker* r : replicas)
      r->impl().shared_gradients = true;
}

void scale_gradients(StageWorker& replica, double factor) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : replica.impl().parameters)
    if (p.mutable_grad().defined()) p.mutable_grad().mul_(factor);
}

void average_parameters(const std::vector<StageWorker*>& replicas) {
  if (replicas.size() < 2) return;
  torch::NoGradGuard no_grad;
  const auto& first = replicas.front()->impl().parameters;
  for (std::size_t i = 0; i < first.size(); ++i) {
    torch::Tensor mean = first[i].clone();
    for (std::size_t r = 1; r < replicas.size(); ++r)
      mean.add_(replicas[r]->impl().parameters[i]);
    mean.div_(static_cast<double>(replicas.size()));
    for (StageWorker* r : replicas)
      r->impl().parameters[i].copy_(mean);
  }
}

void average_parameters_across(const std::vector<StageWorker*>& local, std::size_t members, const SumAcross& across) {
  torch::NoGradGuard no_grad;
  const auto& first = local.front()->impl().parameters;
  std::vector<Payload> sums;
  for (std::size_t i = 0; i < first.size(); ++i) {
    torch::Tensor sum = first[i].clone();
    for (std::size_t r = 1; r < local.size(); ++r)
      sum.add_(local[r]->impl().parameters[i]);
    sums.push_back(wrap(sum));
  }
  across(sums);
  for (std::size_t i = 0; i < first.size(); ++i) {
    const torch::Tensor& mean = sums[i]->tensor;
    mean.div_(static_cast<double>(members));
    for (StageWorker* r : local)
      r->impl().parameters[i].copy_(mean);
  }
}

struct ElasticCentre::Impl {
  std::vector<torch::Tensor> centre;
};

struct AveragingSnapshot::Impl {
  std::vector<torch::Tensor> parameters, buffers; ///< as taken, then the change
  bool changed = false;
};

AveragingSnapshot::AveragingSnapshot() : impl_(std::make_unique<Impl>()) {}
AveragingSnapshot::~AveragingSnapshot() = default;
AveragingSnapshot::AveragingSnapshot(AveragingSnapshot&&) noexcept = default;

namespace {

/// `copy` ← `from`, allocated at the first copy.
void keep(std::vector<torch::Tensor>& copy, const std::vector<torch::Tensor>& from) {
  if (copy.size() != from.size()) {
    copy.clear();
    for (const torch::Tensor& t : from)
      copy.push_back(t.detach().clone());
    return;
  }
  for (std::size_t i = 0; i < from.size(); ++i)
    copy[i].copy_(from[i]);
}

} // namespace

void AveragingSnapshot::take(StageWorker& replica) {
  torch::NoGradGuard no_grad;
  keep(impl_->parameters, replica.impl().parameters);
  keep(impl_->buffers, replica.impl().buffers);
  impl_->changed = false;
}

void AveragingSnapshot::average(const std::vector<AveragingSnapshot*>& local, std::size_t members, bool holds_first,
                                BufferSync buffers, const SumAcross& across) {
  if (members < 2 || local.empty()) return;
  torch::NoGradGuard no_grad;
  const double n = static_cast<double>(members);
  const Impl& first = *local.front()->impl_;
  std::vector<Payload> sums;
  for (std::size_t i = 0; i < first.parameters.size(); ++i) {
    torch::Tensor sum = first.parameters[i].clone();
    for (std::size_t r = 1; r < local.size(); ++r)
      sum.add_(local[r]->impl_->parameters[i]);
    sums.push_back(wrap(sum));
  }
  if (across) across(sums);
  for (std::size_t i = 0; i < first.parameters.size(); ++i) {
    const torch::Tensor mean = sums[i]->tensor.div_(n);
    for (AveragingSnapshot* member : local)
      member->impl_->parameters[i].neg_().add_(mean);
  }
  // Buffers agree as agree_buffers() has them: floating-point ones to their mean under
  // BufferSync::average, the rest to the group's first member's (from its process alone). One
  // flat all-reduce takes one type: floating-point and integer buffers apart.
  for (const bool floating : {true, false}) {
    const bool mean = buffers == BufferSync::average && floating;
    std::vector<std::size_t> at;
    std::vector<Payload> agreed;
    for (std::size_t i = 0; i < first.buffers.size(); ++i) {
      if (first.buffers[i].is_floating_point() != floating) continue;
      torch::Tensor part = first.buffers[i].clone();
      if (mean)
        for (std::size_t r = 1; r < local.size(); ++r)
          part.add_(local[r]->impl_->buffers[i]);
      else if (!holds_first)
        part.zero_();
      at.push_back(i);
      agreed.push_back(wrap(part));
    }
    if (agreed.empty()) continue;
    if (across) across(agreed);
    for (std::size_t k = 0; k < at.size(); ++k) {
      const torch::Tensor& value = agreed[k]->tensor;
      if (mean) value.div_(n);
      for (AveragingSnapshot* member : local)
        member->impl_->buffers[at[k]].neg_().add_(value);
    }
  }
  for (AveragingSnapshot* member : local)
    member->impl_->changed = true;
}

void AveragingSnapshot::move_with(ElasticCentre& centre, double alpha, const SumAcross& across) {
  torch::NoGradGuard no_grad;
  std::vector<Payload> moves;
  for (std::size_t i = 0; i < impl_->parameters.size(); ++i) {
    torch::Tensor& change = impl_->parameters[i];
    change.sub_(centre.impl_->centre[i]).mul_(alpha); // alpha · d
    if (across) moves.push_back(wrap(change));
  }
  if (across) across(moves); // the others add nothing: still alpha · d
  for (std::size_t i = 0; i < impl_->parameters.size(); ++i) {
    torch::Tensor& change = impl_->parameters[i];
    centre.impl_->centre[i].add_(change);
    change.neg_();
  }
  for (torch::Tensor& b : impl_->buffers)
    b.zero_();
  impl_->changed = true;
}

void AveragingSnapshot::apply(StageWorker& replica) {
  if (!impl_->changed) return;
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < impl_->parameters.size(); ++i)
    replica.impl().parameters[i].add_(impl_->parameters[i]);
  for (std::size_t i = 0; i < impl_->buffers.size(); ++i)
    replica.impl().buffers[i].add_(impl_->buffers[i]);
  impl_->changed = false;
}

ElasticCentre::ElasticCentre(StageWorker& initial) : impl_(std::make_unique<Impl>()) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : initial.impl().parameters)
    impl_->centre.push_back(p.detach().clone());
}

ElasticCentre::~ElasticCentre() = default;
ElasticCentre::ElasticCentre(ElasticCentre&&) noexcept = default;

void ElasticCentre::move(const std::vector<StageWorker*>& group, double alpha, const SumAcross* across) {
  torch::NoGradGuard no_grad;
  std::vector<Payload> pulls;
  for (std::size_t i = 0; i < impl_->centre.size(); ++i) {
    const torch::Tensor& c = impl_->centre[i];
    torch::Tensor pull = torch::zeros_like(c);
    for (StageWorker* r : group) {
      torch::Tensor& x = r->impl().parameters[i];
      const torch::Tensor d = x - c; // against the centre before it moves
      pull.add_(d);
      x.sub_(d, alpha);
    }
    pulls.push_back(wrap(pull));
  }
  if (across) (*across)(pulls);
  for (std::size_t i = 0; i < impl_->centre.size(); ++i)
    impl_->centre[i].add_(pulls[i]->tensor, alpha);
}

void ElasticCentre::swap(StageWorker& replica) { swap_parameters(impl_->centre, replica); }

void ElasticCentre::follow(const SumAcross& across) {
  torch::NoGradGuard no_grad;
  std::vector<Payload> moves;
  for (const torch::Tensor& c : impl_->centre)
    moves.push_back(wrap(torch::zeros_like(c)));
  across(moves);
  for (std::size_t i = 0; i < impl_->centre.size(); ++i)
    impl_->centre[i].add_(moves[i]->tensor);
}

struct ServerWeights::Impl {
  std::vector<torch::Tensor> parameters;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  TrainOptions train;
  std::uint64_t total_steps = 0;
  /// Whole steps taken, as the fractions of them add up: the learning rate's schedule
  /// reads the step it is in.
  double steps = 0;
};

ServerWeights::ServerWeights(StageWorker& initial, const TrainOptions& train) : impl_(std::make_unique<Impl>()) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : initial.impl().parameters)
    impl_->parameters.push_back(p.detach().clone().requires_grad_(p.requires_grad()));
  if (!impl_->parameters.empty()) impl_->optimizer = make_optimizer(impl_->parameters, train);
  impl_->train = train;
  impl_->total_steps = initial.impl().total_steps;
  impl_->steps = static_cast<double>(initial.impl().first_step - 1);
}

ServerWeights::~ServerWeights() = default;
ServerWeights::ServerWeights(ServerWeights&&) noexcept = default;

void ServerWeights::serve(const std::vector<StageWorker*>& pushers, std::size_t pushes, double share,
                          const SumAcross& across) {
  if ((pushers.empty() && !across) || pushes == 0 || !impl_->optimizer) return;
  torch::NoGradGuard no_grad;
  const std::size_t n = impl_->parameters.size();
  std::vector<torch::Tensor> sums(n);
  for (std::size_t i = 0; i < n; ++i)
    for (StageWorker* r : pushers) {
      torch::Tensor& g = r->impl().parameters[i].mutable_grad();
      if (!g.defined()) continue;
      if (sums[i].defined())
        sums[i].add_(g);
      else
        sums[i] = g.clone();
      g = torch::Tensor();
    }
  if (across) {
    // Every process's copy steps on the sum of every pusher's gradients. A parameter
    // for which no pusher anywhere has one stays without (the optimizer skips it):
    // each process adds how many of its pushers had one.
    torch::Tensor counted = torch::zeros({static_cast<std::int64_t>(n)}, torch::kFloat64);
    std::vector<Payload> parts;
    for (std::size_t i = 0; i < n; ++i) {
      if (sums[i].defined())
        counted[static_cast<std::int64_t>(i)] = 1.0;
      else
        sums[i] = torch::zeros_like(impl_->parameters[i]);
      parts.push_back(wrap(sums[i]));
    }
    across(parts);
    across({wrap(counted)});
    for (std::size_t i = 0; i < n; ++i)
      if (counted[static_cast<std::int64_t>(i)].item<double>() == 0) sums[i] = torch::Tensor();
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (sums[i].defined()) sums[i].mul_(1.0 / static_cast<double>(pushes));
    impl_->parameters[i].mutable_grad() = sums[i];
  }
  const double fraction = static_cast<double>(pushes) * share;
  set_lr(*impl_->optimizer,
         lr_at(impl_->train, static_cast<std::uint64_t>(impl_->steps + 1e-9) + 1, impl_->total_steps));
  step_fraction(*impl_->optimizer, fraction);
  impl_->steps += fraction;
  for (std::size_t i = 0; i < n; ++i) {
    impl_->parameters[i].mutable_grad() = torch::Tensor();
    for (StageWorker* r : pushers)
      r->impl().parameters[i].copy_(impl_->parameters[i]);
  }
}

void ServerWeights::swap(StageWorker& replica) { swap_parameters(impl_->parameters, replica); }

} // namespace actorpipe::train
