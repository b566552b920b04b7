-- gpipe, 1f1b and sliced-1f1b on one job: the simulator's step time, bubble and peak
-- memory beside the step time measured in a short real run of each.
--
--   actorpipe script scripts/compare_schedules.lua [JOB] [STEPS]
--   actorpipe script scripts/compare_schedules.lua configs/fashion-mnist.toml 60
--
-- Writes schedules.csv, schedules.svg and a run folder per schedule into the output
-- folder (runs/compare_schedules unless --output says otherwise).

local job_file = actorpipe.args[1] or "configs/fashion-mnist.toml"
local steps = tonumber(actorpipe.args[2] or "40")
local schedules = { "gpipe", "1f1b", "sliced-1f1b" }

local job = actorpipe.load_job(job_file)
local rows = {}
print(string.format("%-12s %14s %14s %8s %14s", "schedule", "simulated ms", "measured ms", "bubble", "peak memory"))
for _, schedule in ipairs(schedules) do
  local this = actorpipe.with(job, { ["plan.scheduler"] = schedule })
  local simulated = actorpipe.simulate(this)
  local bubble, peak = 0, 0
  for _, stage in ipairs(simulated.stages) do bubble = bubble + stage.bubble / #simulated.stages end
  for _, device in ipairs(simulated.devices) do peak = math.max(peak, device.peak_memory_bytes) end
  local run = actorpipe.run(this, { steps = steps, output = schedule })
  rows[#rows + 1] = {
    schedule = schedule,
    simulated_ms = simulated.iteration_time_ms,
    measured_ms = run.median_step_ms,
    predicted_here_ms = run.predicted_step_ms,
    bubble = bubble,
    peak_memory_bytes = peak,
    final_loss = run.final_loss,
  }
  print(string.format("%-12s %14.2f %14.2f %8.3f %11.1f MB", schedule, simulated.iteration_time_ms,
    run.median_step_ms, bubble, peak / 1e6))
end

local csv = actorpipe.write_csv("schedules.csv", rows,
  { "schedule", "simulated_ms", "predicted_here_ms", "measured_ms", "bubble", "peak_memory_bytes", "final_loss" })
local predicted, measured, names = {}, {}, {}
for i, row in ipairs(rows) do
  names[i] = row.schedule
  predicted[i] = row.predicted_here_ms
  measured[i] = row.measured_ms
end
local chart = actorpipe.plot_bars("schedules.svg", {
  title = "Step time by schedule: " .. job_file,
  y_label = "ms per step",
  categories = names,
  groups = { { label = "predicted here", values = predicted }, { label = "measured", values = measured } },
})
print("wrote " .. csv .. " and " .. chart)
