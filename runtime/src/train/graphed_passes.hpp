#pragma once

/// A stage's forward and backward of one micro-batch as two CUDA graphs
/// (train.cuda_graphs), replayed with one launch each. Eagerly, every operator costs the
/// host a launch and autograd's bookkeeping, once per micro-batch: where several stages
/// share a GPU, their micro-batches are small, and every stage's backward runs on
/// LibTorch's one autograd thread for that GPU, the host, not the GPU, sets the pace.
///
/// The graphs of a micro-batch keep its activations from the forward's replay to the
/// backward's, so a stage holds one pair per micro-batch it has in flight (a slot), each
/// in a memory pool of its own, captured the first time the schedule needs that many:
/// the run's first steps. A micro-batch of another shape than the captured one (an
/// epoch's short last batch) is computed eagerly. LibTorch inside: include only from
/// the training code.

#include <torch/torch.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorpipe::train {

class GraphedPasses {
public:
  /// What the stage computes, with autograd: from its input, the activation it passes
  /// on; on the last stage, from its input and the labels, the micro-batch's mean loss.
  using Compute = std::function<torch::Tensor(const torch::Tensor& input, const torch::Tensor& labels)>;

  /// Whether this build can capture CUDA graphs on `device` (a CUDA device, LibTorch
  /// built with CUDA).
  static bool possible(c10::Device device);

  /// Graphs of `compute` on `device`, whose weight gradients go to `parameters` (those
  /// that require one) and which computes the gradient of its input where
  /// `input_gradient`. `loss_scale`, where defined (fp16's dynamic scale, updated in
  /// place), multiplies the loss the last stage's backward starts from. `buffers`
  /// (BatchNorm's running statistics) are put back after the eager passes that ready
  /// the capture, so that a run counts each micro-batch once.
  GraphedPasses(c10::Device device, Compute compute, std::vector<torch::Tensor> parameters,
                std::vector<torch::Tensor> buffers, bool input_gradient, torch::Tensor loss_scale);
  ~GraphedPasses();
  GraphedPasses(const GraphedPasses&) = delete;
  GraphedPasses& operator=(const GraphedPasses&) = delete;

  struct Forwarded {
    std::size_t slot;     ///< for backward()
    torch::Tensor output; ///< a copy of the activation (or loss) the slot computed
  };
  /// The forward of `input` (with `labels` on the last stage; the backward then starts
  /// from the loss times `scale`), replayed in a free slot, captured first where none is
  /// free; on the current stream (the stage's). None where it computes eagerly instead:
  /// `input` is not of the captured shape, or capturing failed (why() says why; it is
  /// then never tried again).
  std::optional<Forwarded> forward(const torch::Tensor& input, const torch::Tensor& labels = {}, double scale = 1);
  /// The backward of the micro-batch in `slot` from its output's gradient (none on the
  /// last stage), replayed: its weight gradients are added to the parameters' (`grad`),
  /// and it returns a copy of its input's gradient (none where not asked for). The slot
  /// is then free.
  torch::Tensor backward(std::size_t slot, const torch::Tensor& output_gradient = {});

  /// Whether capturing failed, and why (empty: it did not).
  const std::string& why() const { return failed_; }
  /// Slots captured so far.
  std::size_t slots() const;

  struct Slot;  ///< one micro-batch's pair of graphs, with what they read and write
  struct State; ///< the stage's compute and its slots

private:
  std::unique_ptr<State> state_;
  std::string failed_;
};

} // namespace actorpipe::train
