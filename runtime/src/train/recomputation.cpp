/// recomputed(): a custom gradient node that makes its forward again.

#include "train/recomputation.hpp"

#include "train/split_backward.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <optional>

namespace actorpipe::train {

namespace {

namespace autograd = torch::autograd;

/// Next edges: the input's, then each parameter's.
class RecomputedBackward final : public autograd::Node {
public:
  RecomputedBackward(std::function<torch::Tensor(const torch::Tensor&)> again, torch::Tensor input,
                     std::vector<torch::Tensor> parameters)
      : again_(std::move(again)), input_(std::move(input)), parameters_(std::move(parameters)) {}

  std::string name() const override { return "RecomputedBackward"; }

  autograd::variable_list apply(autograd::variable_list&& grads) override {
    autograd::variable_list out(1 + parameters_.size());
    std::vector<std::size_t> slots;
    if (task_should_compute_output(0)) slots.push_back(0);
    for (std::size_t i = 0; i < parameters_.size(); ++i)
      if (task_should_compute_output(1 + i)) slots.push_back(1 + i);
    if (slots.empty() || !grads.front().defined()) return out;
    torch::Tensor x = input_.detach();
    if (task_should_compute_output(0)) x.requires_grad_(true);
    const bool input_only = slots.size() == 1 && slots.front() == 0 && !parameters_.empty();
    if (weights_) {
      // The W of a split backward (schedule.hpp): the weights' half of the run made
      // again in the I, kept since.
      const std::vector<torch::Tensor> taken = weights_->take(parameters_);
      weights_.reset();
      for (const std::size_t slot : slots)
        if (slot > 0) out[slot] = taken[slot - 1];
      return out;
    }
    torch::Tensor y;
    {
      const torch::AutoGradMode on(true);
      y = again_(x);
    }
    if (input_only) {
      // The I of a split backward: the input's half now, and the weights' half of the
      // same graph kept for the W, which then runs the forward no more.
      auto [input_gradient, weights] = WeightGradients::input_gradient(y, grads.front(), x, parameters_);
      out[0] = input_gradient;
      weights_.emplace(std::move(weights));
      return out;
    }
    std::vector<torch::Tensor> wrt;
    for (const std::size_t slot : slots)
      wrt.push_back(slot == 0 ? x : parameters_[slot - 1]);
    const autograd::variable_list g = autograd::grad({y}, wrt, {grads.front()}, /*retain_graph=*/false,
                                                     /*create_graph=*/false, /*allow_unused=*/true);
    for (std::size_t k = 0; k < slots.size(); ++k)
      out[slots[k]] = g[k];
    return out;
  }

  void release_variables() override {
    input_ = torch::Tensor();
    weights_.reset();
  }

private:
  std::function<torch::Tensor(const torch::Tensor&)> again_;
  torch::Tensor input_;
  std::vector<torch::Tensor> parameters_;
  std::optional<WeightGradients> weights_; ///< what a split backward's W takes, between its I and it
};

autograd::Edge edge_of(const torch::Tensor& t) {
  return t.defined() && t.requires_grad() ? autograd::impl::gradient_edge(t) : autograd::Edge();
}

} // namespace

torch::Tensor recomputed(std::function<torch::Tensor(const torch::Tensor&)> again,
                         const std::function<torch::Tensor(torch::Tensor)>& first, const torch::Tensor& x,
                         const std::vector<torch::Tensor>& parameters) {
  torch::Tensor y;
  {
    const torch::NoGradGuard no_grad;
    y = first(x);
  }
  // A view carries its base's history, and the input its own: the node's output is a
  // tensor of its own.
  if (y.is_view() || y.is_same(x)) y = y.clone();
  autograd::edge_list edges{edge_of(x)};
  for (const torch::Tensor& p : parameters)
    edges.push_back(edge_of(p));
  const std::shared_ptr<RecomputedBackward> node(new RecomputedBackward(std::move(again), x.detach(), parameters),
                                                 autograd::deleteNode);
  node->set_next_edges(std::move(edges));
  autograd::create_gradient_edge(y, node);
  return y;
}

} // namespace actorpipe::train
