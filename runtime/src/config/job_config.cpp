/// Reads job files (docs/config.md): one TableReader per section, then the cluster and
/// the profile they name. A .lua job is run and its table read the same way (lua/).

#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/plugin.hpp>
#include <actorpipe/profile_io.hpp>

#include "config/job_config.hpp"

#include "config/cluster_config.hpp"
#include "base/input_file.hpp"
#include "config/toml_reader.hpp"
#include "base/text.hpp"
#include "config/lua_job.hpp"

#include <filesystem>
#include <sstream>

namespace actorpipe {

namespace {

using config::TableReader;
constexpr double unlimited = std::numeric_limits<double>::infinity();

/// Records where every key of `table` was set: where its node says, else as `places`
/// says (a Lua job's table has no places of its own).
void record_origins(const toml::table& table, const std::string& prefix, const config::KeyPlaces& places,
                    std::map<std::string, SourcePlace>& out) {
  for (auto&& [key, value] : table) {
    const std::string path = prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
    if (auto place = config::place_of(value.source()))
      out[path] = std::move(*place);
    else if (places)
      out[path] = places(path);
    if (const toml::table* sub = value.as_table()) record_origins(*sub, path, places, out);
  }
}

/// Applies one "key.path=value" override to the document.
Status apply_override(toml::table& root, const std::string& assignment) {
  const std::string origin = "--set " + assignment;
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) return Error::bad_input(origin + ": expected key.path=value");
  const std::string key_path(text::trim(std::string_view(assignment).substr(0, eq)));
  const std::string value_text(text::trim(std::string_view(assignment).substr(eq + 1)));
  const std::vector<std::string> keys = text::split(key_path, '.');
  if (keys.size() > config::max_toml_depth)
    return Error::bad_input(origin + ": a key of " + std::to_string(keys.size()) + " parts; actorpipe reads at most " +
                            std::to_string(config::max_toml_depth));

  // Not a TOML value (or one nested too deep to read): taken as a bare string, as a
  // shell user would write it.
  auto parsed = config::parse_toml("value = " + value_text, origin);
  if (!parsed) parsed = config::parse_toml("value = " + text::toml_quote(value_text), origin);
  ACTORPIPE_TRY(parsed);

  // Keys the override adds carry its origin, so that an unknown one is reported as
  // "--set KEY=VALUE", not as a place in no file.
  const toml::source_region& from = parsed->begin()->first.source();
  toml::table* table = &root;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    if (keys[i].empty()) return Error::bad_input(origin + ": empty key in '" + key_path + "'");
    toml::node* next = table->get(keys[i]);
    if (!next) {
      table->insert(toml::key{keys[i], from}, toml::table{});
      next = table->get(keys[i]);
    }
    if (!next->is_table())
      return Error::bad_input(origin + ": " + text::join({keys.begin(), keys.begin() + i + 1}, ".") + " is " +
                              config::type_name(*next) + ", not a table");
    table = next->as_table();
  }
  if (keys.back().empty()) return Error::bad_input(origin + ": empty key in '" + key_path + "'");
  table->insert_or_assign(toml::key{keys.back(), from}, std::move(*parsed->get("value")));
  return Ok{};
}

Status read_job_section(TableReader& top, JobOptions& job) {
  return top.optional_table("job", [&](TableReader& r) -> Status {
    if (auto s = r.string("name", job.name); !s) return s;
    // The name becomes a folder under runs/ ({job} in output.dir): one plain name.
    if (const toml::node* n = r.node("name");
        n && (job.name.empty() || job.name == "." || job.name == ".." || job.name.find('/') != std::string::npos))
      return config::error_at(*n, "job.name", "'" + job.name + "' is not a plain name (it names the run's folder)");
    // A folder's name has at most 255 bytes; the run's files add theirs inside it.
    if (const toml::node* n = r.node("name"); n && job.name.size() > max_job_name)
      return config::error_at(*n, "job.name",
                              "a name of " + std::to_string(job.name.size()) + " characters; at most " +
                                  std::to_string(max_job_name) + " (it names the run's folder)");
    if (auto s = r.string("description", job.description); !s) return s;
    if (auto s = r.integer("seed", job.seed); !s) return s;
    return Ok{};
  });
}

