/// The planner grid's generated models and clusters (generated_cases.hpp says what
/// they are drawn from).

#include "generated_cases.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace actorpipe::bench {

namespace {

/// Uniform on [low, high] in log space: sizes and times spread over decades.
double log_uniform(std::mt19937_64& random, double low, double high) {
  return std::exp(std::uniform_real_distribution<double>(std::log(low), std::log(high))(random));
}

double uniform(std::mt19937_64& random, double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(random);
}

template <class T> const T& one_of(std::mt19937_64& random, const std::vector<T>& choices) {
  return choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(random)];
}

/// A walk in log space between `low` and `high` with occasional jumps: neighbouring
/// layers of a model tend to be alike, and stages of it are not.
std::vector<double> log_walk(std::mt19937_64& random, std::size_t n, double low, double high) {
  std::vector<double> out(n);
  double x = std::log(log_uniform(random, low, high));
  for (double& v : out) {
    x += std::normal_distribution<double>(0.0, 0.25)(random);
    if (uniform(random, 0, 1) < 0.03) x = std::log(log_uniform(random, low, high));
    x = std::clamp(x, std::log(low), std::log(high));
    v = std::exp(x);
  }
  return out;
}

/// Shares of a total, one per layer, some of them nothing (pooling, activations).
std::vector<double> shares(std::mt19937_64& random, std::size_t n, double none) {
  std::vector<double> w = log_walk(random, n, 0.01, 1.0);
  for (double& v : w)
    if (uniform(random, 0, 1) < none) v = 0;
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  for (double& v : w)
    v = total > 0 ? v / total : 1.0 / static_cast<double>(n);
  return w;
}

/// A layer's own figures: what it computes and holds, and the tensor it outputs.
struct Layer {
  double forward_ms = 0, backward_ms = 0, fixed_share = 0;
  double output_per_sample = 0, stash_per_sample = 0;
  std::uint64_t parameter_bytes = 0;
};

/// `n` layers of one model: total time, parameters and activations drawn per model,
/// spread over the layers unevenly.
std::vector<Layer> draw_layers(std::mt19937_64& random, std::size_t n) {
  const double forward_total = log_uniform(random, 20, 4000); // ms per batch
  const double parameter_total = log_uniform(random, 50e6, 8e9);
  const std::vector<double> time = shares(random, n, 0.05);
  const std::vector<double> parameters = shares(random, n, 0.3);
  const std::vector<double> activation = log_walk(random, n, 2e3, 8e6); // bytes per sample
  const double backward_ratio = uniform(random, 1.5, 3.0);
  std::vector<Layer> layers(n);
  for (std::size_t i = 0; i < n; ++i) {
    Layer& l = layers[i];
    l.forward_ms = std::max(1e-4, forward_total * time[i]);
    l.backward_ms = l.forward_ms * backward_ratio * uniform(random, 0.8, 1.25);
    l.fixed_share = uniform(random, 0.0, 0.3);
    l.parameter_bytes = static_cast<std::uint64_t>(parameter_total * parameters[i]);
    l.output_per_sample = activation[i];
    l.stash_per_sample = activation[i] * uniform(random, 1.0, 3.0);
  }
  return layers;
}

Block block_of(const Layer& l, std::size_t index, std::uint32_t batch, double crossing_per_sample,
               double input_gradient_share) {
  Block b;
  b.name = "l" + std::to_string(index);
  b.forward_ms = l.forward_ms;
  b.backward_ms = l.backward_ms;
  b.forward_fixed_ms = l.forward_ms * l.fixed_share;
  b.backward_fixed_ms = l.backward_ms * l.fixed_share;
  b.output_bytes = static_cast<std::uint64_t>(crossing_per_sample * batch);
  b.parameter_bytes = l.parameter_bytes;
  b.stash_bytes_per_sample = static_cast<std::uint64_t>(l.stash_per_sample);
  if (input_gradient_share > 0) b.input_gradient_ms = l.backward_ms * input_gradient_share;
  return b;
}

/// A model named for its kind, size and seed, of a batch drawn from `random`.
ModelProfile named(const std::string& kind, std::size_t size, std::uint64_t seed, std::mt19937_64& random) {
  ModelProfile p;
  p.name = kind + "-" + std::to_string(size) + "-s" + std::to_string(seed);
  p.batch_size = one_of<std::uint32_t>(random, {16, 32, 64, 128});
  return p;
}

} // namespace

ModelProfile generated_chain(std::uint64_t seed, std::size_t blocks) {
  std::mt19937_64 random(seed);
  ModelProfile p = named("chain", blocks, seed, random);
  const std::vector<Layer> layers = draw_layers(random, blocks);
  // Half the models say how their backwards split into I and W.
  const bool measured = uniform(random, 0, 1) < 0.5;
  for (std::size_t i = 0; i < blocks; ++i)
    p.blocks.push_back(
        block_of(layers[i], i, p.batch_size, layers[i].output_per_sample, measured ? uniform(random, 0.3, 0.8) : 0.0));
  p.input_bytes = static_cast<std::uint64_t>(layers.front().output_per_sample * p.batch_size);
  return p;
}

