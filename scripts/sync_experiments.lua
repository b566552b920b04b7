-- Sync policies on one job, without and with stragglers: samples/s (in modelled time,
-- and as `simulate` predicts the same run from the same profile), the modelled time
-- each takes to bring its training loss (a running mean over 20 steps) under a target,
-- and its final test accuracy; then the heterogeneity-aware plan (the job's
-- partitioner and mapper) against uniform + sequential.
--
--   actorpipe script scripts/sync_experiments.lua [JOB] [STEPS] [POLICIES] [STRAGGLERS] [TARGET_LOSS]
--   actorpipe script scripts/sync_experiments.lua configs/experiments/fashion-mnist-hetero.toml 600 \
--       allreduce,sdpipe,elastic,elastic:asynchronous=true:alpha=0.25+afp+tuned,parameter-server,ad-psgd \
--       auto 0.6
--   actorpipe script scripts/sync_experiments.lua configs/experiments/gpt-hetero.toml 120 \
--       allreduce,sdpipe,elastic:asynchronous=true:alpha=0.25+afp+tuned,parameter-server,ad-psgd auto 2.8
--   actorpipe script scripts/sync_experiments.lua configs/experiments/fashion-mnist-hetero.toml 600 \
--       allreduce,sdpipe,allreduce+tuned,sdpipe+tuned auto 0.6
--
-- 600 steps are 1.3 epochs of the CNN's data: after 300, the final accuracy of a policy
-- whose pipelines step alone still moved by about a point from one run to the next.
--
-- STRAGGLERS is a straggler specification (docs/running.md), or `auto` (the default):
-- each action delayed with probability 0.1 by twice a micro-batch's compute, its
-- forward and backward through every stage as `simulate` predicts them for the job.
--
-- A policy is a sync plugin's name, optionally with options (`:KEY=VALUE`, as its
-- `[plan.options.NAME]` would set them), `+SCHEDULER` (the job's scheduler otherwise)
-- and `+tuned` (the number of pipelines, and so of stages in each, and of micro-batches
-- "auto", chosen by measured runs of 24 steps: plan.tune = "profile"):
-- `elastic:asynchronous=true+afp+tuned` is AvgPipe's combination. A tuned policy is
-- compared with the first policy as the job plans it, and with that policy tuned too
-- (`allreduce+tuned`) where it is listed: each at the shape that suits it. On the
-- heterogeneous cluster these differ: lockstep all-reduce waits for the slowest
-- pipeline, and is fastest on the four new devices alone; sdpipe's pipelines step
-- alone, and it is fastest with a pipeline on every device.
--
-- Writes sync.csv (a row per policy and straggler setting), plans.csv, sync_samples.svg,
-- sync_time_to_target.svg, sync_losses.svg and a run folder per row into the output
-- folder (runs/sync_experiments unless --output says otherwise).

local job_file = actorpipe.args[1] or "configs/experiments/fashion-mnist-hetero.toml"
local steps = tonumber(actorpipe.args[2] or "600")
local policies = {}
for name in string.gmatch(actorpipe.args[3] or
  "allreduce,sdpipe,elastic,parameter-server,ad-psgd,allreduce+tuned,sdpipe+tuned,elastic:asynchronous=true+afp+tuned",
  "[^,]+") do
  policies[#policies + 1] = name
end
local stragglers = actorpipe.args[4] or "auto"
local target = tonumber(actorpipe.args[5] or "0.6")
local job = actorpipe.load_job(job_file)
if stragglers == "auto" then
  local micro_batch_ms = 0
  for _, stage in ipairs(actorpipe.simulate(job).stages) do
    micro_batch_ms = micro_batch_ms + stage.forward_ms + stage.backward_ms
  end
  micro_batch_ms = tonumber(string.format("%.4f", micro_batch_ms))
  stragglers = string.format("delay:p=0.1,ms=%.4f", 2 * micro_batch_ms)
  print(string.format("a micro-batch's compute: %.4f ms (simulated); stragglers: %s", micro_batch_ms, stragglers))
end
local settings = { { label = "no stragglers", spec = "" }, { label = "stragglers", spec = stragglers } }

-- "sync:key=value+scheduler+tuned" → the job keys it sets.
local function policy_keys(policy)
  local keys = {}
  for part in string.gmatch(policy, "[^+]+") do
    if not keys["plan.sync"] then
      local sync = string.match(part, "^[^:]+")
      keys["plan.sync"] = sync
      for key, value in string.gmatch(part, ":([^:=]+)=([^:]+)") do
        keys["plan.options." .. sync .. "." .. key] = value
      end
    elseif part == "tuned" then
      keys["plan.stages"] = "auto"
      keys["plan.pipelines"] = "auto"
      keys["plan.micro_batches"] = "auto"
      keys["plan.tune"] = "profile"
      keys["plan.tune_steps"] = 24 -- pipelines stepping alone take a while to find their pace
    else
      keys["plan.scheduler"] = part
    end
  end
  return keys
end

local rows, curves = {}, {}
print(string.format("%-24s %-14s %12s %10s %16s %10s %10s %s", "sync", "stragglers", "samples/s", "predicted",
  "ms to loss " .. target, "final loss", "accuracy", "tuned shape"))
for _, setting in ipairs(settings) do
  for _, policy in ipairs(policies) do
    local keys = policy_keys(policy)
    keys["emulation.stragglers"] = setting.spec
    local this = actorpipe.with(job, keys)
    local elapsed, reached, window, sum = 0, nil, {}, 0
    local curve = { label = policy .. (setting.spec == "" and "" or " + stragglers"), x = {}, y = {} }
    local run = actorpipe.run(this, {
      steps = steps,
      output = policy:gsub("[+:=]", "-") .. (setting.spec == "" and "" or "-stragglers"),
      on_step = function(m)
        elapsed = elapsed + m.step_ms
        window[#window + 1] = m.loss
        sum = sum + m.loss
        if #window > 20 then sum = sum - table.remove(window, 1) end
        local mean = sum / #window
        if not reached and #window == 20 and mean <= target then reached = elapsed end
        curve.x[#curve.x + 1] = elapsed / 1000
        curve.y[#curve.y + 1] = mean
      end,
    })
    curves[#curves + 1] = curve
    -- What the simulator predicts of the same run: the profile, shape, stragglers and
    -- steps it ran with.
    local predict = { ["simulate.iterations"] = steps, ["simulate.stragglers"] = setting.spec }
    if run.tune then
      local chosen = run.tune.tried[run.tune.chosen + 1]
      predict["plan.stages"] = chosen.stages
      predict["plan.pipelines"] = chosen.pipelines
      predict["plan.micro_batches"] = chosen.micro_batches
      predict["plan.tune"] = "simulate"
    end
    local predicted = actorpipe.simulate(actorpipe.with(this, predict)).samples_per_s
    rows[#rows + 1] = {
      sync = policy,
      stragglers = setting.spec,
      samples_per_s = run.samples_per_s,
      predicted_samples_per_s = predicted,
      median_step_ms = run.median_step_ms,
      ms_to_target = reached or -1,
      final_loss = run.final_loss,
      test_accuracy = run.test_accuracy,
      shape = run.tune and string.format("%d x %d x %d", run.tune.tried[run.tune.chosen + 1].stages,
        run.tune.tried[run.tune.chosen + 1].pipelines, run.tune.tried[run.tune.chosen + 1].micro_batches) or "",
    }
    print(string.format("%-24s %-14s %12.0f %10.0f %16s %10.4f %9.2f%% %s", policy, setting.label,
      run.samples_per_s, predicted, reached and string.format("%.0f", reached) or "not reached", run.final_loss, 100 * run.test_accuracy,
      rows[#rows].shape))
  end
end

local csv = actorpipe.write_csv("sync.csv", rows,
  { "sync", "stragglers", "samples_per_s", "predicted_samples_per_s", "median_step_ms", "ms_to_target", "final_loss", "test_accuracy", "shape" })

-- Each policy against the first (allreduce, the synchronous reference), per setting;
-- and a tuned policy also against the reference tuned (`allreduce+tuned`, where it is
-- listed), which had the same chance to pick the shape that suits it.
local function compare(row, base, label, how)
  local times = "time to target not reached by both"
  if row.ms_to_target > 0 and base.ms_to_target > 0 then
    times = string.format("%.2fx the time to target", row.ms_to_target / base.ms_to_target)
  end
  print(string.format("%s against %s%s, %s: %.2fx samples/s, %s, accuracy %+.2f points", row.sync, base.sync, how,
    label, row.samples_per_s / base.samples_per_s, times, 100 * (row.test_accuracy - base.test_accuracy)))
end
local reference_sync = policy_keys(policies[1])["plan.sync"]
local tuned_reference
for p, policy in ipairs(policies) do
  local keys = policy_keys(policy)
  if not tuned_reference and keys["plan.tune"] and keys["plan.sync"] == reference_sync then tuned_reference = p end
end
for s, setting in ipairs(settings) do
  local function row_of(p) return rows[(s - 1) * #policies + p] end
  for p = 2, #policies do
    compare(row_of(p), row_of(1), setting.label, "")
    if tuned_reference and tuned_reference > 1 and p ~= tuned_reference and policy_keys(policies[p])["plan.tune"] then
      compare(row_of(p), row_of(tuned_reference), setting.label, " (both tuned)")
    end
  end
end

-- The job's plan against uniform partitioning and sequential mapping, first policy, no
-- stragglers.
local planned = actorpipe.plan(job)
local plan_rows = { { plan = planned.partitioner .. " + " .. planned.mapper, samples_per_s = rows[1].samples_per_s,
  predicted_samples_per_s = rows[1].predicted_samples_per_s } }
local naive_job = actorpipe.with(job, { ["plan.sync"] = policy_keys(policies[1])["plan.sync"],
  ["plan.partitioner"] = "uniform", ["plan.mapper"] = "sequential" })
local naive = actorpipe.run(naive_job, { steps = steps, output = "uniform-sequential" })
plan_rows[2] = { plan = "uniform + sequential", samples_per_s = naive.samples_per_s,
  predicted_samples_per_s = actorpipe.simulate(actorpipe.with(naive_job, { ["simulate.iterations"] = steps }))
      .samples_per_s }
print(string.format("%s against uniform + sequential: %.0f against %.0f samples/s, %.2fx (predicted %.0f against %.0f)",
  plan_rows[1].plan, plan_rows[1].samples_per_s, naive.samples_per_s, plan_rows[1].samples_per_s / naive.samples_per_s,
  plan_rows[1].predicted_samples_per_s, plan_rows[2].predicted_samples_per_s))
local plans_csv = actorpipe.write_csv("plans.csv", plan_rows, { "plan", "samples_per_s", "predicted_samples_per_s" })
local groups = {}
for s, setting in ipairs(settings) do
  local samples, times = {}, {}
  for p = 1, #policies do
    local row = rows[(s - 1) * #policies + p]
    samples[p] = row.samples_per_s
    times[p] = row.ms_to_target > 0 and row.ms_to_target / 1000 or 0
  end
  groups[s] = { label = setting.label, samples = samples, times = times }
end
local function bars(file, title, y_label, field)
  return actorpipe.plot_bars(file, {
    title = title,
    y_label = y_label,
    categories = policies,
    groups = { { label = groups[1].label, values = groups[1][field] }, { label = groups[2].label, values = groups[2][field] } },
  })
end
local charts = {
  bars("sync_samples.svg", "Samples/s by sync policy: " .. job_file, "samples/s (modelled)", "samples"),
  bars("sync_time_to_target.svg", "Time to a training loss of " .. target .. " (0: not reached)", "s (modelled)",
    "times"),
  actorpipe.plot_lines("sync_losses.svg", {
    title = "Training loss (mean of 20 steps) over modelled time",
    x_label = "s (modelled)",
    y_label = "loss",
    series = curves,
  }),
}
print("wrote " .. csv .. ", " .. plans_csv .. ", " .. table.concat(charts, ", "))
