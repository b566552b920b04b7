-- Lua twins of shipped C++ plugins (uniform, sequential, gpipe) and an all-pipelines
-- sync policy: a plan made with the twins must equal one made with the originals.
actorpipe.register_partitioner("lua-uniform", function(ctx)
  local blocks, stages = #ctx.profile.blocks, ctx.stages
  local cuts, next = { 0 }, 0
  for s = 0, stages - 1 do
    next = next + blocks // stages + (s < blocks % stages and 1 or 0)
    cuts[#cuts + 1] = { block = next, sub_block = 0 }
  end
  return { cuts = cuts }
end, { version = "1.0.0", description = "uniform, in Lua" })

actorpipe.register_mapper("lua-sequential", function(ctx, partition)
  local devices, stages = {}, #partition.cuts - 1
  for p = 0, ctx.pipelines - 1 do
    devices[p + 1] = {}
    for s = 0, stages - 1 do devices[p + 1][s + 1] = p * stages + s end
  end
  return { devices = devices }
end)

actorpipe.register_scheduler("lua-gpipe", function(request)
  local line = {}
  for k = 0, #request.micro_batch_sizes - 1 do line[#line + 1] = "F" .. k end
  for k = 0, #request.micro_batch_sizes - 1 do line[#line + 1] = "B" .. k end
  local stages = {}
  for s = 1, request.stages do stages[s] = table.concat(line, " ") end
  return { name = "gpipe", micro_batch_sizes = request.micro_batch_sizes, stages = stages }
end)

actorpipe.register_sync("lua-all", function(request)
  local group = {}
  for p = 0, request.pipelines - 1 do group[#group + 1] = p end
  return { kind = "allreduce_gradients", groups = { group } }
end)
