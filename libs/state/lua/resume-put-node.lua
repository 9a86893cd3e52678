--[[
  resume-put-node: stores one compaction node of a session (a plan may start from it later), and keeps
  the highest L0 seq any stored node covers, so a status says how far the session is compacted. A replay
  republishes nodes from seq 1: the highest seq never goes back.

  KEYS[1]  nodes key  (hash: compactionId -> Compaction JSON; `~compactedToSeq` -> the highest toSeq)
  ARGV[1]  compactionId
  ARGV[2]  the Compaction JSON
  ARGV[3]  its toSeq

  Returns  the session's highest compacted seq after the write
]]
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local highest = tonumber(redis.call('HGET', KEYS[1], '~compactedToSeq') or '0')
local toSeq = tonumber(ARGV[3])
if toSeq > highest then
  redis.call('HSET', KEYS[1], '~compactedToSeq', toSeq)
  return toSeq
end
return highest
