--[[
  projection-apply-turns: applies one session's turns of a batch, in order, to its projection; each turn
  and the advance of the session's watermark is one atomic step (the whole call is), with the sequencing
  and change rules of core's SessionFold.apply. One call per session per batch: the per-call cost of a
  script is paid once for all of the session's turns in the batch.

  Within each turn everything is validated before anything is written: a script that fails half way keeps
  its earlier writes, so the ops are checked first, then the turn's changes simulated (an opened item is
  stored as it is checked), then written. The caller has already run the stateless checks (ids present, symbols known) and builds every
  stored value; this script only decides what depends on the stored state.

  KEYS[1]  meta     hash  brokenSeq, brokenReason, brokenAt (ms, Redis TIME), parked (how many turns
                         are parked), stalledAt (ms: since when the session is stalled; absent when it
                         is not)
  KEYS[2]  turns    hash  seq -> "<content hash>|<partition:offset>": the turn's content hash (tells a
                          redelivery from a conflict) and where it is in turns.l0. Seqs 1..applied, each
                          written as its turn's last write: HLEN is the watermark, and a call that failed
                          half way leaves it at the last turn it applied whole
  KEYS[3]  items    hash  itemId -> item JSON, as opened
  KEYS[4]  ends     hash  itemId -> end JSON (closed or disposed)
  KEYS[5]  open     zset  itemId scored by openedSeq, items open now
  KEYS[6]  ended    zset  itemId scored by its end seq
  KEYS[7]  disp     zset  disposition span index: "<index>|<fact>" scored by seq
  KEYS[8]  dispkey  zset  disposition lookup index, lexicographic: "<key prefix><seq><index>|<fact>"
  KEYS[9]  art      zset  artifact span index, as disp
  KEYS[10] artkey   zset  artifact lookup index, as dispkey
  KEYS[11] skipped  hash  seq -> the skipped-change triples of that turn (for its redeliveries)
  KEYS[12] parked   hash  seq -> "<content hash>|<partition:offset>[|r]": turns that came before the turn
                          they follow (r: told to the caller for re-publishing)
  KEYS[13] endedopen zset itemId scored by openedSeq, for the ended items: a boundary read tells the
                          items open at its boundary from those opened after it without fetching them

  ARGV[1]  how many turns a session may park (a later one past its watermark is a seq_gap refusal)
  ARGV, then per turn, in order:
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
           {-1, applied, parked}                  seq_gap; parked 1: the turn is parked (not a dead
                                                  letter: it is re-published once its gap is filled),
                                                  0: refused (over the bound, or another copy is parked)
           {-2, applied, hash}                    conflicting_redelivery (the content hash applied at
                                                  that seq, which stays)
           then the parked turns to re-publish: {seq, "partition:offset", ...} for the parked run
           from applied + 1, when the call advanced the watermark to its gap (those not told before),
           or redelivered the turn at the watermark (all of them again: a crash may have lost the
           re-publishing that followed the call that told them); the caller re-publishes them to
           turns.l0, where they follow the turn they waited for and apply like any turn,
           and last, how the call changed whether the session is stalled (waiting for a turn past its
           watermark that is not at hand: broken past it, or parked turns with none at applied + 1;
           meta's stalledAt, as projection-read.ts reads it): {0} not stalled before or after,
           {1, stalledAt, applied + 1} a stall began, {-1} a stall ended, {2, stalledAt, applied + 1}
           still stalled (the caller re-asserts its index entry: a crash may have lost the write that
           followed the call that began the stall)
  Refusals (a parked turn is not one) and skipped changes mark the session broken at the turn's seq (the
  earliest mark is kept).
]]
-- The session's watermark and broken mark, read once and kept current as this call writes them.
local meta = redis.call('HMGET', KEYS[1], 'brokenSeq', 'parked', 'stalledAt')
local applied = redis.call('HLEN', KEYS[2])
local brokenSeq = meta[1] and tonumber(meta[1]) or nil
local parked = tonumber(meta[2] or '0')
local parkedBefore = parked
local stalledAt = meta[3] and tonumber(meta[3]) or nil
local maxParked = tonumber(ARGV[1])
local appliedBefore = applied
-- Whether a turn at the watermark came again (a crash may have lost what followed its first call).
local redeliveredAtWatermark = false

local function nowMs()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end

