--[[
  resume-read: what a resume needs from Redis in one round trip: the session's plan and the node the
  plan starts from (its narrative and claims), if the node is stored yet.

  KEYS[1]  plan key   (hash: v, e, s, p = plan JSON, n = node id)
  KEYS[2]  nodes key  (hash: compactionId -> Compaction JSON, `~compactedToSeq` -> the highest toSeq)
  KEYS[3]  seen key   (string: the session had a plan, which may have expired since)

  Returns  { the plan's epoch or '', plan JSON or '', node JSON or '', the highest compacted seq or '',
           expired }; expired is 1 when the plan is absent but the session had one (it expired: rebuild it
           from the topics), else 0.
  The store's epoch is not read here: its key is in no session's slot, and on a Redis Cluster a script
  touches one slot. The caller reads it in the same round trip, after this script, and a plan of another
  epoch reads as none.
]]
local compacted = redis.call('HGET', KEYS[2], '~compactedToSeq') or ''
local stored = redis.call('HMGET', KEYS[1], 'e', 'p', 'n')
if not stored[1] then
  return { '', '', '', compacted, redis.call('EXISTS', KEYS[3]) }
end
if not stored[2] then
  return { stored[1], '', '', compacted, 0 }
end
local node = ''
if stored[3] and stored[3] ~= '' then
  node = redis.call('HGET', KEYS[2], stored[3]) or ''
end
return { stored[1], stored[2], node, compacted, 0 }
