/// ModelProfile's checks and queries: blocks, sub-blocks and the units a partitioner
/// cuts between.

#include <actorpipe/model_profile.hpp>

#include <algorithm>
#include <cmath>

namespace actorpipe {

namespace {

bool bad_time(double t) { return !std::isfinite(t) || t < 0; }

/// A fixed part that is negative, not a number, or more than the time it is part of.
template <class Part> bool bad_fixed(const Part& p) {
  return bad_time(p.forward_fixed_ms) || bad_time(p.backward_fixed_ms) || p.forward_fixed_ms > p.forward_ms ||
         p.backward_fixed_ms > p.backward_ms;
}

/// An input gradient's part that is negative, not a number, or more than the backward.
template <class Part> bool bad_input_gradient(const Part& p) {
  return p.input_gradient_ms && (bad_time(*p.input_gradient_ms) || *p.input_gradient_ms > p.backward_ms);
}

/// Sums of sub-blocks may differ from a block's own figure by rounding in a file.
bool close(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max({1.0, std::abs(a), std::abs(b)}); }

std::string quoted(const std::string& name) { return name.empty() ? "" : " '" + name + "'"; }

} // namespace

std::string describe(const ModelProfile& profile, Cut at) {
  if (at.block >= profile.blocks.size()) return "the end of the model";
  const Block& block = profile.blocks[at.block];
  std::string text = "block " + std::to_string(at.block) + quoted(block.name);
  if (at.sub > 0 && at.sub < block.sub_blocks.size())
    text += " sub-block " + std::to_string(at.sub) + quoted(block.sub_blocks[at.sub].name);
  return text;
}

Status ModelProfile::validate() const {
  const std::string model = "profile" + quoted(name) + ": ";
  if (blocks.empty()) return Error::bad_input(model + "has no blocks");
  if (batch_size == 0) return Error::bad_input(model + "batch_size must be at least 1");
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const Block& block = blocks[b];
    const std::string where = model + describe(*this, {b, 0}) + ": ";
    if (bad_time(block.forward_ms))
      return Error::bad_input(where + "forward time " + std::to_string(block.forward_ms) +
                              " ms is negative or not a number");
    if (bad_time(block.backward_ms))
      return Error::bad_input(where + "backward time " + std::to_string(block.backward_ms) +
                              " ms is negative or not a number");
    // With sub-blocks, each is checked and their sums must be the block's, which then holds.
    if (block.sub_blocks.empty() && bad_fixed(block))
      return Error::bad_input(where + "forward_fixed_ms and backward_fixed_ms must lie between 0 and the block's "
                                      "forward_ms and backward_ms");
    if (block.sub_blocks.empty() && bad_input_gradient(block))
      return Error::bad_input(where + "input_gradient_ms must lie between 0 and the block's backward_ms");
    if (block.sub_blocks.empty()) continue;
    Block sums;
    for (std::size_t s = 0; s < block.sub_blocks.size(); ++s) {
      const SubBlock& sub = block.sub_blocks[s];
      const std::string sub_where =
          model + describe(*this, {b, 0}) + " sub-block " + std::to_string(s) + quoted(sub.name) + ": ";
      if (bad_time(sub.forward_ms) || bad_time(sub.backward_ms))
        return Error::bad_input(sub_where + "times must be non-negative numbers");
      if (bad_fixed(sub))
        return Error::bad_input(sub_where + "forward_fixed_ms and backward_fixed_ms must lie between 0 and the "
                                            "sub-block's forward_ms and backward_ms");
      if (bad_input_gradient(sub))
        return Error::bad_input(sub_where + "input_gradient_ms must lie between 0 and the sub-block's backward_ms");
      sums.add(sub);
    }
    if (!close(sums.forward_ms, block.forward_ms) || !close(sums.backward_ms, block.backward_ms) ||
        !close(sums.forward_fixed_ms, block.forward_fixed_ms) ||
        !close(sums.backward_fixed_ms, block.backward_fixed_ms))
      return Error::bad_input(where + "forward/backward times differ from the sums of its sub-blocks");
    if (sums.input_gradient_ms.has_value() != block.input_gradient_ms.has_value() ||
        (sums.input_gradient_ms && !close(*sums.input_gradient_ms, *block.input_gradient_ms)))
      return Error::bad_input(where + "input_gradient_ms differs from the sum of its sub-blocks'");
    if (sums.parameter_bytes != block.parameter_bytes || sums.stash_bytes_per_sample != block.stash_bytes_per_sample)
      return Error::bad_input(where + "parameter or stash bytes differ from the sums of its sub-blocks");
    if (sums.workspace_bytes_per_sample != block.workspace_bytes_per_sample)
      return Error::bad_input(where + "workspace bytes differ from the largest of its sub-blocks'");
    if (sums.output_bytes != block.output_bytes)
      return Error::bad_input(where + "output bytes differ from those of its last sub-block");
  }
  return Ok{};
}

std::vector<Unit> ModelProfile::units(bool sub_blocks) const {
  std::vector<Unit> out;
  out.reserve(blocks.size());
  for_each_unit(sub_blocks, [&](const Unit& unit) { out.push_back(unit); });
  return out;
}

double ModelProfile::total_forward_ms() const {
  double total = 0;
  for (const auto& block : blocks)
    total += block.forward_ms;
  return total;
}

double ModelProfile::total_backward_ms() const {
  double total = 0;
  for (const auto& block : blocks)
    total += block.backward_ms;
  return total;
}

std::uint64_t ModelProfile::total_parameter_bytes() const {
  std::uint64_t total = 0;
  for (const auto& block : blocks)
    total += block.parameter_bytes;
  return total;
}

bool ModelProfile::has_sub_blocks() const {
  for (const auto& block : blocks)
    if (!block.sub_blocks.empty()) return true;
  return false;
}

} // namespace actorpipe
