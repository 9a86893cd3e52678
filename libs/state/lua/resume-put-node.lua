--[[
  resume-put-node: stores one compaction node of a session (a plan may start from it later), and keeps
  the highest L0 seq any stored node covers, so a status says how far the session is compacted. A replay
  republishes nodes from seq 1: the highest seq never goes back.

  KEYS[1]  nodes key  (hash: compactionId -> Compaction JSON; `~compactedToSeq` -> the highest toSeq)
  ARGV[1]  compactionId
  ARGV[2]  the Compaction JSON
  ARGV[3]  its toSeq
  ARGV[4]  the state retention in ms (0: kept forever): the nodes expire no sooner than that after this
           write (a plan commit sets the same on them, so they never expire before their plan)

  Returns  the session's highest compacted seq after the write
]]
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local retention = tonumber(ARGV[4])
if retention > 0 then redis.call('PEXPIRE', KEYS[1], retention) end
local highest = tonumber(redis.call('HGET', KEYS[1], '~compactedToSeq') or '0')
local toSeq = tonumber(ARGV[3])
if toSeq > highest then
  redis.call('HSET', KEYS[1], '~compactedToSeq', toSeq)
  return toSeq
end
return highest
