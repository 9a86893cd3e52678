--[[
  validator-confirm: marks compactions whose decisions are durably on the markers topic as published,
  so a redelivery of them publishes nothing. Writes nothing when the session is gone or belongs to
  another epoch: a confirm must never resurrect a session Redis lost.

  KEYS[1]  frame key    (hash: v, e, s)
  KEYS[2]  decided key  (hash: compactionId -> decided record JSON)
  ARGV[1]  epoch the decisions were recorded under
  ARGV[2]  the published record (JSON)
  ARGV[3..] compactionIds

  Returns  the number of compactions marked, or -1 when the session is absent or of another epoch
]]
if redis.call('HGET', KEYS[1], 'e') ~= ARGV[1] then
  return -1
end
for i = 3, #ARGV do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[2])
end
return #ARGV - 2