ModelProfile generated_graph(std::uint64_t seed, std::size_t layers_count) {
  std::mt19937_64 random(seed);
  ModelProfile p = named("graph", layers_count, seed, random);
  const std::vector<Layer> layers = draw_layers(random, layers_count);
  // Each layer reads the one before and, now and then, one further back (a residual
  // or a concatenation); a tensor stays alive, and crosses every boundary, until the
  // last layer that reads it.
  const double skip = uniform(random, 0.1, 0.6);
  const std::size_t reach = one_of<std::size_t>(random, {3, 8, 24});
  std::vector<std::size_t> last_use(layers_count);
  for (std::size_t i = 0; i < layers_count; ++i)
    last_use[i] = std::min(i + 1, layers_count - 1);
  for (std::size_t i = 2; i < layers_count; ++i)
    if (uniform(random, 0, 1) < skip) {
      const std::size_t back = std::uniform_int_distribution<std::size_t>(2, std::min(i, reach))(random);
      last_use[i - back] = std::max(last_use[i - back], i);
    }
  const bool measured = uniform(random, 0, 1) < 0.5;
  for (std::size_t i = 0; i < layers_count; ++i) {
    double crossing = 0; // every tensor made at or before i and read after it
    for (std::size_t j = i + 1 > reach + 1 ? i - reach - 1 : 0; j <= i; ++j)
      if (last_use[j] > i) crossing += layers[j].output_per_sample;
    p.blocks.push_back(block_of(layers[i], i, p.batch_size, crossing, measured ? uniform(random, 0.3, 0.8) : 0.0));
  }
  p.input_bytes = static_cast<std::uint64_t>(layers.front().output_per_sample * p.batch_size);
  return p;
}

ClusterSpec generated_cluster(std::uint64_t seed, std::size_t most_devices) {
  std::mt19937_64 random(seed);
  struct Generation {
    std::string kind;
    double speed = 1, memory_bandwidth = 0;
    std::uint64_t memory = 0;
  };
  const std::size_t count = std::uniform_int_distribution<std::size_t>(2, 4)(random);
  std::vector<Generation> generations;
  for (std::size_t g = 0; g < count; ++g) {
    Generation gen;
    gen.kind = "gen" + std::to_string(g);
    gen.speed = log_uniform(random, 0.3, 3.0);
    gen.memory = one_of<std::uint64_t>(random, {12, 16, 24, 32, 40, 48, 80}) << 30;
    gen.memory_bandwidth = 5e11 * gen.speed * uniform(random, 0.6, 1.6);
    generations.push_back(gen);
  }
  ClusterSpec c;
  c.name = "generated-s" + std::to_string(seed);
  c.network = {one_of<double>(random, {1.25e9, 3.125e9, 12.5e9}), log_uniform(random, 2e-6, 50e-6)};
  const std::size_t target = std::uniform_int_distribution<std::size_t>(8, most_devices)(random);
  while (c.devices.size() < target) {
    const std::size_t room = most_devices - c.devices.size();
    std::size_t size = one_of<std::size_t>(random, {2, 4, 8});
    while (size > room)
      size /= 2;
    if (size == 0) break;
    const Generation& gen = generations[c.servers.size() < count ? c.servers.size() : random() % count];
    Server server;
    server.name = "s" + std::to_string(c.servers.size()) + "-" + gen.kind;
    const std::size_t per_switch = std::min(size, one_of<std::size_t>(random, {2, 4, 8}));
    const std::size_t switches = (size + per_switch - 1) / per_switch;
    const std::size_t bridges = switches > 1 && uniform(random, 0, 1) < 0.5 ? 2 : 1;
    for (std::size_t b = 0; b < bridges; ++b)
      server.host_bridges.push_back({one_of<double>(random, {16e9, 32e9, 64e9})});
    const double switch_bandwidth = one_of<double>(random, {8e9, 16e9, 32e9});
    for (std::size_t s = 0; s < switches; ++s)
      server.pcie_switches.push_back({switch_bandwidth, s % bridges});
    server.inter_bridge_bandwidth = one_of<double>(random, {10e9, 20e9, 40e9});
    const bool nvlink = uniform(random, 0, 1) < 0.25;
    if (nvlink) server.nvlink_bandwidth = one_of<double>(random, {50e9, 150e9, 300e9});
    server.nics = uniform(random, 0, 1) < 0.3 ? 2 : 1;
    server.nic_bandwidth = one_of<double>(random, {1.25e9, 3.125e9, 12.5e9});
    const std::size_t index = c.servers.size();
    c.servers.push_back(server);
    for (std::size_t d = 0; d < size; ++d)
      c.devices.push_back({server.name + "/gpu" + std::to_string(d), gen.kind, gen.speed, gen.memory,
                           gen.memory_bandwidth, index, d / per_switch, nvlink ? 0 : -1});
  }
  return c;
}

} // namespace actorpipe::bench
