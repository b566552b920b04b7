/// Plan's checks against the model and cluster it was made for, and how reports name
/// a stage's blocks and a plan's stepping.

#include <actorpipe/plan.hpp>

#include <numeric>
#include <set>

namespace actorpipe {

std::size_t first_block(const StagePlan& stage) { return stage.begin.block; }

std::size_t last_block(const StagePlan& stage) { return stage.end.sub == 0 ? stage.end.block - 1 : stage.end.block; }

std::string describe_blocks(const StagePlan& stage) {
  auto position = [](std::size_t block, std::size_t sub) {
    return sub == 0 ? std::to_string(block) : std::to_string(block) + "." + std::to_string(sub);
  };
  const std::string first = position(stage.begin.block, stage.begin.sub);
  // The end is exclusive: show the last unit the stage holds.
  const std::string last = stage.end.sub == 0
                               ? std::to_string(stage.end.block - 1)
                               : std::to_string(stage.end.block) + "." + std::to_string(stage.end.sub - 1);
  return first == last ? first : first + "-" + last;
}

namespace {

/// "1 stage", "4 stages".
std::string counted(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

std::string describe_shape(std::size_t stages, std::size_t pipelines, std::size_t micro_batches) {
  return counted(stages, "stage", "stages") + " × " + counted(pipelines, "pipeline", "pipelines") +
         (micro_batches ? " × " + counted(micro_batches, "micro-batch", "micro-batches") : "");
}

std::string describe_stages(const Plan& plan) {
  std::string out = counted(plan.stages.size(), "stage", "stages");
  const Schedule& s = plan.schedule;
  if (s.chunks > 1)
    out += " (" + std::to_string(s.stages.size()) + " devices × " + std::to_string(s.chunks) + " chunks " +
           (s.shape == ChunkShape::v ? "in a V" : "in a loop") + ")";
  return out;
}

std::string describe_stepping(const SyncStepping& stepping) {
  if (!stepping.asynchronous) return "in lockstep";
  if (stepping.staleness == SyncStepping::unbounded) return "pipelines step alone";
  return "pipelines step alone, at most " + std::to_string(stepping.staleness) + " step" +
         (stepping.staleness == 1 ? "" : "s") + " ahead";
}

std::vector<bool> recomputed_units(const ModelProfile& profile, const StagePlan& stage) {
  std::vector<Unit> units;
  double stash = 0, forward = 0; // of the whole model
  profile.for_each_unit(true, [&](const Unit& u) {
    stash += static_cast<double>(u.stash_bytes_per_sample);
    forward += u.forward_ms;
    if (!(u.begin < stage.begin) && u.begin < stage.end) units.push_back(u);
  });
  std::vector<bool> out(units.size(), stage.recompute == Recompute::full);
  if (stage.recompute != Recompute::selective || stash <= 0) return out;
  for (std::size_t i = 0; i < units.size(); ++i) {
    const Unit& u = units[i];
    // Bytes per ms above the model's: memory that is cheap to make again. A unit that
    // takes no time and stashes something is the cheapest of all.
    out[i] = u.stash_bytes_per_sample > 0 &&
             (u.forward_ms <= 0 || forward <= 0 ||
              static_cast<double>(u.stash_bytes_per_sample) / u.forward_ms > stash / forward);
  }
  return out;
}

Status Plan::validate(const ModelProfile& profile, const ClusterSpec& cluster) const {
  if (stages.empty()) return Error::bad_input("plan: has no stages");
  if (pipelines == 0) return Error::bad_input("plan: has no pipelines");
  const Cut model_end{profile.blocks.size(), 0};
  Cut expected{0, 0};
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const StagePlan& stage = stages[s];
    const std::string where = "plan: stage " + std::to_string(s) + ": ";
    if (stage.begin != expected) return Error::bad_input(where + "does not start where the previous stage ends");
    if (!(stage.begin < stage.end)) return Error::bad_input(where + "is empty");
    if (stage.end > model_end) return Error::bad_input(where + "ends past the model's last block");
    if (stage.end.block < profile.blocks.size() && stage.end.sub > 0 &&
        stage.end.sub >= profile.blocks[stage.end.block].sub_blocks.size())
      return Error::bad_input(where + "ends at a sub-block that " + describe(profile, {stage.end.block, 0}) +
                              " does not have");
    expected = stage.end;
  }
  if (expected != model_end) return Error::bad_input("plan: the stages do not cover the whole model");

  if (devices.size() != pipelines)
    return Error::bad_input("plan: has devices for " + std::to_string(devices.size()) + " pipelines, not " +
                            std::to_string(pipelines));
  if (!schedule.stages.empty() && schedule.virtual_stages() != stages.size())
    return Error::bad_input("plan: schedule '" + schedule.name + "' runs " + std::to_string(schedule.virtual_stages()) +
                            " stages (" + std::to_string(schedule.stages.size()) + " devices × " +
                            std::to_string(schedule.chunks) + " chunks), the plan has " +
                            std::to_string(stages.size()));
  // A device runs one stage, or with chunks the virtual stages its chunks hold.
  std::set<DeviceId> used;
  for (std::size_t p = 0; p < pipelines; ++p) {
    if (devices[p].size() != stages.size())
      return Error::bad_input("plan: pipeline " + std::to_string(p) + " has devices for " +
                              std::to_string(devices[p].size()) + " stages, not " + std::to_string(stages.size()));
    for (std::size_t s = 0; s < stages.size(); ++s) {
      const DeviceId d = devices[p][s];
      const std::string where = "plan: pipeline " + std::to_string(p) + " stage " + std::to_string(s) + ": ";
      if (d >= cluster.devices.size())
        return Error::bad_input(where + "device " + std::to_string(d) + " does not exist (cluster '" + cluster.name +
                                "' has " + std::to_string(cluster.devices.size()) + ")");
      const ChunkPlace at = schedule.chunks > 1 ? schedule.place_of(s) : ChunkPlace{s, 0};
      if (at.chunk > 0) {
        const std::size_t first = schedule.virtual_stage(at.stage, 0);
        if (d != devices[p][first])
          return Error::bad_input(where + "is chunk " + std::to_string(at.chunk) + " of the device of stage " +
                                  std::to_string(first) + " (" + cluster.devices[devices[p][first]].name +
                                  "), not on " + cluster.devices[d].name);
      } else if (!used.insert(d).second) {
        return Error::bad_input(where + "device " + cluster.devices[d].name + " already runs another stage");
      }
    }
  }
  const auto& sizes = schedule.micro_batch_sizes;
  if (sizes.empty()) return Error::bad_input("plan: has no micro-batches");
  std::uint64_t samples = 0;
  for (std::size_t m = 0; m < sizes.size(); ++m) {
    if (sizes[m] == 0) return Error::bad_input("plan: micro-batch " + std::to_string(m) + " is empty");
    samples += sizes[m];
  }
  if (samples * pipelines != batch_size)
    return Error::bad_input("plan: micro-batches hold " + std::to_string(samples) + " samples per pipeline × " +
                            std::to_string(pipelines) + " pipelines, but the batch is " + std::to_string(batch_size));
  return Ok{};
}

} // namespace actorpipe