Status read_model(TableReader& top, ModelOptions& model) {
  if (auto s = top.require("model"); !s) return s;
  auto table = top.subtable("model");
  ACTORPIPE_TRY(table);
  TableReader r(**table, "model", top.file());
  if (auto s = r.choice("zoo", model.zoo); !s) return s;
  if (auto s = r.path("file", model.file); !s) return s;
  if (auto s = r.integer("layers", model.layers, 0u, 4096u); !s) return s;
  if (auto s = r.integer("width", model.width, 0u, 1u << 20); !s) return s;
  if (auto s = r.integer("heads", model.heads, 1u, 1024u); !s) return s;
  if (auto s = r.integer("context", model.context, 1u, 1u << 20); !s) return s;
  if (model.zoo == ZooModel::none)
    if (auto s = r.require("profile"); !s) return s;
  if (model.zoo == ZooModel::torchscript)
    if (auto s = r.require("file"); !s) return s;
  if (auto s = r.path("profile", model.profile); !s) return s;
  if (auto s = r.choice("profile_format", model.profile_format, {"auto", "toml", "pipedream"}); !s) return s;
  if (auto s = r.integer("profile_batch_size", model.profile_batch_size, 1u, 1u << 24); !s) return s;
  return r.finish();
}

/// A TOML value as the text a plugin receives: strings bare, everything else as TOML.
std::string option_text(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* f = node.as_floating_point()) return number_text(f->get());
  std::ostringstream out;
  node.visit([&](const auto& value) { out << toml::toml_formatter(value); });
  return out.str();
}

Status read_data(TableReader& top, DataOptions& data) {
  return top.optional_table("data", [&](TableReader& r) -> Status {
    if (auto s = r.choice("dataset", data.dataset); !s) return s;
    if (auto s = r.path("path", data.path); !s) return s;
    if (auto s = r.boolean("shuffle", data.shuffle); !s) return s;
    if (auto s = r.integer("samples", data.samples, 1u, 1u << 30); !s) return s;
    if (auto s = r.integer_list("shape", data.shape, 1, 1 << 20); !s) return s;
    if (auto s = r.integer("classes", data.classes, 2u, 1u << 20); !s) return s;
    if (auto s = r.choice("token_type", data.token_type); !s) return s;
    if (auto s = r.integer("vocabulary", data.vocabulary, 0u, 1u << 31); !s) return s;
    if (auto s = r.integer("seed", data.seed); !s) return s;
    if (auto s = r.string("plugin", data.plugin); !s) return s;
    if (data.dataset == Dataset::plugin)
      if (auto s = r.require("plugin"); !s) return s;
    auto options = r.subtable("options");
    ACTORPIPE_TRY(options);
    if (*options)
      for (auto&& [key, v] : **options) {
        if (v.is_table() || v.is_array_of_tables())
          return config::error_at(v, "data.options." + std::string(key.str()), "plugin options are plain values");
        data.options[std::string(key.str())] = option_text(v);
      }
    return Ok{};
  });
}

/// train.cuda_graphs: true, false or "auto".
Status read_cuda_graphs(TableReader& r, CudaGraphs& out) {
  const toml::node* node = r.node("cuda_graphs");
  if (!node) return Ok{};
  if (const auto* on = node->as_boolean()) {
    out = on->get() ? CudaGraphs::on : CudaGraphs::off;
    return Ok{};
  }
  if (const auto* word = node->as_string(); word && word->get() == "auto") {
    out = CudaGraphs::shared_gpus;
    return Ok{};
  }
  const std::string found = node->is_string() ? "'" + node->as_string()->get() + "'" : config::type_name(*node);
  return config::error_at(*node, r.key_path("cuda_graphs"), "expected true, false or \"auto\", found " + found);
}

Status read_train(TableReader& top, TrainOptions& train) {
  return top.optional_table("train", [&](TableReader& r) -> Status {
    if (auto s = r.integer("batch_size", train.batch_size, 1u, 1u << 24); !s) return s;
    if (auto s = r.integer("epochs", train.epochs, 1u, max_epochs); !s) return s;
    if (auto s = r.integer("steps", train.steps, std::uint64_t{0}, max_steps); !s) return s;
    if (auto s = r.integer("evaluate_every", train.evaluate_every, 1u, max_epochs); !s) return s;
    if (auto s = r.integer("eval_every", train.eval_every, std::uint64_t{0}, max_steps); !s) return s;
    if (auto s = r.choice("optimizer", train.optimizer); !s) return s;
    if (auto s = r.number("lr", train.lr, 0, unlimited); !s) return s;
    if (auto s = r.number("momentum", train.momentum, 0, 0.999999); !s) return s;
    if (auto s = r.number("weight_decay", train.weight_decay, 0, unlimited); !s) return s;
    if (auto s = r.choice("lr_schedule", train.lr_schedule); !s) return s;
    if (auto s = r.integer("warmup_steps", train.warmup_steps, std::uint64_t{0}, max_steps); !s) return s;
    if (auto s = r.number("clip_norm", train.clip_norm, 0, unlimited); !s) return s;
    if (auto s = r.choice("buffers", train.buffers); !s) return s;
    if (auto s = r.boolean("retain_memory", train.retain_memory); !s) return s;
    std::string precision = precision_name(train.precision);
    if (auto s = r.choice("precision", precision, {"fp32", "bf16", "fp16"}); !s) return s;
    train.precision = *precision_named(precision);
    if (auto s = read_cuda_graphs(r, train.cuda_graphs); !s) return s;
    return Ok{};
  });
}

