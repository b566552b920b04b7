-- A short real run and the timeline of its last step: one row per stage actor, a box
-- per forward and backward of each micro-batch, and the sync and optimizer step.
--
--   actorpipe script scripts/plot_timeline.lua [JOB] [STEPS]
--
-- Writes timeline.svg and the run's folder into the output folder
-- (runs/plot_timeline unless --output says otherwise).

local job_file = actorpipe.args[1] or "configs/fashion-mnist.toml"
local steps = tonumber(actorpipe.args[2] or "20")

local run = actorpipe.run(job_file, { steps = steps, output = "run" })
local chart = actorpipe.plot_timeline("timeline.svg", run.output_dir, {
  title = string.format("%s, step %d (median step %.2f ms)", job_file, run.steps, run.median_step_ms),
})
print("wrote " .. chart)
