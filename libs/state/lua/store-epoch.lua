--[[
  store-epoch: the epoch of a rebuildable store. The epoch says whether the store still holds what was
  built from the log: Redis keeps nothing on disk, so a flush or an empty restart shows as no epoch, and
  every reader and writer that finds none waits for a rebuild instead of trusting missing state.

  KEYS[1]  the store's epoch key  (string)
  ARGV[1]  the operation: establish | drop
  ARGV[2]  the epoch to establish

  Returns  establish: the epoch in force afterwards (ARGV[2], or the one another rebuilder set first)
           drop: 1 dropped, 0 there was none
]]
local op = ARGV[1]
if op == 'establish' then
  redis.call('SET', KEYS[1], ARGV[2], 'NX')
  return redis.call('GET', KEYS[1])
elseif op == 'drop' then
  return redis.call('DEL', KEYS[1])
end
return redis.error_reply('store-epoch: unknown operation ' .. tostring(op))
