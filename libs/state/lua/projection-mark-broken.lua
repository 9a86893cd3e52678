--[[
  projection-mark-broken: marks a session broken at a seq with a reason code, for a turn refused
  before it reached the apply script (an out-of-range field). The earliest mark is kept.

  KEYS[1]  meta    hash  brokenSeq, brokenReason, brokenAt (ms, Redis TIME), parked, stalledAt
  KEYS[2]  parked  hash  seq -> a parked turn (see projection-apply-turns.lua)
  KEYS[3]  turns   hash  seq -> a turn applied (seqs 1..applied: HLEN is the watermark)
  ARGV[1]  seq, or 0 for "the seq after the watermark" (the refused turn's own seq was not usable)
  ARGV[2]  reason code

  Returns  {the seq the session is marked broken at, stall}: stall tells how the call changed whether
           the session is stalled, as projection-apply-turns.lua does: {0} not stalled before or after,
           {1, stalledAt, applied + 1} a stall began, {-1} a stall ended (an earlier mark at or below the
           watermark), {2, stalledAt, applied + 1} still stalled
]]
local meta = redis.call('HMGET', KEYS[1], 'brokenSeq', 'parked', 'stalledAt')
local applied = redis.call('HLEN', KEYS[3])
local brokenSeq = meta[1] and tonumber(meta[1]) or nil
local parked = tonumber(meta[2] or '0')
local stalledAt = meta[3] and tonumber(meta[3]) or nil
local seq = tonumber(ARGV[1])
if seq < 1 then
  seq = applied + 1
end
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
if not brokenSeq or seq < brokenSeq then
  redis.call('HSET', KEYS[1], 'brokenSeq', seq, 'brokenReason', ARGV[2], 'brokenAt', tostring(ms))
  brokenSeq = seq
end

local stalledNow = brokenSeq > applied
  or (parked > 0 and redis.call('HEXISTS', KEYS[2], tostring(applied + 1)) == 0)
if stalledNow and not stalledAt then
  redis.call('HSET', KEYS[1], 'stalledAt', tostring(ms))
  return {brokenSeq, {1, ms, applied + 1}}
elseif stalledAt and not stalledNow then
  redis.call('HDEL', KEYS[1], 'stalledAt')
  return {brokenSeq, {-1}}
elseif stalledNow then
  return {brokenSeq, {2, stalledAt, applied + 1}}
end
return {brokenSeq, {0}}