/// A positive count, or "auto" (auto_count) for the planner to choose.
Status count_or_auto(TableReader& r, std::string_view key, std::uint32_t& out) {
  const toml::node* node = r.node(key);
  if (node && node->is_string()) {
    if (node->as_string()->get() == "auto") {
      out = auto_count;
      return Ok{};
    }
    return config::error_at(*node, r.key_path(key),
                            "expected \"auto\" or a positive integer, found '" + node->as_string()->get() + "'");
  }
  return r.integer(key, out, 1u, 1u << 20);
}

Status read_plan(TableReader& top, PlanOptions& plan) {
  return top.optional_table("plan", [&](TableReader& r) -> Status {
    if (auto s = r.string("partitioner", plan.partitioner); !s) return s;
    if (auto s = r.string("mapper", plan.mapper); !s) return s;
    if (auto s = r.string("scheduler", plan.scheduler); !s) return s;
    // A sync plugin's name, checked by the planner against the plugins found.
    if (auto s = r.string("sync", plan.sync); !s) return s;
    if (auto s = count_or_auto(r, "stages", plan.stages); !s) return s;
    if (auto s = count_or_auto(r, "pipelines", plan.pipelines); !s) return s;
    if (auto s = count_or_auto(r, "micro_batches", plan.micro_batches); !s) return s;
    if (auto s = r.choice("tune", plan.tune); !s) return s;
    if (auto s = r.integer("tune_candidates", plan.tune_candidates, 2u, std::uint32_t{Plan::tried_shapes_kept}); !s)
      return s;
    if (auto s = r.integer("tune_steps", plan.tune_steps, 3u, 1000u); !s) return s;
    if (auto s = r.boolean("sub_blocks", plan.sub_blocks); !s) return s;
    if (auto s = r.path("schedule_file", plan.schedule_file); !s) return s;
    if (auto s = r.choice_list("recompute", plan.recompute); !s) return s;
    if (auto s = r.number("action_overhead_ms", plan.action_overhead_ms, 0, 1e6); !s) return s;
    if (auto s = r.path_list("plugin_path", plan.plugin_path); !s) return s;
    auto options = r.subtable("options");
    ACTORPIPE_TRY(options);
    if (*options) {
      for (auto&& [name, value] : **options) {
        const std::string path = "plan.options." + std::string(name.str());
        if (!value.is_table())
          return config::error_at(value, path, std::string("expected a table, found ") + config::type_name(value));
        PluginOptions& entries = plan.options[std::string(name.str())];
        for (auto&& [key, v] : *value.as_table()) {
          if (v.is_table() || v.is_array_of_tables())
            return config::error_at(v, path + "." + std::string(key.str()), "plugin options are plain values");
          entries[std::string(key.str())] = option_text(v);
        }
      }
    }
    return Ok{};
  });
}

Status read_simulate(TableReader& top, SimulateOptions& simulate) {
  return top.optional_table("simulate", [&](TableReader& r) -> Status {
    if (auto s = r.integer("iterations", simulate.iterations, 1u, 1u << 24); !s) return s;
    if (auto s = r.string("stragglers", simulate.stragglers); !s) return s;
    if (auto s = r.path("trace", simulate.trace); !s) return s;
    return Ok{};
  });
}

Status read_emulation(TableReader& top, EmulationOptions& emulation) {
  return top.optional_table("emulation", [&](TableReader& r) -> Status {
    if (auto s = r.number("dilation", emulation.dilation, 1, 1e6); !s) return s;
    if (auto s = r.string("stragglers", emulation.stragglers); !s) return s;
    return Ok{};
  });
}

Status read_output(TableReader& top, OutputOptions& output) {
  return top.optional_table("output", [&](TableReader& r) -> Status {
    if (auto s = r.path("dir", output.dir); !s) return s;
    if (auto s = r.integer("trace_steps", output.trace_steps); !s) return s;
    if (auto s = r.boolean("tensorboard", output.tensorboard); !s) return s;
    return Ok{};
  });
}

