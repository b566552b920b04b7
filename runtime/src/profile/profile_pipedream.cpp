/// PipeDream / DAPPLE graph.txt profiles: one node per line, then the edges.
///
///   nodeN -- DESCRIPTION -- forward_compute_time=MS, backward_compute_time=MS,
///            activation_size=BYTES, parameter_size=BYTES
///   nodeA -- nodeB
///
/// Nodes are put in topological order (ties broken by node number, so the result does
/// not depend on line order) and become blocks. A branching graph (ResNet, DenseNet)
/// becomes a chain whose cut after block i carries every tensor produced at or before
/// i and consumed after it. Source nodes named "Input..." are the model's input, not
/// blocks: their time is data loading. The format does not record the batch size, so
/// the caller must give it.

#include <actorpipe/profile_io.hpp>

#include "base/text.hpp"
#include "base/units.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <cmath>
#include <map>
#include <queue>
#include <unordered_map>

namespace actorpipe {

namespace {

struct Node {
  std::string id;
  std::string description;
  double forward_ms = 0;
  double backward_ms = 0;
  double activation_bytes = 0;
  double parameter_bytes = 0;
  std::size_t line = 0;
  std::vector<std::size_t> successors;
  std::size_t predecessors = 0;
};

/// Orders "node7" before "node12"; non-numeric ids after numeric ones, by text.
bool id_less(const std::string& a, const std::string& b) {
  auto number = [](const std::string& id) -> long long {
    if (!id.starts_with("node")) return -1;
    long long n = -1;
    const auto [end, ec] = std::from_chars(id.data() + 4, id.data() + id.size(), n);
    return (ec == std::errc{} && end == id.data() + id.size()) ? n : -1;
  };
  const long long x = number(a), y = number(b);
  if ((x < 0) != (y < 0)) return x >= 0;
  if (x >= 0 && x != y) return x < y;
  return a < b;
}

Result<double> parse_number(std::string_view value, const std::string& where, std::string_view key) {
  value = text::trim(value);
  double number = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (ec != std::errc{} || end != value.data() + value.size() || !std::isfinite(number))
    return Error::bad_input(where + ": " + std::string(key) + ": '" + std::string(value) + "' is not a number");
  if (number < 0) return Error::bad_input(where + ": " + std::string(key) + ": " + std::string(value) + " is negative");
  return number;
}

/// A number, or "[a; b; c]" for a node with several outputs (GNMT's LSTMs): their sum.
Result<double> parse_attribute(std::string_view value, const std::string& where, std::string_view key) {
  value = text::trim(value);
  if (!value.starts_with('[')) return parse_number(value, where, key);
  if (!value.ends_with(']'))
    return Error::bad_input(where + ": " + std::string(key) + ": '" + std::string(value) + "' lacks its closing ']'");
  double sum = 0;
  for (const std::string& part : text::split(value.substr(1, value.size() - 2), ';')) {
    auto number = parse_number(part, where, key);
    if (!number) return number;
    sum += *number;
  }
  return sum;
}

Status parse_attributes(std::string_view list, Node& node, const std::string& where) {
  bool seen[4] = {false, false, false, false};
  static constexpr std::string_view keys[4] = {"forward_compute_time", "backward_compute_time", "activation_size",
                                               "parameter_size"};
  double* fields[4] = {&node.forward_ms, &node.backward_ms, &node.activation_bytes, &node.parameter_bytes};
  for (const std::string& item : text::split(list, ',')) {
    const std::string_view entry = text::trim(item);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos)
      return Error::bad_input(where + ": expected key=value, found '" + std::string(entry) + "'");
    const std::string_view key = text::trim(entry.substr(0, eq));
    const auto k = std::find(std::begin(keys), std::end(keys), key) - std::begin(keys);
    if (k == 4) continue; // newer profiles add fields; they do not matter here
    auto value = parse_attribute(entry.substr(eq + 1), where, key);
    ACTORPIPE_TRY(value);
    const bool bytes = k >= 2;
    if (!std::isfinite(*value) || (bytes && *value >= units::max_bytes))
      return Error::bad_input(where + ": " + std::string(key) + ": " + text::format_fixed(*value, 0) + " is too large");
    *fields[k] = *value;
    seen[k] = true;
  }
  for (int k = 0; k < 4; ++k)
    if (!seen[k]) return Error::bad_input(where + ": missing " + std::string(keys[k]));
  return Ok{};
}

} // namespace

