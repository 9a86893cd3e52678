--[[
  projection-mark-broken: marks a session broken at a seq with a reason code, for a turn refused
  before it reached the apply script (an out-of-range field). The earliest mark is kept.

  KEYS[1]  meta  hash  applied, brokenSeq, brokenReason, brokenAt (ms, Redis TIME)
  ARGV[1]  seq, or 0 for "the seq after the watermark" (the refused turn's own seq was not usable)
  ARGV[2]  reason code

  Returns  {the seq the session is marked broken at, stall}: stall is {1, brokenAt, applied + 1} when
           the mark made the session stalled (brokenSeq > applied, as projection-apply-turns.lua tells
           it), else {0}
]]
local meta = redis.call('HMGET', KEYS[1], 'applied', 'brokenSeq')
local applied = tonumber(meta[1] or '0')
local current = meta[2] and tonumber(meta[2])
local seq = tonumber(ARGV[1])
if seq < 1 then
  seq = applied + 1
end
if not current or seq < current then
  local now = redis.call('TIME')
  local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  redis.call('HSET', KEYS[1], 'brokenSeq', seq, 'brokenReason', ARGV[2], 'brokenAt', tostring(ms))
  if seq > applied and not (current and current > applied) then
    return {seq, {1, ms, applied + 1}}
  end
  return {seq, {0}}
end
return {current, {0}}
