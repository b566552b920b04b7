-- configs/vgg16-4dev.toml as a Lua job: a file that returns a table with the keys of a
-- TOML job. Values may be computed.
--   actorpipe plan configs/vgg16-4dev.lua
--   actorpipe plan configs/vgg16-4dev.lua --set plan.stages=2

local batch = 128

return {
  cluster = "clusters/4dev-one-server.toml",
  job = { name = "vgg16-4dev-lua" },
  model = {
    profile = "profiles/pipedream/vgg16.txt",
    profile_batch_size = batch, -- the profile's input is 128 × 3×224×224 float32
  },
  train = { batch_size = batch, optimizer = "sgd", lr = 0.01, momentum = 0.9 },
  plan = {
    partitioner = "uniform",
    mapper = "sequential",
    scheduler = "1f1b",
    stages = 4,
    pipelines = 1,
    micro_batches = batch // 16,
  },
}
