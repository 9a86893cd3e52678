--[[
  resume-read: what a resume needs from Redis in one round trip: the session's plan and the node the
  plan starts from (its narrative and claims), if the node is stored yet.

  KEYS[1]  plan key   (hash: v, e, s, p = plan JSON, n = node id)
  KEYS[2]  nodes key  (hash: compactionId -> Compaction JSON, `~compactedToSeq` -> the highest toSeq)
  KEYS[3]  epoch key  (string)
  KEYS[4]  seen key   (string: the session had a plan, which may have expired since)

  Returns  { epoch or '', plan JSON or '', node JSON or '', the highest compacted seq or '', expired }; a
           plan of another epoch reads as ''; expired is 1 when the plan is absent but the session had one
           (it expired: rebuild it from the topics), else 0.
]]
local epoch = redis.call('GET', KEYS[3])
if not epoch then
  return { '', '', '', '', 0 }
end
local compacted = redis.call('HGET', KEYS[2], '~compactedToSeq') or ''
local stored = redis.call('HMGET', KEYS[1], 'e', 'p', 'n')
if not stored[1] then
  return { epoch, '', '', compacted, redis.call('EXISTS', KEYS[4]) }
end
if stored[1] ~= epoch or not stored[2] then
  return { epoch, '', '', compacted, 0 }
end
local node = ''
if stored[3] and stored[3] ~= '' then
  node = redis.call('HGET', KEYS[2], stored[3]) or ''
end
return { epoch, stored[2], node, compacted, 0 }
