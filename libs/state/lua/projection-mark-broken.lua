--[[
  projection-mark-broken: marks a session broken at a seq with a reason code, for a turn refused
  before it reached the apply script (an out-of-range field). The earliest mark is kept.

  KEYS[1]  meta  hash  applied, brokenSeq, brokenReason, brokenAt (ms, Redis TIME)
  ARGV[1]  seq, or 0 for "the seq after the watermark" (the refused turn's own seq was not usable)
  ARGV[2]  reason code

  Returns  the seq the session is marked broken at
]]
local seq = tonumber(ARGV[1])
if seq < 1 then
  seq = tonumber(redis.call('HGET', KEYS[1], 'applied') or '0') + 1
end
local current = redis.call('HGET', KEYS[1], 'brokenSeq')
if not current or seq < tonumber(current) then
  local now = redis.call('TIME')
  local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  redis.call('HSET', KEYS[1], 'brokenSeq', seq, 'brokenReason', ARGV[2], 'brokenAt', tostring(ms))
  return seq
end
return tonumber(current)
