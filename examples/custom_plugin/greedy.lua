-- Partitioner `greedy-lua`: greedy.cpp's algorithm written in Lua. Put this file's
-- folder on the plugin path and name it in a job (plan.partitioner = "greedy-lua").
actorpipe.register_partitioner("greedy-lua", function(ctx)
  for key in pairs(ctx.options) do
    error("unknown option '" .. key .. "' (this plugin takes none)")
  end
  local blocks, stages = ctx.profile.blocks, ctx.stages
  if stages == 0 or stages > #blocks then
    error(string.format("cannot put %d blocks in %d stages", #blocks, stages))
  end
  local total = 0
  for _, b in ipairs(blocks) do total = total + b.forward_ms + b.backward_ms end
  -- Cuts are block boundaries, numbered from 0 as in the C++ types: 0 is the start.
  local cuts, done = { 0 }, 0
  for b = 1, #blocks do
    if #cuts >= stages then break end
    done = done + blocks[b].forward_ms + blocks[b].backward_ms
    local stage = #cuts -- the stage block b closes, 1-based
    local share_reached = done >= total * stage / stages
    local blocks_needed = #blocks - b == stages - stage
    if share_reached or blocks_needed then cuts[#cuts + 1] = b end
  end
  cuts[#cuts + 1] = #blocks
  return cuts
end, { version = "1.0.0", description = "equal compute per stage, cut greedily at block boundaries (Lua)" })
