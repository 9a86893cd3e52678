--[[
  resume-read: what a resume needs from Redis in one round trip: the session's plan and the node the
  plan starts from (its narrative and claims), if the node is stored yet.

  KEYS[1]  plan key   (hash: v, e, s, p = plan JSON, n = node id)
  KEYS[2]  nodes key  (hash: compactionId -> Compaction JSON, `~compactedToSeq` -> the highest toSeq)
  KEYS[3]  epoch key  (string)

  Returns  { epoch or '', plan JSON or '', node JSON or '', the highest compacted seq or '' }; a plan of
           another epoch reads as ''.
]]
local epoch = redis.call('GET', KEYS[3])
if not epoch then
  return { '', '', '', '' }
end
local compacted = redis.call('HGET', KEYS[2], '~compactedToSeq') or ''
local stored = redis.call('HMGET', KEYS[1], 'e', 'p', 'n')
if stored[1] ~= epoch or not stored[2] then
  return { epoch, '', '', compacted }
end
local node = ''
if stored[3] and stored[3] ~= '' then
  node = redis.call('HGET', KEYS[2], stored[3]) or ''
end
return { epoch, stored[2], node, compacted }
