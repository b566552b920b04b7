-- gpipe, 1f1b, sliced-1f1b, afp, zb-h1, zb-h2, interleaved-1f1b and zbv on one job: the simulator's step time, bubble and
-- peak memory beside a short real run of each: its step time, samples/s and the most
-- micro-batches whose activations each stage held at once.
--
--   actorpipe script scripts/compare_schedules.lua [JOB] [STEPS] [SCHEDULES]
--   actorpipe script scripts/compare_schedules.lua configs/fashion-mnist.toml 60
--   actorpipe script scripts/compare_schedules.lua configs/experiments/gpt-hetero.toml 120 1f1b,afp,gpipe
--
-- Writes schedules.csv, schedules.svg and a run folder per schedule into the output
-- folder (runs/compare_schedules unless --output says otherwise).

local job_file = actorpipe.args[1] or "configs/fashion-mnist.toml"
local steps = tonumber(actorpipe.args[2] or "40")
local schedules = {}
for name in string.gmatch(actorpipe.args[3] or "gpipe,1f1b,sliced-1f1b,afp,zb-h1,zb-h2,interleaved-1f1b,zbv", "[^,]+") do
  schedules[#schedules + 1] = name
end

local job = actorpipe.load_job(job_file)
local rows = {}
print(string.format("%-16s %14s %14s %10s %8s %14s %s", "schedule", "simulated ms", "measured ms", "samples/s", "bubble",
  "peak memory", "stashed by stage"))
for _, schedule in ipairs(schedules) do
  local this = actorpipe.with(job, { ["plan.scheduler"] = schedule })
  -- A schedule with chunks cuts the model into twice the stages, which a small model
  -- may not have: it is named and skipped.
  local planned, simulated = pcall(actorpipe.simulate, this)
  if not planned then
    print(string.format("%-16s cannot be planned for this job: %s", schedule, simulated))
    goto next_schedule
  end
  do
    local bubble, peak = 0, 0
    for _, stage in ipairs(simulated.stages) do bubble = bubble + stage.bubble / #simulated.stages end
    -- A device's memory holds all its chunks (virtual stages).
    local held = {}
    for _, device in ipairs(simulated.devices) do
      local key = device.pipeline .. " " .. device.device
      held[key] = (held[key] or 0) + device.peak_memory_bytes
      peak = math.max(peak, held[key])
    end
    local run = actorpipe.run(this, { steps = steps, output = schedule })
    local stashed = table.concat(run.peak_stashed, " ")
    rows[#rows + 1] = {
      schedule = schedule,
      simulated_ms = simulated.iteration_time_ms,
      measured_ms = run.median_step_ms,
      predicted_here_ms = run.predicted_step_ms,
      samples_per_s = run.samples_per_s,
      bubble = bubble,
      peak_memory_bytes = peak,
      peak_stashed = stashed,
      final_loss = run.final_loss,
    }
    print(string.format("%-16s %14.2f %14.2f %10.0f %8.3f %11.1f MB %s", schedule, simulated.iteration_time_ms,
      run.median_step_ms, run.samples_per_s, bubble, peak / 1e6, stashed))
  end
  ::next_schedule::
end

local csv = actorpipe.write_csv("schedules.csv", rows,
  { "schedule", "simulated_ms", "predicted_here_ms", "measured_ms", "samples_per_s", "bubble", "peak_memory_bytes",
    "peak_stashed", "final_loss" })
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
