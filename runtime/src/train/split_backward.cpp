/// WeightGradients: the I and W halves of a backward, over the autograd graph.

#include "train/split_backward.hpp"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace actorpipe::train {

namespace autograd = torch::autograd;
using NodePtr = std::shared_ptr<autograd::Node>;

/// What the W runs: per group of weights that meet the input's path at the same nodes,
/// those nodes with the gradients that reached them in the I, and the weights. Or, where
/// the input needed no gradient, the whole backward from the output.
struct WeightGradients::Groups {
  struct Group {
    std::vector<NodePtr> intermediates;
    std::vector<autograd::variable_list> reached; ///< by intermediate: its incoming gradients in the I
    std::vector<std::size_t> parameters;          ///< indices into the stage's parameters
  };
  std::vector<Group> groups;
  torch::Tensor whole_output, whole_gradient; ///< the whole backward's, where the I did nothing
  bool done = false;
};

namespace {

/// Records the gradients that reach an intermediate during the I; lets them through.
class Capture final : public autograd::FunctionPreHook {
public:
  Capture(std::weak_ptr<WeightGradients::Groups> groups, std::size_t group, std::size_t intermediate)
      : groups_(std::move(groups)), group_(group), intermediate_(intermediate) {}
  autograd::variable_list operator()(const autograd::variable_list& grads) override {
    if (auto groups = groups_.lock(); groups && !groups->done) groups->groups[group_].reached[intermediate_] = grads;
    return grads;
  }

private:
  std::weak_ptr<WeightGradients::Groups> groups_; ///< weak: the node must not keep its hook's owner alive
  std::size_t group_, intermediate_;
};

/// The leaf node of a tensor that requires a gradient: its grad accumulator.
NodePtr node_of(const torch::Tensor& t) { return t.grad_fn() ? t.grad_fn() : autograd::impl::grad_accumulator(t); }

/// For each node reached from `root`, the nodes that lead to it (its reverse edges).
std::unordered_map<autograd::Node*, std::vector<autograd::Node*>> reverse_graph(autograd::Node* root) {
  std::unordered_map<autograd::Node*, std::vector<autograd::Node*>> parents;
  std::unordered_set<autograd::Node*> seen{root};
  std::deque<autograd::Node*> queue{root};
  while (!queue.empty()) {
    autograd::Node* node = queue.front();
    queue.pop_front();
    for (const autograd::Edge& edge : node->next_edges()) {
      autograd::Node* next = edge.function.get();
      if (!next) continue;
      parents[next].push_back(node);
      if (seen.insert(next).second) queue.push_back(next);
    }
  }
  return parents;
}

/// The nodes that lead to `start`, `start` among them, stopping at (and collecting in
/// `met`) the nodes of `stop`.
std::unordered_set<autograd::Node*>
leading_to(autograd::Node* start, const std::unordered_map<autograd::Node*, std::vector<autograd::Node*>>& parents,
           const std::unordered_set<autograd::Node*>& stop, std::set<autograd::Node*>* met) {
  std::unordered_set<autograd::Node*> closure{start};
  std::deque<autograd::Node*> queue{start};
  while (!queue.empty()) {
    autograd::Node* node = queue.front();
    queue.pop_front();
    const auto it = parents.find(node);
    if (it == parents.end()) continue;
    for (autograd::Node* parent : it->second) {
      if (closure.count(parent)) continue;
      if (stop.count(parent)) {
        if (met) met->insert(parent);
        continue;
      }
      closure.insert(parent);
      queue.push_back(parent);
    }
  }
  return closure;
}

} // namespace

WeightGradients::WeightGradients(std::shared_ptr<Groups> groups) : groups_(std::move(groups)) {}
WeightGradients::WeightGradients(WeightGradients&&) noexcept = default;
WeightGradients& WeightGradients::operator=(WeightGradients&&) noexcept = default;
WeightGradients::~WeightGradients() = default;

