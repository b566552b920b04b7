-- Run by embed_host through actorpipe::run_script: plans the host's job again and
-- writes what the plan says into the script's output folder.
local job_file = actorpipe.args[1]
local plan = actorpipe.plan(job_file)
actorpipe.write_json("plan.json", plan)
print(string.format("script: %d stages, %.3f ms per step predicted", plan.stages_per_pipeline,
  plan.iteration_time_ms))
