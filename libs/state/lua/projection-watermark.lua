--[[
  projection-watermark: a session's watermark, its broken mark, since when it is stalled and the
  turns.l0 position of the turn at the watermark, in one step.

  KEYS[1]  meta   hash  applied, brokenSeq, brokenReason, stalledAt
  KEYS[2]  turns  hash  seq -> "<content hash>|<partition:offset>"

  Returns  {applied, brokenSeq or nil, brokenReason or nil, "partition:offset" of the turn at applied or
            nil, stalledAt or nil}
]]
local meta = redis.call('HMGET', KEYS[1], 'applied', 'brokenSeq', 'brokenReason', 'stalledAt')
local applied = meta[1] or '0'
local turn = redis.call('HGET', KEYS[2], applied)
local position = turn and string.sub(turn, string.find(turn, '|', 1, true) + 1) or false
return {tonumber(applied), meta[2], meta[3], position, meta[4]}
