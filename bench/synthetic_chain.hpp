#pragma once

/// A synthetic model for the planner benchmarks: a long chain of transformer-like
/// blocks of uneven cost, larger than any shipped profile.

#include <actorpipe/model_profile.hpp>

#include <string>

namespace actorpipe::bench {

/// A chain of `blocks` blocks of uneven cost, with attention/MLP-like sub-blocks.
inline ModelProfile synthetic_chain(std::size_t blocks) {
  ModelProfile p;
  p.name = "chain-" + std::to_string(blocks);
  p.batch_size = 8;
  for (std::size_t b = 0; b < blocks; ++b) {
    const double scale = 1.0 + 0.5 * static_cast<double>((b * 7919) % 13) / 13.0;
    Block block;
    block.name = "b" + std::to_string(b);
    block.sub_blocks = {{"attention", 0.4 * scale, 0.8 * scale, 1 << 20, 4 << 20, 1 << 16},
                        {"mlp", 0.6 * scale, 1.2 * scale, 1 << 20, 8 << 20, 1 << 16}};
    for (const SubBlock& s : block.sub_blocks)
      block.add(s);
    p.blocks.push_back(block);
  }
  return p;
}

} // namespace actorpipe::bench
