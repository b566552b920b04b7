#pragma once

/// The built-in models, as the runtime sees them: an ordered list of blocks, each cut
/// into units (its sub-blocks, or the whole block) that line up with a profile's
/// blocks and sub-blocks, so that any plan's cuts fall between units.
/// LibTorch inside: include only from the training code.

#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/model_profile.hpp>

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace actorpipe::train {

/// One unit: a block, or one sub-block of it.
struct ModelUnit {
  std::string name;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  std::vector<torch::Tensor> parameters;
  /// State that is not trained but kept (BatchNorm's running statistics): saved in
  /// checkpoints and made to agree across pipelines after each step.
  std::vector<torch::Tensor> buffers;
  std::function<void(bool)> set_training;
  /// Whether its forward draws random numbers in training (dropout): such draws come
  /// from the default generator of the device they compute on, which its stages share.
  bool draws = false;
  std::shared_ptr<void> owner; ///< keeps the modules the functions use alive
};

struct ModelBlock {
  std::string name;
  std::vector<ModelUnit> units; ///< one per sub-block, or one for the whole block
  bool has_sub_blocks = false;
};

/// What the data looks like to a model.
struct DataShape {
  std::vector<std::int64_t> sample; ///< one input sample's shape
  std::int64_t classes = 10;        ///< logits per output position
  bool tokens = false;              ///< inputs are token ids (gpt)
  std::string source;               ///< the file or array the samples come from, for messages; may be empty
};

struct Model {
  std::string name;
  std::vector<ModelBlock> blocks;
  /// The model's own forward where it has one besides its blocks' (a TorchScript
  /// module's): the blocks in order must compute the same, or cutting between them
  /// would train another model.
  std::function<torch::Tensor(const torch::Tensor&)> whole;
  std::string origin; ///< the file it was loaded from, if any, for messages
  /// A TorchScript model's module, whose tensors its units hold: what an export saves
  /// under the names it came with. None for a built-in model.
  std::shared_ptr<torch::jit::Module> script;

  /// The unit where `cut` starts; `cut` must fall on a unit.
  const ModelUnit& unit(const Cut& cut) const { return blocks[cut.block].units[cut.sub]; }
  /// Units from `begin` to `end` (exclusive) in order.
  std::vector<const ModelUnit*> units(const Cut& begin, const Cut& end) const;
  /// Training mode (dropout on, BatchNorm on batch statistics) or evaluation mode.
  void set_training(bool on) const;
  /// A profile with this model's blocks and sub-blocks and no figures yet.
  ModelProfile skeleton() const;
};

/// Builds `options.zoo` for data of `shape`, its parameters drawn from `seed`: the
/// same seed gives the same parameters.
Result<Model> build_model(const ModelOptions& options, const DataShape& shape, std::uint64_t seed);
/// `job`'s model from its seed; an error about a model key says where the job sets it.
Result<Model> build_model(const JobSpec& job, const DataShape& shape);

} // namespace actorpipe::train
