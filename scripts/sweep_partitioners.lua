-- Partitioners × stage counts on one job: the planner's predicted step time and
-- samples/s for each, as a table, a CSV file and a bar chart.
--
--   actorpipe script scripts/sweep_partitioners.lua [JOB] [PARTITIONERS] [STAGES]
--   actorpipe script scripts/sweep_partitioners.lua configs/gpt2-xl-hetero-2x8.toml autopipe,uniform 2,4,8
--
-- Writes partitioners.csv and partitioners.svg into the output folder
-- (runs/sweep_partitioners unless --output says otherwise).

local job_file = actorpipe.args[1] or "configs/vgg16-4dev.toml"

local function list(text, default)
  if not text then return default end
  local out = {}
  for item in text:gmatch("[^,]+") do out[#out + 1] = item end
  return out
end

local partitioners = list(actorpipe.args[2], { "autopipe", "dapple", "parameters", "pipedream", "piper", "uniform" })
local stage_counts = list(actorpipe.args[3], { "2", "4" })

local job = actorpipe.load_job(job_file)
local rows, refused = {}, {}
print(string.format("%-12s %6s %12s %12s %8s", "partitioner", "stages", "step ms", "samples/s", "balance"))
for _, partitioner in ipairs(partitioners) do
  for _, stages in ipairs(stage_counts) do
    -- A partitioner may refuse a shape (a baseline that cuts whole blocks only, say):
    -- that is a finding of the sweep, not a reason to stop it.
    local ok, plan = pcall(actorpipe.plan, job, { ["plan.partitioner"] = partitioner, ["plan.stages"] = tonumber(stages) })
    if ok then
      rows[#rows + 1] = {
        partitioner = partitioner,
        stages = tonumber(stages),
        pipelines = plan.pipelines,
        step_ms = plan.iteration_time_ms,
        samples_per_s = plan.samples_per_s,
        balance = plan.balance,
      }
      print(string.format("%-12s %6d %12.2f %12.1f %8.3f", partitioner, tonumber(stages), plan.iteration_time_ms,
        plan.samples_per_s, plan.balance))
    else
      refused[#refused + 1] = string.format("%s with %s stages: %s", partitioner, stages, plan)
      print(string.format("%-12s %6d %12s %12s %8s", partitioner, tonumber(stages), "-", "-", "-"))
    end
  end
end
for _, reason in ipairs(refused) do print("refused: " .. reason) end
if #rows == 0 then error("no partitioner planned " .. job_file) end

local csv = actorpipe.write_csv("partitioners.csv", rows,
  { "partitioner", "stages", "pipelines", "step_ms", "samples_per_s", "balance" })

-- One bar per partitioner in each stage count's group; 0 where it refused.
local groups = {}
for _, partitioner in ipairs(partitioners) do
  local values = {}
  for i, stages in ipairs(stage_counts) do
    values[i] = 0
    for _, row in ipairs(rows) do
      if row.partitioner == partitioner and row.stages == tonumber(stages) then values[i] = row.samples_per_s end
    end
  end
  groups[#groups + 1] = { label = partitioner, values = values }
end
local categories = {}
for i, stages in ipairs(stage_counts) do categories[i] = stages .. " stages" end
local chart = actorpipe.plot_bars("partitioners.svg", {
  title = "Predicted samples/s by partitioner: " .. job_file,
  x_label = "stages per pipeline",
  y_label = "samples/s (predicted)",
  categories = categories,
  groups = groups,
})
print("wrote " .. csv .. " and " .. chart)
