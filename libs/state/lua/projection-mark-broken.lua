--[[
  projection-mark-broken: marks a session broken at a seq with a reason code, for a turn refused
  before it reached the apply script (an out-of-range field). The earliest mark is kept.

  KEYS[1]  meta  hash  applied, brokenSeq, brokenReason, brokenAt (ms, Redis TIME)
  ARGV[1]  seq, or 0 for "the seq after the watermark" (the refused turn's own seq was not usable)
  ARGV[2]  reason code

  Returns  {the seq the session is marked broken at, stall}: stall tells how the call changed whether
           the session is stalled (brokenSeq > applied), as projection-apply-turns.lua does: {0} not
           stalled before or after, {1, brokenAt, applied + 1} a stall began, {-1} a stall ended (an
           earlier mark at or below the watermark), {2, brokenAt, applied + 1} still stalled
]]
local meta = redis.call('HMGET', KEYS[1], 'applied', 'brokenSeq', 'brokenAt')
local applied = tonumber(meta[1] or '0')
local current = meta[2] and tonumber(meta[2]) or nil
local markedAt = meta[3] and tonumber(meta[3]) or 0
local stalledBefore = current ~= nil and current > applied
local seq = tonumber(ARGV[1])
if seq < 1 then
  seq = applied + 1
end
if current and seq >= current then
  if stalledBefore then
    return {current, {2, markedAt, applied + 1}}
  end
  return {current, {0}}
end
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('HSET', KEYS[1], 'brokenSeq', seq, 'brokenReason', ARGV[2], 'brokenAt', tostring(ms))
if seq > applied then
  if stalledBefore then
    return {seq, {2, ms, applied + 1}}
  end
  return {seq, {1, ms, applied + 1}}
end
if stalledBefore then
  return {seq, {-1}}
end
return {seq, {0}}
