--[[
  projection-apply-turns: applies one session's turns of a batch, in order, to its projection; each turn
  and the advance of the session's watermark is one atomic step (the whole call is), with the sequencing
  and change rules of core's SessionFold.apply. One call per session per batch: the per-call cost of a
  script is paid once for all of the session's turns in the batch.

  Within each turn everything is validated before anything is written: a script that fails half way keeps
  its earlier writes, so the checks (and the simulation of the turn's own changes) come first, the writes
  last. The caller has already run the stateless checks (ids present, symbols known) and builds every
  stored value; this script only decides what depends on the stored state.

  KEYS[1]  meta     hash  applied (watermark), brokenSeq, brokenReason, brokenAt (ms, Redis TIME)
  KEYS[2]  turns    hash  seq -> the turn's content hash (tells a redelivery from a conflict)
  KEYS[3]  pos      hash  seq -> "partition:offset" in turns.l0
  KEYS[4]  items    hash  itemId -> item JSON, as opened
  KEYS[5]  ends     hash  itemId -> end JSON (closed or disposed)
  KEYS[6]  open     zset  itemId scored by openedSeq, items open now
  KEYS[7]  ended    zset  itemId scored by its end seq
  KEYS[8]  closed   zset  itemId scored by its close seq (closed items only)
  KEYS[9]  disp     zset  disposition span index: "<index>|<fact>" scored by seq
  KEYS[10] dispkey  zset  disposition lookup index, lexicographic: "<key prefix><seq><index>|<fact>"
  KEYS[11] art      zset  artifact span index, as disp
  KEYS[12] artkey   zset  artifact lookup index, as dispkey
  KEYS[13] skipped  hash  seq -> the skipped-change triples of that turn (for its redeliveries)

  ARGV, per turn, in order:
           seq (canonical integer text), the turn's content hash (core turnContentHash), its turns.l0
           position "partition:offset",
           n (the number of change fields that follow, 6 per change), then the fields: op, index, a, b, c, d
           O item_opened    a = itemId   b = item JSON
           C item_closed    a = itemId   b = end JSON
           D item_disposed  a = itemKey  b = end JSON if it ends an open item  c = disp member  d = dispkey member
           A artifact       c = art member  d = artkey member
           R refused by the caller's stateless checks   a = reason code

  Returns  one reply per turn, in order:
           {1, seq, index, reason, endSeq, ...}  applied; a triple per skipped change (endSeq is the
                                                  seq an item already ended at, for item_not_open, else 0)
           {2, applied, index, reason, endSeq, ...}  a redelivery (same seq, same content): nothing
                                                  changed; the triples are those of its first apply
           {-1, applied}                          seq_gap
           {-2, applied, hash}                    conflicting_redelivery (the content hash applied at
                                                  that seq, which stays)
           and, after the turns' replies, how the call changed whether the session is stalled (waiting
           for a turn past its watermark: brokenSeq > applied, as projection-read.ts reads it):
           {0} not stalled before or after, {1, brokenAt, applied + 1} a stall began, {-1} a stall
           ended, {2, brokenAt, applied + 1} still stalled (the caller re-asserts its index entry: a
           crash may have lost the write that followed the call that began the stall)
  Refusals and skipped changes mark the session broken at the turn's seq (the earliest mark is kept).
]]
-- The session's watermark and broken mark, read once and kept current as this call writes them.
local meta = redis.call('HMGET', KEYS[1], 'applied', 'brokenSeq', 'brokenAt')
local applied = tonumber(meta[1] or '0')
local brokenSeq = meta[2] and tonumber(meta[2]) or nil
local markedAt = meta[3] and tonumber(meta[3]) or nil
local brokenAt = nil
local function stalled()
  return brokenSeq ~= nil and brokenSeq > applied
end
local stalledBefore = stalled()

