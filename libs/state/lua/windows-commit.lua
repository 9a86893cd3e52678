--[[
  windows-commit: writes one session's window after its batch's compactions are published, but
  only over the window the batch was computed from. The window is the fence: a batch computed before
  Redis lost its data (or before a rebuild, or by another instance that owned the partition before a
  rebalance) finds a different window, or none, and writes nothing. Without it, a command ioredis
  resends after a reconnect lands a window in the new, empty Redis that names turns only the old one
  held, and every later batch of that session fails.

  KEYS[1]  the session's hash: `w` -> the SessionWindow JSON, `t:<seq>` -> a TurnEvent JSON of the
           window's turns, `n:<id>` -> a node JSON of the nodes the window names (one key per session, so
           one HSET writes a batch and one PEXPIRE keeps it)

  ARGV[1]  the SHA-1 of the window JSON the batch loaded, or "" when it loaded none
  ARGV[2]  the state retention in ms (0: kept forever): the session's hash expires that long after this
           write (a session idle that long is rebuilt from turns.l0 when it is next seen)
  ARGV[3]  n, the number of fields to set (the first is `w`), then n pairs: field, value
  then     the fields to delete: turns compacted by this batch, nodes the window no longer names

  Returns  1   written
           -1  window_moved: the stored window is not the one the batch loaded; nothing written
]]
local current = redis.call('HGET', KEYS[1], 'w')
local loaded = ARGV[1]
if current then
  if redis.sha1hex(current) ~= loaded then return -1 end
elseif loaded ~= '' then
  return -1
end
-- In slices: unpack is bounded by Lua's C stack (a few thousand values).
local function each(command, from, last)
  for at = from, last, 1000 do
    redis.call(command, KEYS[1], unpack(ARGV, at, math.min(at + 999, last)))
  end
end
local sets = tonumber(ARGV[3])
each('HSET', 4, 3 + sets * 2)
each('HDEL', 4 + sets * 2, #ARGV)
local retention = tonumber(ARGV[2])
if retention > 0 then redis.call('PEXPIRE', KEYS[1], retention) end
return 1