Result<ModelProfile> parse_pipedream_profile(const std::string& text, const std::string& source,
                                             std::uint32_t batch_size) {
  if (batch_size == 0)
    return Error::bad_input(source + ": PipeDream profiles do not record their batch size; give it "
                                     "(model.profile_batch_size in a job file)");
  std::vector<Node> nodes;
  std::unordered_map<std::string, std::size_t> index;
  std::vector<std::pair<std::string, std::string>> edges;
  std::vector<std::size_t> edge_lines;

  std::size_t line_number = 0;
  for (const std::string& raw : text::split(text, '\n')) {
    ++line_number;
    const std::string_view line = text::trim(raw);
    if (line.empty()) continue;
    const std::string where = source + ":" + std::to_string(line_number);
    const auto first = line.find(" -- ");
    if (first == std::string_view::npos)
      return Error::bad_input(where + ": expected 'nodeN -- NAME -- ATTRIBUTES' or 'nodeA -- nodeB'");
    const std::string id(text::trim(line.substr(0, first)));
    const std::string_view rest = line.substr(first + 4);
    const auto last = rest.rfind(" -- ");
    if (last == std::string_view::npos) {
      edges.emplace_back(id, std::string(text::trim(rest)));
      edge_lines.push_back(line_number);
      continue;
    }
    Node node;
    node.id = id;
    node.description = std::string(text::trim(rest.substr(0, last)));
    node.line = line_number;
    ACTORPIPE_TRY(parse_attributes(rest.substr(last + 4), node, where + ": " + id));
    if (!index.emplace(id, nodes.size()).second)
      return Error::bad_input(where + ": node '" + id + "' is defined twice");
    nodes.push_back(std::move(node));
  }
  if (nodes.empty()) return Error::bad_input(source + ": no nodes (is this a PipeDream graph.txt profile?)");

  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto from = index.find(edges[e].first);
    const auto to = index.find(edges[e].second);
    const std::string where = source + ":" + std::to_string(edge_lines[e]);
    if (from == index.end()) return Error::bad_input(where + ": edge from unknown node '" + edges[e].first + "'");
    if (to == index.end()) return Error::bad_input(where + ": edge to unknown node '" + edges[e].second + "'");
    nodes[from->second].successors.push_back(to->second);
    ++nodes[to->second].predecessors;
  }

  // A file cut short at a line boundary loses the last edges (or all of them): the
  // nodes they reached are left with none.
  if (nodes.size() > 1)
    for (const Node& node : nodes)
      if (node.predecessors == 0 && node.successors.empty())
        return Error::bad_input(source + ":" + std::to_string(node.line) + ": node '" + node.id +
                                "' has no edges: the graph is incomplete (a file cut short?)");

  // Kahn's algorithm; the queue yields the lowest node id first.
  auto later = [&](std::size_t a, std::size_t b) { return id_less(nodes[b].id, nodes[a].id); };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> ready(later);
  std::vector<std::size_t> waiting(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    waiting[n] = nodes[n].predecessors;
    if (waiting[n] == 0) ready.push(n);
  }
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t n = ready.top();
    ready.pop();
    order.push_back(n);
    for (std::size_t next : nodes[n].successors)
      if (--waiting[next] == 0) ready.push(next);
  }
  if (order.size() != nodes.size()) {
    // What Kahn left is reachable from a cycle; of it, drop what reaches no cycle (no
    // successor left), and every node still left has a successor left: following them
    // must repeat a node, and the first repeated one is on a cycle.
    std::vector<bool> left(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n)
      left[n] = waiting[n] > 0;
    for (bool pruned = true; pruned;) {
      pruned = false;
      for (std::size_t n = 0; n < nodes.size(); ++n)
        if (left[n] && std::none_of(nodes[n].successors.begin(), nodes[n].successors.end(),
                                    [&](std::size_t next) { return left[next]; }))
          left[n] = false, pruned = true;
    }
    std::size_t n = static_cast<std::size_t>(std::find(left.begin(), left.end(), true) - left.begin());
    std::vector<bool> visited(nodes.size());
    while (!visited[n]) {
      visited[n] = true;
      n = *std::find_if(nodes[n].successors.begin(), nodes[n].successors.end(),
                        [&](std::size_t next) { return left[next]; });
    }
    return Error::bad_input(source + ":" + std::to_string(nodes[n].line) + ": node '" + nodes[n].id +
                            "' is on a cycle");
  }

  ModelProfile profile;
  profile.name = std::filesystem::path(source).stem().string();
  profile.reference_device = "unknown (PipeDream profile)";
  profile.batch_size = batch_size;

  // Position of every node in the chain; inputs sit before the first block.
  constexpr std::ptrdiff_t input_position = -1;
  std::vector<std::ptrdiff_t> position(nodes.size());
  for (std::size_t n : order) {
    const Node& node = nodes[n];
    if (node.predecessors == 0 && node.description.starts_with("Input")) {
      position[n] = input_position;
      profile.input_bytes += static_cast<std::uint64_t>(node.activation_bytes);
      continue;
    }
    position[n] = static_cast<std::ptrdiff_t>(profile.blocks.size());
    Block block;
    block.name = node.id + " " + node.description;
    block.forward_ms = node.forward_ms;
    block.backward_ms = node.backward_ms;
    block.parameter_bytes = static_cast<std::uint64_t>(node.parameter_bytes);
    block.stash_bytes_per_sample = static_cast<std::uint64_t>(node.activation_bytes / batch_size);
    profile.blocks.push_back(std::move(block));
  }
  if (profile.blocks.empty()) return Error::bad_input(source + ": only input nodes, no layers");

  // A tensor produced at position p and last consumed at q crosses cuts p .. q-1:
  // add its bytes over that range with a difference array. A tensor with no consumer
  // (the model's output) crosses nothing.
  std::vector<double> crossing(profile.blocks.size() + 1, 0.0);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    std::ptrdiff_t last_use = position[n];
    for (std::size_t next : nodes[n].successors)
      last_use = std::max(last_use, position[next]);
    if (last_use <= position[n]) continue;
    const std::size_t from = static_cast<std::size_t>(std::max<std::ptrdiff_t>(position[n], 0));
    crossing[from] += nodes[n].activation_bytes;
    crossing[static_cast<std::size_t>(last_use)] -= nodes[n].activation_bytes;
  }
  double running = 0;
  for (std::size_t b = 0; b < profile.blocks.size(); ++b) {
    running += crossing[b];
    profile.blocks[b].output_bytes = static_cast<std::uint64_t>(std::llround(running));
  }
  // The last block's output leaves the model (towards the loss).
  const Node& last_node = nodes[order.back()];
  if (profile.blocks.back().output_bytes == 0)
    profile.blocks.back().output_bytes = static_cast<std::uint64_t>(last_node.activation_bytes);

  if (auto s = profile.validate(); !s) return std::move(s).error().with_context(source + ": ");
  return profile;
}

} // namespace actorpipe
