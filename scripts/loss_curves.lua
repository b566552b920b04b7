-- Training loss against step for several runs of one job that differ in one setting
-- (by default the learning rate), as a line chart and a CSV file.
--
--   actorpipe script scripts/loss_curves.lua [JOB] [STEPS] [KEY] [VALUES]
--   actorpipe script scripts/loss_curves.lua configs/fashion-mnist.toml 200 train.lr 0.01,0.05,0.1
--   actorpipe script scripts/loss_curves.lua configs/fashion-mnist.toml 200 plan.scheduler gpipe,1f1b
--
-- Writes losses.csv, losses.svg and a run folder per value into the output folder
-- (runs/loss_curves unless --output says otherwise).

local job_file = actorpipe.args[1] or "configs/fashion-mnist.toml"
local steps = tonumber(actorpipe.args[2] or "100")
local key = actorpipe.args[3] or "train.lr"
local values = {}
for item in (actorpipe.args[4] or "0.01,0.05,0.1"):gmatch("[^,]+") do
  values[#values + 1] = tonumber(item) or item
end

local job = actorpipe.load_job(job_file)
local series, rows = {}, {}
for i, value in ipairs(values) do
  local label = key .. " = " .. tostring(value)
  local x, y = {}, {}
  local run = actorpipe.run(actorpipe.with(job, { [key] = value }), {
    steps = steps,
    output = "run-" .. i,
    on_step = function(m)
      x[#x + 1] = m.step
      y[#y + 1] = m.loss
      rows[#rows + 1] = { run = label, step = m.step, loss = m.loss, samples_per_s = m.samples_per_s }
    end,
  })
  series[#series + 1] = { label = label, x = x, y = y }
  print(string.format("%-24s final loss %.4f, %.0f samples/s, test accuracy %.2f%%", label, run.final_loss,
    run.samples_per_s, 100 * run.test_accuracy))
end

local csv = actorpipe.write_csv("losses.csv", rows, { "run", "step", "loss", "samples_per_s" })
local chart = actorpipe.plot_lines("losses.svg", {
  title = "Training loss: " .. job_file,
  x_label = "step",
  y_label = "training loss",
  series = series,
})
print("wrote " .. csv .. " and " .. chart)
