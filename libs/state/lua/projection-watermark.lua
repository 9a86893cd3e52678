--[[
  projection-watermark: a session's watermark, its broken mark, since when it is stalled and the
  turns.l0 position of the turn at the watermark, in one step.

  KEYS[1]  meta  hash  applied, brokenSeq, brokenReason, stalledAt
  KEYS[2]  pos   hash  seq -> "partition:offset"

  Returns  {applied, brokenSeq or nil, brokenReason or nil, position of the turn at applied or nil,
            stalledAt or nil}
]]
local meta = redis.call('HMGET', KEYS[1], 'applied', 'brokenSeq', 'brokenReason', 'stalledAt')
local applied = meta[1] or '0'
return {tonumber(applied), meta[2], meta[3], redis.call('HGET', KEYS[2], applied), meta[4]}
