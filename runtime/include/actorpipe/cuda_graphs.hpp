#pragma once

/// Which stages on CUDA devices replay their forward and backward of a micro-batch as
/// CUDA graphs instead of launching every operator from the host (train.cuda_graphs:
/// true, false or "auto"). Graphs cost memory: each micro-batch a stage holds at once
/// keeps its temporaries in a pool of its own, which the plan's memory estimate counts.

namespace actorpipe {

enum class CudaGraphs {
  off, ///< none: every operator is launched from the host
  on,  ///< every stage that can
  /// those whose GPU computes another stage of the same process too ("auto"). Eagerly,
  /// LibTorch runs every backward on a GPU through that GPU's one autograd thread per
  /// process, so stages sharing a GPU wait on the host; a stage alone on its GPU keeps
  /// it busy eagerly, without the graphs' memory.
  shared_gpus,
};

} // namespace actorpipe
