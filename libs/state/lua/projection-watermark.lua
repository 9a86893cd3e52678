--[[
  projection-watermark: a session's watermark, its broken mark, since when it is stalled and the
  turns.l0 position of the turn at the watermark, in one step.

  KEYS[1]  meta   hash  brokenSeq, brokenReason, stalledAt
  KEYS[2]  turns  hash  seq -> "<content hash>|<partition:offset>": seqs 1..applied, so HLEN is the watermark

  Returns  {applied, brokenSeq or nil, brokenReason or nil, "partition:offset" of the turn at applied or
            nil, stalledAt or nil}
]]
local meta = redis.call('HMGET', KEYS[1], 'brokenSeq', 'brokenReason', 'stalledAt')
local applied = redis.call('HLEN', KEYS[2])
local turn = redis.call('HGET', KEYS[2], tostring(applied))
local position = turn and string.sub(turn, string.find(turn, '|', 1, true) + 1) or false
return {applied, meta[1], meta[2], position, meta[3]}
