/// recomputed(): a custom gradient node that makes its forward again.

#include "train/recomputation.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

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
    std::vector<torch::Tensor> wrt;
    std::vector<std::size_t> slots;
    torch::Tensor x = input_.detach();
    if (should_compute_output(0)) {
      x.requires_grad_(true);
      wrt.push_back(x);
      slots.push_back(0);
    }
    for (std::size_t i = 0; i < parameters_.size(); ++i)
      if (should_compute_output(1 + i)) {
        wrt.push_back(parameters_[i]);
        slots.push_back(1 + i);
      }
    if (wrt.empty() || !grads.front().defined()) return out;
    torch::Tensor y;
    {
      const torch::AutoGradMode on(true);
      y = again_(x);
    }
    const autograd::variable_list g =
        autograd::grad({y}, wrt, {grads.front()}, /*retain_graph=*/false, /*create_graph=*/false,
                       /*allow_unused=*/true);
    for (std::size_t k = 0; k < slots.size(); ++k)
      out[slots[k]] = g[k];
    return out;
  }

  void release_variables() override { input_ = torch::Tensor(); }

private:
  std::function<torch::Tensor(const torch::Tensor&)> again_;
  torch::Tensor input_;
  std::vector<torch::Tensor> parameters_;
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