std::pair<torch::Tensor, WeightGradients>
WeightGradients::input_gradient(const torch::Tensor& output, const torch::Tensor& output_gradient,
                                const torch::Tensor& input, const std::vector<torch::Tensor>& parameters) {
  auto groups = std::make_shared<Groups>();
  if (!input.defined() || !input.requires_grad() || !output.grad_fn()) {
    groups->whole_output = output;
    groups->whole_gradient = output_gradient;
    return {torch::Tensor(), WeightGradients(std::move(groups))};
  }
  const NodePtr root = output.grad_fn();
  const auto parents = reverse_graph(root.get());
  // The input's path: every node the input's gradient passes through.
  const std::unordered_set<autograd::Node*> input_path =
      leading_to(node_of(input).get(), parents, std::unordered_set<autograd::Node*>{}, nullptr);
  // Each weight's intermediates: where its own branch meets the input's path. Weights
  // that meet it at a node in common are one group: the W runs that node once for them.
  std::map<autograd::Node*, std::size_t> group_of; // by intermediate
  std::unordered_map<autograd::Node*, NodePtr> owned;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].requires_grad()) continue;
    const NodePtr accumulator = autograd::impl::grad_accumulator(parameters[i]);
    if (!accumulator || !parents.count(accumulator.get())) continue; // not used by this micro-batch
    std::set<autograd::Node*> met;
    (void)leading_to(accumulator.get(), parents, input_path, &met);
    std::optional<std::size_t> group;
    for (autograd::Node* node : met)
      if (const auto it = group_of.find(node); it != group_of.end()) group = it->second;
    if (!group) {
      group = groups->groups.size();
      groups->groups.emplace_back();
    }
    Groups::Group& g = groups->groups[*group];
    g.parameters.push_back(i);
    for (autograd::Node* node : met) {
      if (group_of.count(node)) continue;
      group_of[node] = *group;
      g.intermediates.push_back(node->getptr());
    }
  }
  for (std::size_t g = 0; g < groups->groups.size(); ++g) {
    Groups::Group& group = groups->groups[g];
    group.reached.resize(group.intermediates.size());
    for (std::size_t n = 0; n < group.intermediates.size(); ++n)
      group.intermediates[n]->add_pre_hook(std::make_unique<Capture>(groups, g, n));
  }
  const autograd::variable_list gradients =
      autograd::grad({output}, {input}, {output_gradient}, /*retain_graph=*/true, /*create_graph=*/false,
                     /*allow_unused=*/true);
  return {gradients.front(), WeightGradients(std::move(groups))};
}

void WeightGradients::accumulate(const std::vector<torch::Tensor>& parameters) {
  if (groups_ && !groups_->done && groups_->whole_output.defined()) {
    // The whole backward, into the weights' grad as LibTorch accumulates it.
    groups_->done = true;
    if (groups_->whole_output.requires_grad()) groups_->whole_output.backward(groups_->whole_gradient);
    groups_->whole_output = groups_->whole_gradient = torch::Tensor();
    return;
  }
  const std::vector<torch::Tensor> grads = take(parameters);
  const torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!grads[i].defined()) continue;
    torch::Tensor p = parameters[i];
    if (p.grad().defined())
      p.mutable_grad().add_(grads[i]);
    else
      p.mutable_grad() = grads[i];
  }
}

std::vector<torch::Tensor> WeightGradients::take(const std::vector<torch::Tensor>& parameters) {
  if (!groups_ || groups_->done) throw std::logic_error("a weight gradient run twice, or before its input gradient");
  groups_->done = true;
  std::vector<torch::Tensor> out(parameters.size());
  if (groups_->whole_output.defined()) {
    std::vector<torch::Tensor> wrt;
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < parameters.size(); ++i)
      if (parameters[i].requires_grad()) {
        wrt.push_back(parameters[i]);
        index.push_back(i);
      }
    if (!wrt.empty() && groups_->whole_output.requires_grad()) {
      const autograd::variable_list grads = autograd::grad({groups_->whole_output}, wrt, {groups_->whole_gradient},
                                                           /*retain_graph=*/false, /*create_graph=*/false,
                                                           /*allow_unused=*/true);
      for (std::size_t k = 0; k < index.size(); ++k)
        out[index[k]] = grads[k];
    }
    groups_->whole_output = groups_->whole_gradient = torch::Tensor();
    return out;
  }
  for (Groups::Group& group : groups_->groups) {
    autograd::edge_list roots;
    autograd::variable_list reached;
    for (std::size_t n = 0; n < group.intermediates.size(); ++n)
      for (std::size_t k = 0; k < group.reached[n].size(); ++k)
        if (group.reached[n][k].defined()) {
          roots.emplace_back(group.intermediates[n], static_cast<std::uint32_t>(k));
          reached.push_back(group.reached[n][k]);
        }
    if (roots.empty()) continue; // no gradient came this way
    autograd::edge_list weights;
    for (const std::size_t i : group.parameters)
      weights.push_back(autograd::impl::gradient_edge(parameters[i]));
    const autograd::variable_list grads = autograd::Engine::get_default_engine().execute(
        roots, reached, /*keep_graph=*/false, /*create_graph=*/false, /*accumulate_grad=*/false, weights);
    for (std::size_t j = 0; j < group.parameters.size(); ++j)
      out[group.parameters[j]] = grads[j];
  }
  groups_->groups.clear(); // the graph's nodes, and the activations they hold, go
  return out;
}

} // namespace actorpipe::train
