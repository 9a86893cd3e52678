--[[
  windows-commit: writes one session's window after its batch's compactions are published, but
  only over the window the batch was computed from. The window is the fence: a batch computed before
  Redis lost its data (or before a rebuild, or by another instance that owned the partition before a
  rebalance) finds a different window, or none, and writes nothing. Without it, a command ioredis
  resends after a reconnect lands a window in the new, empty Redis that names turns only the old one
  held, and every later batch of that session fails.

  KEYS[1]  win    string  the SessionWindow JSON
  KEYS[2]  turns  hash    seq -> TurnEvent JSON, the window's turns
  KEYS[3]  nodes  hash    id -> node JSON, the nodes the window names

  ARGV[1]  the SHA-1 of the window JSON the batch loaded, or "" when it loaded none
  ARGV[2]  the new window JSON
  ARGV[3]  the state retention in ms (0: kept forever): the session's keys expire that long after this
           write, all at once (a session idle that long is rebuilt from turns.l0 when it is next seen)
  then     n, the number of turns added, then n pairs: seq, TurnEvent JSON
  then     d, the number of seqs compacted by this batch (their turns are no longer needed), then d seqs
  then     m, the number of nodes added, then m pairs: id, node JSON
  then     the ids of the nodes the window no longer names

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
local function each(command, key, from, last)
  for at = from, last, 1000 do
    redis.call(command, key, unpack(ARGV, at, math.min(at + 999, last)))
  end
end
local at = 4
local turns = tonumber(ARGV[at])
each('HSET', KEYS[2], at + 1, at + turns * 2)
at = at + turns * 2 + 1
local compacted = tonumber(ARGV[at])
local compactedFrom = at + 1
at = at + compacted + 1
local nodes = tonumber(ARGV[at])
each('HSET', KEYS[3], at + 1, at + nodes * 2)
at = at + nodes * 2 + 1
local retention = tonumber(ARGV[3])
if retention > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', retention)
else
  redis.call('SET', KEYS[1], ARGV[2])
end
each('HDEL', KEYS[2], compactedFrom, compactedFrom + compacted - 1)
each('HDEL', KEYS[3], at, #ARGV)
if retention > 0 then
  redis.call('PEXPIRE', KEYS[2], retention)
  redis.call('PEXPIRE', KEYS[3], retention)
end
return 1