-- One turn: its fields are ARGV[first..last].
local function applyTurn(seqText, hashArg, position, first, last)
  local seq = tonumber(seqText)

  local function markBroken(reason)
    if not brokenSeq or seq < brokenSeq then
      local now = redis.call('TIME')
      local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
      redis.call('HSET', KEYS[1], 'brokenSeq', seqText, 'brokenReason', reason, 'brokenAt', tostring(ms))
      brokenSeq = seq
      brokenAt = ms
    end
  end

  if seq > applied + 1 then
    markBroken('seq_gap')
    return {-1, applied}
  end
  if seq <= applied then
    local hash = redis.call('HGET', KEYS[2], seqText)
    if hash == hashArg then
      local reply = {2, applied}
      local skipped = redis.call('HGET', KEYS[13], seqText)
      if skipped then
        for field in string.gmatch(skipped, '[^,]+') do
          reply[#reply + 1] = field
        end
      end
      return reply
    end
    markBroken('conflicting_redelivery')
    return {-2, applied, hash or ''}
  end

  -- Simulate the turn's changes against the stored state plus this turn's own effects.
  local openedHere = {}
  local endedHere = {}
  local function exists(id)
    return openedHere[id] or redis.call('HEXISTS', KEYS[4], id) == 1
  end
  local function endSeqOf(id)
    if endedHere[id] then
      return endedHere[id]
    end
    local score = redis.call('ZSCORE', KEYS[7], id)
    if score then
      return tonumber(score)
    end
    return nil
  end

  local writes = {}
  local reply = {1, seq}
  local firstReason = nil
  local function skip(index, reason, endSeq)
    reply[#reply + 1] = tonumber(index)
    reply[#reply + 1] = reason
    reply[#reply + 1] = endSeq or 0
    firstReason = firstReason or reason
  end

  for i = first, last, 6 do
    local op, index, a, b, c, d = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
    if op == 'O' then
      if exists(a) then
        skip(index, 'duplicate_item')
      else
        openedHere[a] = true
        writes[#writes + 1] = {'O', a, b}
      end
    elseif op == 'C' then
      if not exists(a) then
        skip(index, 'unknown_item')
      else
        local ended = endSeqOf(a)
        if ended then
          skip(index, 'item_not_open', ended)
        else
          endedHere[a] = seq
          writes[#writes + 1] = {'C', a, b}
        end
      end
    elseif op == 'D' then
      writes[#writes + 1] = {'D', c, d}
      if exists(a) and not endSeqOf(a) then
        endedHere[a] = seq
        writes[#writes + 1] = {'E', a, b}
      end
    elseif op == 'A' then
      writes[#writes + 1] = {'A', c, d}
    elseif op == 'R' then
      skip(index, a)
    else
      error('projection-apply-turns: unknown op ' .. tostring(op))
    end
  end

  -- Write: the changes, then the turn's id and position, then the watermark.
  for _, w in ipairs(writes) do
    local kind = w[1]
    if kind == 'O' then
      redis.call('HSET', KEYS[4], w[2], w[3])
      redis.call('ZADD', KEYS[6], seqText, w[2])
    elseif kind == 'C' then
      redis.call('HSET', KEYS[5], w[2], w[3])
      redis.call('ZREM', KEYS[6], w[2])
      redis.call('ZADD', KEYS[7], seqText, w[2])
      redis.call('ZADD', KEYS[8], seqText, w[2])
    elseif kind == 'E' then
      redis.call('HSET', KEYS[5], w[2], w[3])
      redis.call('ZREM', KEYS[6], w[2])
      redis.call('ZADD', KEYS[7], seqText, w[2])
    elseif kind == 'D' then
      redis.call('ZADD', KEYS[9], seqText, w[2])
      redis.call('ZADD', KEYS[10], 0, w[3])
    else
      redis.call('ZADD', KEYS[11], seqText, w[2])
      redis.call('ZADD', KEYS[12], 0, w[3])
    end
  end
  redis.call('HSET', KEYS[2], seqText, hashArg)
  redis.call('HSET', KEYS[3], seqText, position)
  redis.call('HSET', KEYS[1], 'applied', seqText)
  applied = seq
  if firstReason then
    markBroken(firstReason)
    redis.call('HSET', KEYS[13], seqText, table.concat(reply, ',', 3))
  end
  return reply
end

local replies = {}
local at = 1
while at <= #ARGV do
  local n = tonumber(ARGV[at + 3])
  replies[#replies + 1] = applyTurn(ARGV[at], ARGV[at + 1], ARGV[at + 2], at + 4, at + 3 + n)
  at = at + 4 + n
end
local stalledAfter = stalled()
if stalledAfter and not stalledBefore then
  replies[#replies + 1] = {1, brokenAt, applied + 1}
elseif stalledBefore and not stalledAfter then
  replies[#replies + 1] = {-1}
elseif stalledAfter then
  replies[#replies + 1] = {2, brokenAt or markedAt or 0, applied + 1}
else
  replies[#replies + 1] = {0}
end
return replies