-- One turn: its fields are ARGV[first..last].
local function applyTurn(seqText, hashArg, position, first, last)
  local seq = tonumber(seqText)

  local function markBroken(reason)
    if not brokenSeq or seq < brokenSeq then
      redis.call('HSET', KEYS[1], 'brokenSeq', seqText, 'brokenReason', reason, 'brokenAt', tostring(nowMs()))
      brokenSeq = seq
    end
  end

  if seq > applied + 1 then
    -- Early: parked until the turns before it are applied, then re-published (see the header).
    local held = redis.call('HGET', KEYS[12], seqText)
    if held then
      if string.sub(held, 1, #hashArg + 1) == hashArg .. '|' then
        return {-1, applied, 1}
      end
      -- Another copy, with other content: refused, and a refusal marks (the parked copy stays).
      markBroken('seq_gap')
      return {-1, applied, 0}
    end
    if parked >= maxParked then
      markBroken('seq_gap')
      return {-1, applied, 0}
    end
    redis.call('HSET', KEYS[12], seqText, hashArg .. '|' .. position)
    parked = parked + 1
    return {-1, applied, 1}
  end
  if seq <= applied then
    local stored = redis.call('HGET', KEYS[2], seqText)
    local hash = stored and string.sub(stored, 1, (string.find(stored, '|', 1, true) or 0) - 1) or false
    if hash == hashArg then
      if seq == applied then
        redeliveredAtWatermark = true
      end
      local reply = {2, applied}
      local skipped = redis.call('HGET', KEYS[11], seqText)
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

  -- Every op is known before anything is written (the writes below cannot fail half way on bad input).
  for i = first, last, 6 do
    local op = ARGV[i]
    if op ~= 'O' and op ~= 'C' and op ~= 'D' and op ~= 'A' and op ~= 'R' then
      error('projection-apply-turns: unknown op ' .. tostring(op))
    end
  end

  -- Simulate the turn's changes against the stored state plus this turn's own effects. An opened item
  -- is stored as it is checked (HSETNX: one command tells a duplicate and writes the item); the rest is
  -- written last. The common case costs one read per change: is the item open now (ZSCORE open).
  local openedHere = {}
  local endedHere = {}
  -- The seq an item open now was opened at (as text), or nil when it is not open.
  local function openedSeqOf(id)
    if endedHere[id] then
      return nil
    end
    return openedHere[id] or redis.call('ZSCORE', KEYS[5], id) or nil
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
      if redis.call('HSETNX', KEYS[3], a, b) == 0 then
        skip(index, 'duplicate_item')
      else
        openedHere[a] = seqText
        writes[#writes + 1] = {'O', a}
      end
    elseif op == 'C' then
      local openedSeq = openedSeqOf(a)
      if openedSeq then
        endedHere[a] = seq
        writes[#writes + 1] = {'C', a, b, openedSeq}
      elseif endedHere[a] then
        skip(index, 'item_not_open', endedHere[a])
      elseif redis.call('HEXISTS', KEYS[3], a) == 0 then
        skip(index, 'unknown_item')
      else
        skip(index, 'item_not_open', tonumber(redis.call('ZSCORE', KEYS[6], a)))
      end
    elseif op == 'D' then
      writes[#writes + 1] = {'D', c, d}
      local openedSeq = openedSeqOf(a)
      if openedSeq then
        endedHere[a] = seq
        writes[#writes + 1] = {'E', a, b, openedSeq}
      end
    elseif op == 'A' then
      writes[#writes + 1] = {'A', c, d}
    else
      skip(index, a)
    end
  end

  -- Write: the changes, then the turn's hash and position (which advances the watermark: HLEN).
  for _, w in ipairs(writes) do
    local kind = w[1]
    if kind == 'O' then
      redis.call('ZADD', KEYS[5], seqText, w[2])
    elseif kind == 'C' or kind == 'E' then
      redis.call('HSET', KEYS[4], w[2], w[3])
      redis.call('ZREM', KEYS[5], w[2])
      redis.call('ZADD', KEYS[6], seqText, w[2])
      redis.call('ZADD', KEYS[13], w[4], w[2])
    elseif kind == 'D' then
      redis.call('ZADD', KEYS[7], seqText, w[2])
      redis.call('ZADD', KEYS[8], 0, w[3])
    else
      redis.call('ZADD', KEYS[9], seqText, w[2])
      redis.call('ZADD', KEYS[10], 0, w[3])
    end
  end
  redis.call('HSET', KEYS[2], seqText, hashArg .. '|' .. position)
  applied = seq
  if parked > 0 and redis.call('HDEL', KEYS[12], seqText) == 1 then
    parked = parked - 1
  end
  if firstReason then
    markBroken(firstReason)
    redis.call('HSET', KEYS[11], seqText, table.concat(reply, ',', 3))
  end
  return reply
end

local replies = {}
local at = 2
while at <= #ARGV do
  local n = tonumber(ARGV[at + 3])
  replies[#replies + 1] = applyTurn(ARGV[at], ARGV[at + 1], ARGV[at + 2], at + 4, at + 3 + n)
  at = at + 4 + n
end
if parked ~= parkedBefore then
  redis.call('HSET', KEYS[1], 'parked', tostring(parked))
end

-- The parked run from applied + 1, to re-publish (see the header).
local release = {}
local nextHeld = parked > 0 and redis.call('HGET', KEYS[12], tostring(applied + 1)) or nil
if nextHeld and (applied > appliedBefore or redeliveredAtWatermark) then
  local seq = applied + 1
  local held = nextHeld
  while held do
    local bar = string.find(held, '|', 1, true)
    local rest = string.sub(held, bar + 1)
    local told = string.sub(rest, -2) == '|r'
    if redeliveredAtWatermark or not told then
      local position = told and string.sub(rest, 1, -3) or rest
      release[#release + 1] = seq
      release[#release + 1] = position
      if not told then
        redis.call('HSET', KEYS[12], tostring(seq), held .. '|r')
      end
    end
    seq = seq + 1
    held = redis.call('HGET', KEYS[12], tostring(seq))
  end
end
replies[#replies + 1] = release

-- Stalled: waiting for a turn past the watermark that is not at hand.
local stalledNow = (brokenSeq ~= nil and brokenSeq > applied) or (parked > 0 and not nextHeld)
if stalledNow and not stalledAt then
  local ms = nowMs()
  redis.call('HSET', KEYS[1], 'stalledAt', tostring(ms))
  replies[#replies + 1] = {1, ms, applied + 1}
elseif stalledAt and not stalledNow then
  redis.call('HDEL', KEYS[1], 'stalledAt')
  replies[#replies + 1] = {-1}
elseif stalledNow then
  replies[#replies + 1] = {2, stalledAt, applied + 1}
else
  replies[#replies + 1] = {0}
end
return replies
