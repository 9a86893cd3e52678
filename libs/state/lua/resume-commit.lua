--[[
  resume-commit: stores one session's resume state and plan after a batch of marker decisions, in one
  atomic step guarded by an optimistic version (a worker that lost the session's partition in a
  rebalance, and a worker that loaded it before a loss of Redis, both fail instead of overwriting).

  KEYS[1]  plan key  (hash: v = version, e = epoch, s = worker state JSON, p = plan JSON, n = node id)
  KEYS[2]  nodes key (hash: the session's compaction nodes; expires with the plan)
  KEYS[3]  seen key  (string: the session had a plan here; kept when the other two expire)
  ARGV[1]  epoch the caller loaded the session under
  ARGV[2]  version the caller loaded (0 for a session it found absent)
  ARGV[3]  the new worker state JSON
  ARGV[4]  the new plan JSON
  ARGV[5]  the compaction id the plan starts from ('' for the session start)
  ARGV[6]  the state retention in ms (0: kept forever): plan and nodes expire that long after this
           write; the seen key stays, so a later read knows to rebuild the session from the topics

  Returns  1  stored (version is now ARGV[2] + 1)
           0  conflict: the stored version is not ARGV[2]
          -1  epoch: the stored session, or the store, belongs to another epoch
]]
local stored = redis.call('HMGET', KEYS[1], 'v', 'e')
local version = tonumber(stored[1]) or 0
if stored[2] and stored[2] ~= ARGV[1] then
  return -1
end
if version ~= tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], 'v', version + 1, 'e', ARGV[1], 's', ARGV[3], 'p', ARGV[4], 'n', ARGV[5])
local retention = tonumber(ARGV[6])
if retention > 0 then
  redis.call('PEXPIRE', KEYS[1], retention)
  redis.call('PEXPIRE', KEYS[2], retention)
  -- Once per session (and again after it expired): the mark itself never expires.
  if version == 0 then redis.call('SET', KEYS[3], '1') end
end
return 1
