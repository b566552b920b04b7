/// `transformer-profile`: writes the profile of a transformer encoder or decoder
/// (embedding, N layers each split into attention and MLP sub-blocks, a head split
/// into its transform and vocabulary slices) derived from FLOPs and bytes, in
/// actorpipe's TOML format. docs/profiles.md gives the
/// formulas; configs/profiles/bert-large.toml and gpt2-xl.toml were made with it.

#include <actorpipe/profile_io.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <iostream>

namespace {

using namespace actorpipe;

struct Shape {
  std::string name = "transformer";
  std::uint32_t layers = 24, hidden = 1024, heads = 16, sequence = 512, vocabulary = 30522, batch = 8;
  double tflops = 40; ///< sustained on the reference device
  std::string device = "V100-32GB";
  double memory_gbps = 900; ///< for the memory-bound embedding
  /// Vocabulary slices of the head; 0: about one MLP's work each, ceil(V / 8h).
  std::uint32_t vocabulary_slices = 0;
};

/// ms for `flops` at the device's sustained rate.
double ms(double flops, const Shape& s) { return flops / (s.tflops * 1e12) * 1e3; }

ModelProfile make(const Shape& s) {
  const double b = s.batch, L = s.sequence, h = s.hidden, a = s.heads, V = s.vocabulary;
  const std::uint64_t activation = static_cast<std::uint64_t>(b * L * h * 2); // fp16 hidden states
  ModelProfile p;
  p.name = s.name;
  p.reference_device = s.device + " (" + std::to_string(static_cast<int>(s.tflops)) + " TFLOP/s sustained)";
  p.batch_size = s.batch;
  p.input_bytes = static_cast<std::uint64_t>(b * L * 8); // int64 token ids

  Block embedding;
  embedding.name = "embedding";
  embedding.forward_ms = (b * L * h * 2 * 2) / (s.memory_gbps * 1e9) * 1e3; // gather and write, fp16
  embedding.backward_ms = 2 * embedding.forward_ms;
  embedding.output_bytes = activation;
  embedding.parameter_bytes = static_cast<std::uint64_t>((V + L) * h * 4);
  embedding.stash_bytes_per_sample = static_cast<std::uint64_t>(L * 8);
  p.blocks.push_back(embedding);

  for (std::uint32_t layer = 0; layer < s.layers; ++layer) {
    SubBlock attention{"attention"}, mlp{"mlp"};
    attention.forward_ms = ms(8 * b * L * h * h + 4 * b * L * L * h, s);
    attention.backward_ms = 2 * attention.forward_ms;
    attention.output_bytes = activation;
    attention.parameter_bytes = static_cast<std::uint64_t>((4 * h * h + 4 * h + 2 * h) * 4);
    attention.stash_bytes_per_sample = static_cast<std::uint64_t>(13 * L * h + 5 * a * L * L);
    mlp.forward_ms = ms(16 * b * L * h * h, s);
    mlp.backward_ms = 2 * mlp.forward_ms;
    mlp.output_bytes = activation;
    mlp.parameter_bytes = static_cast<std::uint64_t>((8 * h * h + 5 * h + 2 * h) * 4);
    mlp.stash_bytes_per_sample = static_cast<std::uint64_t>(21 * L * h);
    Block block;
    block.name = "layer" + std::to_string(layer);
    block.sub_blocks = {attention, mlp};
    block.forward_ms = attention.forward_ms + mlp.forward_ms;
    block.backward_ms = attention.backward_ms + mlp.backward_ms;
    block.output_bytes = mlp.output_bytes;
    block.parameter_bytes = attention.parameter_bytes + mlp.parameter_bytes;
    block.stash_bytes_per_sample = attention.stash_bytes_per_sample + mlp.stash_bytes_per_sample;
    p.blocks.push_back(block);
  }

  // The head, cut so that no piece outweighs a layer's half: the transform, then slices
  // of the vocabulary projection. A slice passes the hidden states on with each token's
  // running max, sum of exponentials and target logit, so the last slice has the loss
  // (a vocabulary-parallel softmax, run in sequence). Each slice holds its rows of the
  // projection, a copy of the tied embedding's kept in sync as the whole head's is.
  const std::uint32_t slices =
      s.vocabulary_slices ? s.vocabulary_slices : static_cast<std::uint32_t>(std::ceil(V / (8 * h)));
  const double slice_V = V / slices;
  Block head;
  head.name = "head";
  SubBlock transform{"transform"};
  transform.forward_ms = ms(2 * b * L * h * h, s);
  transform.backward_ms = 2 * transform.forward_ms;
  transform.output_bytes = activation;
  transform.parameter_bytes = static_cast<std::uint64_t>((h * h + 3 * h) * 4); // dense and layer norm
  transform.stash_bytes_per_sample = static_cast<std::uint64_t>(L * h * 2 * 2);
  head.sub_blocks.push_back(transform);
  for (std::uint32_t k = 0; k < slices; ++k) {
    SubBlock slice{"vocabulary" + std::to_string(k)};
    slice.forward_ms = ms(2 * b * L * h * slice_V, s);
    slice.backward_ms = 2 * slice.forward_ms;
    slice.output_bytes = k + 1 == slices ? static_cast<std::uint64_t>(b * 4) // the loss per sample
                                         : activation + static_cast<std::uint64_t>(b * L * 3 * 4);
    slice.parameter_bytes = static_cast<std::uint64_t>((slice_V * h + slice_V) * 4);
    slice.stash_bytes_per_sample = static_cast<std::uint64_t>(L * slice_V * 2 + L * h * 2);
    head.sub_blocks.push_back(slice);
  }
  for (const SubBlock& sub : head.sub_blocks)
    head.add(sub);
  p.blocks.push_back(head);
  return p;
}

} // namespace

int main(int argc, char** argv) {
  Shape s;
  std::string output;
  CLI::App app{"Write a transformer's profile derived from FLOPs and bytes (docs/profiles.md)"};
  app.add_option("--name", s.name, "model name");
  app.add_option("--layers", s.layers, "transformer layers")->check(CLI::PositiveNumber);
  app.add_option("--hidden", s.hidden, "hidden size")->check(CLI::PositiveNumber);
  app.add_option("--heads", s.heads, "attention heads")->check(CLI::PositiveNumber);
  app.add_option("--sequence", s.sequence, "sequence length")->check(CLI::PositiveNumber);
  app.add_option("--vocabulary", s.vocabulary, "vocabulary size")->check(CLI::PositiveNumber);
  app.add_option("--batch", s.batch, "samples the profile is for")->check(CLI::PositiveNumber);
  app.add_option("--tflops", s.tflops, "sustained TFLOP/s of the reference device")->check(CLI::PositiveNumber);
  app.add_option("--device", s.device, "reference device");
  app.add_option("--vocabulary-slices", s.vocabulary_slices, "slices of the head's vocabulary (0: about one MLP each)");
  app.add_option("-o,--output", output, "write here instead of standard output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const ModelProfile profile = make(s);
  if (auto status = profile.validate(); !status) {
    std::cerr << "transformer-profile: " << status.error().message << "\n";
    return 2;
  }
  if (output.empty()) {
    std::cout << to_toml(profile);
    return 0;
  }
  if (auto status = save_profile(profile, output); !status) {
    std::cerr << "transformer-profile: " << status.error().message << "\n";
    return 2;
  }
  return 0;
}