Status read_cluster_entry(TableReader& top, JobSpec& spec) {
  if (auto s = top.require("cluster"); !s) return s;
  const toml::node* node = top.node("cluster");
  if (const auto* name = node->as_string()) {
    spec.cluster_file = config::resolve_path(*node, name->get(), top.file());
    auto cluster = load_cluster(spec.cluster_file);
    if (!cluster) {
      Error error = std::move(cluster).error();
      // A missing file is best reported where it was named.
      if (!std::filesystem::is_regular_file(spec.cluster_file))
        return config::error_at(*node, "cluster", error.message);
      return error;
    }
    spec.cluster = std::move(*cluster);
    return Ok{};
  }
  if (const auto* table = node->as_table()) {
    auto cluster = config::read_cluster(*table, "cluster");
    ACTORPIPE_TRY(cluster);
    spec.cluster = std::move(*cluster);
    return Ok{};
  }
  return config::error_at(*node, "cluster",
                          std::string("expected a table or the name of a cluster file, found ") +
                              config::type_name(*node));
}

} // namespace

SourcePlace JobSpec::place_of(const std::string& key) const {
  const auto it = origins.find(key);
  return it != origins.end() ? it->second : SourcePlace{file};
}

std::string JobSpec::where(const std::string& key) const { return place_of(key).text() + ": " + key + ": "; }

Result<ClusterSpec> load_cluster(const std::string& path) {
  auto root = config::parse_toml_file(path);
  ACTORPIPE_TRY(root);
  return config::read_cluster(*root, "");
}

Result<JobSpec> load_job(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.ends_with(".lua")) return actorpipe::lua::load_job_file(path, overrides);
  auto parsed = config::parse_toml_file(path);
  ACTORPIPE_TRY(parsed);
  return config::read_job(std::move(*parsed), path, overrides);
}

Result<JobSpec> config::read_job(toml::table root, const std::string& path, const std::vector<std::string>& overrides,
                                 const KeyPlaces& places) {
  for (const auto& assignment : overrides)
    ACTORPIPE_TRY(apply_override(root, assignment));

  JobSpec spec;
  spec.file = path;
  record_origins(root, "", places, spec.origins);
  TableReader top(root, "", path);
  // An error about a key of a built table gets the key's place.
  const auto placed = [&](Status s) -> Status {
    if (s || s.error().place || s.error().key.empty() || !places) return s;
    const SourcePlace where = places(s.error().key);
    return std::move(s).error().placed(where);
  };
  ACTORPIPE_TRY(placed(read_job_section(top, spec.job)));
  ACTORPIPE_TRY(placed(read_model(top, spec.model)));
  ACTORPIPE_TRY(placed(read_data(top, spec.data)));
  ACTORPIPE_TRY(placed(read_train(top, spec.train)));
  ACTORPIPE_TRY(placed(read_plan(top, spec.plan)));
  ACTORPIPE_TRY(placed(read_simulate(top, spec.simulate)));
  ACTORPIPE_TRY(placed(read_emulation(top, spec.emulation)));
  ACTORPIPE_TRY(placed(read_output(top, spec.output)));
  ACTORPIPE_TRY(placed(read_cluster_entry(top, spec)));
  ACTORPIPE_TRY(placed(top.finish()));

  ProfileImportOptions import;
  import.batch_size = spec.model.profile_batch_size;
  import.format = spec.model.profile_format == "toml"        ? ProfileFormat::toml
                  : spec.model.profile_format == "pipedream" ? ProfileFormat::pipedream
                                                             : ProfileFormat::automatic;
  // A zoo model without a profile is measured by whoever runs it.
  if (spec.model.profile.empty()) return spec;
  if (auto s = check_input_file(spec.model.profile); !s)
    return std::move(s).error().with_context(spec.where("model.profile"));
  auto profile = load_profile(spec.model.profile, import);
  if (!profile) return std::move(profile).error().with_context(spec.where("model.profile"));
  // bf16 activations take half the bytes of fp32 ones, and compute at another speed:
  // plans from a profile measured in another precision than the job trains in mislead.
  if (profile->precision && *profile->precision != spec.train.precision)
    return Error::bad_input(
        spec.where("model.profile") + spec.model.profile + " was measured in " + precision_name(*profile->precision) +
        " but the job trains in " + precision_name(spec.train.precision) +
        " (train.precision): measure the model again (actorpipe profile) or set train.precision = \"" +
        precision_name(*profile->precision) + "\"");
  spec.profile = std::move(*profile);
  return spec;
}

} // namespace actorpipe
