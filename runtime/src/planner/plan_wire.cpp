/// Plans as exact text, between the coordinator and its workers.

#include "planner/plan_wire.hpp"

#include <actorpipe/schedule_io.hpp>

#include <nlohmann/json.hpp>

namespace actorpipe::planner {

namespace {

using json = nlohmann::json;

json cut_json(const Cut& cut) { return {cut.block, cut.sub}; }

Cut cut_of(const json& j) { return {j.at(0).get<std::size_t>(), j.at(1).get<std::size_t>()}; }

} // namespace

std::string plan_to_wire(const Plan& plan) {
  json stages = json::array();
  for (const StagePlan& s : plan.stages) {
    const StageEstimate& e = s.estimate;
    stages.push_back({{"begin", cut_json(s.begin)},
                      {"end", cut_json(s.end)},
                      {"recompute", option_name(s.recompute)},
                      {"estimate",
                       {e.forward_ms, e.backward_ms, e.compute_ms, e.bubble, e.parameter_bytes, e.optimizer_bytes,
                        e.activation_bytes, e.workspace_bytes, e.memory_bytes}}});
  }
  json tried = json::array();
  for (const TriedShape& t : plan.tried)
    tried.push_back(
        {t.stages, t.pipelines, t.micro_batches, t.slices, t.iteration_time_ms, t.samples_per_s, t.fits, t.scheduler});
  const json document = {
      {"model", plan.model},
      {"cluster", plan.cluster},
      {"partitioner", plan.partitioner},
      {"mapper", plan.mapper},
      {"scheduler", plan.scheduler},
      {"sync", plan.sync},
      {"stepping", {plan.stepping.asynchronous, plan.stepping.staleness}},
      {"pipelines", plan.pipelines},
      {"stages", stages},
      {"devices", plan.devices},
      {"batch_size", plan.batch_size},
      {"schedule", format_schedule(plan.schedule)},
      {"predicted", {plan.iteration_time_ms, plan.samples_per_s, plan.balance, plan.parameter_balance}},
      {"search", {plan.search_ms, plan.candidates}},
      {"tried", tried},
  };
  return document.dump();
}

Result<Plan> plan_from_wire(std::string_view text) {
  const json document = json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) return Error::bad_input("the plan: not a plan's text");
  Plan plan;
  std::string field;
  try {
    const auto at = [&](const char* key) -> const json& {
      field = key;
      return document.at(key);
    };
    at("model").get_to(plan.model);
    at("cluster").get_to(plan.cluster);
    at("partitioner").get_to(plan.partitioner);
    at("mapper").get_to(plan.mapper);
    at("scheduler").get_to(plan.scheduler);
    at("sync").get_to(plan.sync);
    const json& stepping = at("stepping");
    plan.stepping.asynchronous = stepping.at(0).get<bool>();
    plan.stepping.staleness = stepping.at(1).get<std::uint64_t>();
    at("pipelines").get_to(plan.pipelines);
    for (const json& s : at("stages")) {
      const json& e = s.at("estimate");
      const std::optional<Recompute> recompute = option_named<Recompute>(s.at("recompute").get<std::string>());
      if (!recompute) return Error::bad_input("the plan: a stage's recompute is none of its values");
      plan.stages.push_back({cut_of(s.at("begin")),
                             cut_of(s.at("end")),
                             {e.at(0).get<double>(), e.at(1).get<double>(), e.at(2).get<double>(),
                              e.at(3).get<double>(), e.at(4).get<std::uint64_t>(), e.at(5).get<std::uint64_t>(),
                              e.at(6).get<std::uint64_t>(), e.at(7).get<std::uint64_t>(), e.at(8).get<std::uint64_t>()},
                             *recompute});
    }
    at("devices").get_to(plan.devices);
    at("batch_size").get_to(plan.batch_size);
    const json& predicted = at("predicted");
    plan.iteration_time_ms = predicted.at(0).get<double>();
    plan.samples_per_s = predicted.at(1).get<double>();
    plan.balance = predicted.at(2).get<double>();
    plan.parameter_balance = predicted.at(3).get<double>();
    const json& search = at("search");
    plan.search_ms = search.at(0).get<double>();
    plan.candidates = search.at(1).get<std::size_t>();
    for (const json& t : at("tried"))
      plan.tried.push_back({t.at(0).get<std::size_t>(), t.at(1).get<std::size_t>(), t.at(2).get<std::uint32_t>(),
                            t.at(3).get<std::uint32_t>(), t.at(4).get<double>(), t.at(5).get<double>(),
                            t.at(6).get<bool>(), t.at(7).get<std::string>()});
    field = "schedule";
    auto schedule = parse_schedule(at("schedule").get<std::string>(), "the plan's schedule");
    ACTORPIPE_TRY(schedule);
    plan.schedule = std::move(*schedule);
  } catch (const json::exception& e) {
    return Error::bad_input("the plan: field '" + field + "' is missing or wrong (" + e.what() + ")");
  }
  return plan;
}

} // namespace actorpipe::planner
