/// actorpipe's own profile format: TOML with one [[blocks]] entry per block and
/// optional [[blocks.sub_blocks]]. See docs/profiles.md.

#include <actorpipe/profile_io.hpp>

#include "config/toml_reader.hpp"

#include <sstream>

namespace actorpipe {

namespace {

using config::TableReader;

/// Reads the per-unit figures shared by blocks and sub-blocks.
template <class Part> Status read_figures(TableReader& reader, Part& part) {
  const double unlimited = std::numeric_limits<double>::infinity();
  if (auto s = reader.string("name", part.name); !s) return s;
  if (auto s = reader.number("forward_ms", part.forward_ms, 0, unlimited); !s) return s;
  if (auto s = reader.number("backward_ms", part.backward_ms, 0, unlimited); !s) return s;
  // Times have no default: a unit without them would look free to every planner.
  if (auto s = reader.require("forward_ms"); !s) return s;
  if (auto s = reader.require("backward_ms"); !s) return s;
  // Optional: a profile from elsewhere may only know whole times (then 0: they scale).
  if (auto s = reader.number("forward_fixed_ms", part.forward_fixed_ms, 0, unlimited); !s) return s;
  if (auto s = reader.number("backward_fixed_ms", part.backward_fixed_ms, 0, unlimited); !s) return s;
  if (auto s = reader.bytes("output_bytes", part.output_bytes); !s) return s;
  if (auto s = reader.bytes("parameter_bytes", part.parameter_bytes); !s) return s;
  if (auto s = reader.bytes("stash_bytes_per_sample", part.stash_bytes_per_sample); !s) return s;
  // Optional: where a profile gives the backward whole, I counts for half of it.
  double input_gradient = -1;
  if (auto s = reader.number("input_gradient_ms", input_gradient, 0, unlimited); !s) return s;
  if (input_gradient >= 0) part.input_gradient_ms = input_gradient;
  // Optional: only a measured profile knows what a unit holds while it runs.
  return reader.bytes("workspace_bytes_per_sample", part.workspace_bytes_per_sample);
}

Result<Block> read_block(const toml::table& table, const std::string& path) {
  TableReader reader(table, path);
  Block block;
  auto subs = reader.table_array("sub_blocks");
  ACTORPIPE_TRY(subs);
  if (subs->empty()) {
    ACTORPIPE_TRY(read_figures(reader, block));
  } else {
    // A block with sub-blocks takes its figures from them; giving both could disagree.
    ACTORPIPE_TRY(reader.string("name", block.name));
    for (std::size_t i = 0; i < subs->size(); ++i) {
      TableReader sub_reader(*(*subs)[i], path + ".sub_blocks[" + std::to_string(i) + "]");
      SubBlock sub;
      ACTORPIPE_TRY(read_figures(sub_reader, sub));
      ACTORPIPE_TRY(sub_reader.finish());
      block.add(sub);
      block.sub_blocks.push_back(std::move(sub));
    }
  }
  ACTORPIPE_TRY(reader.finish());
  return block;
}

template <class Part> void write_figures(toml::table& table, const Part& part) {
  table.insert("name", part.name);
  table.insert("forward_ms", part.forward_ms);
  table.insert("backward_ms", part.backward_ms);
  if (part.input_gradient_ms) table.insert("input_gradient_ms", *part.input_gradient_ms);
  if (part.forward_fixed_ms > 0 || part.backward_fixed_ms > 0) {
    table.insert("forward_fixed_ms", part.forward_fixed_ms);
    table.insert("backward_fixed_ms", part.backward_fixed_ms);
  }
  table.insert("output_bytes", static_cast<std::int64_t>(part.output_bytes));
  table.insert("parameter_bytes", static_cast<std::int64_t>(part.parameter_bytes));
  table.insert("stash_bytes_per_sample", static_cast<std::int64_t>(part.stash_bytes_per_sample));
  if (part.workspace_bytes_per_sample > 0)
    table.insert("workspace_bytes_per_sample", static_cast<std::int64_t>(part.workspace_bytes_per_sample));
}

} // namespace

Result<ModelProfile> parse_toml_profile(const std::string& text, const std::string& source) {
  auto root = config::parse_toml(text, source);
  ACTORPIPE_TRY(root);
  TableReader reader(*root, "");
  ModelProfile profile;
  ACTORPIPE_TRY(reader.string("name", profile.name));
  ACTORPIPE_TRY(reader.string("reference_device", profile.reference_device));
  // The times are per batch of this many samples: without it they mean nothing.
  ACTORPIPE_TRY(reader.require("batch_size"));
  ACTORPIPE_TRY(reader.integer("batch_size", profile.batch_size, 1u));
  ACTORPIPE_TRY(reader.bytes("input_bytes", profile.input_bytes));
  ACTORPIPE_TRY(reader.integer("warmup_passes", profile.warmup_passes));
  ACTORPIPE_TRY(reader.number("spread", profile.spread, 0, 1e6));
  std::string precision;
  ACTORPIPE_TRY(reader.choice("precision", precision, {"fp32", "bf16", "fp16"}));
  profile.precision = precision_named(precision);
  ACTORPIPE_TRY(reader.require("blocks"));
  auto blocks = reader.table_array("blocks");
  ACTORPIPE_TRY(blocks);
  ACTORPIPE_TRY(reader.finish());
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    auto block = read_block(*(*blocks)[i], "blocks[" + std::to_string(i) + "]");
    ACTORPIPE_TRY(block);
    profile.blocks.push_back(std::move(*block));
  }
  if (auto s = profile.validate(); !s) return std::move(s).error().with_context(source + ": ");
  return profile;
}

std::string to_toml(const ModelProfile& profile) {
  toml::table root;
  root.insert("name", profile.name);
  root.insert("reference_device", profile.reference_device);
  root.insert("batch_size", static_cast<std::int64_t>(profile.batch_size));
  root.insert("input_bytes", static_cast<std::int64_t>(profile.input_bytes));
  if (profile.precision) root.insert("precision", precision_name(*profile.precision));
  if (profile.warmup_passes > 0) root.insert("warmup_passes", static_cast<std::int64_t>(profile.warmup_passes));
  if (profile.spread > 0) root.insert("spread", profile.spread);
  toml::array blocks;
  for (const Block& block : profile.blocks) {
    toml::table entry;
    if (block.sub_blocks.empty()) {
      write_figures(entry, block);
    } else {
      entry.insert("name", block.name);
      toml::array subs;
      for (const SubBlock& sub : block.sub_blocks) {
        toml::table sub_entry;
        write_figures(sub_entry, sub);
        subs.push_back(std::move(sub_entry));
      }
      entry.insert("sub_blocks", std::move(subs));
    }
    blocks.push_back(std::move(entry));
  }
  root.insert("blocks", std::move(blocks));
  std::ostringstream out;
  out << "# actorpipe model profile: times in ms per batch of batch_size samples on\n"
         "# reference_device; bytes per batch unless the key says per sample.\n";
  out << toml::toml_formatter(root) << "\n";
  return out.str();
}

} // namespace actorpipe
