--[[
  windows-commit: writes one session's window after its batch's compactions are published, but
  only over the window the batch was computed from. The window is the fence: a batch computed before
  Redis lost its data (or before a rebuild, or by another instance that owned the partition before a
  rebalance) finds a different window, or none, and writes nothing. Without it, a command ioredis
  resends after a reconnect lands a window in the new, empty Redis that names turns only the old one
  held, and every later batch of that session fails.

  KEYS[1]  win    string  the SessionWindow JSON
  KEYS[2]  turns  hash    seq -> TurnEvent JSON, the window's turns

  ARGV[1]  the SHA-1 of the window JSON the batch loaded, or "" when it loaded none
  ARGV[2]  the new window JSON
  ARGV[3]  n, the number of turns added; then n pairs: seq, TurnEvent JSON
  then     the seqs compacted by this batch (their turns are no longer needed)

  Returns  1   written
           -1  window_moved: the stored window is not the one the batch loaded; nothing written
]]
local current = redis.call('GET', KEYS[1])
local loaded = ARGV[1]
if current then
  if redis.sha1hex(current) ~= loaded then return -1 end
elseif loaded ~= '' then
  return -1
end
-- In slices: unpack is bounded by Lua's C stack (a few thousand values).
local added = tonumber(ARGV[3])
local first, last = 4, 3 + added * 2
for from = first, last, 1000 do
  redis.call('HSET', KEYS[2], unpack(ARGV, from, math.min(from + 999, last)))
end
redis.call('SET', KEYS[1], ARGV[2])
for from = last + 1, #ARGV, 1000 do
  redis.call('HDEL', KEYS[2], unpack(ARGV, from, math.min(from + 999, #ARGV)))
end
return 1
