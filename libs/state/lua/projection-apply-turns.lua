--[[
  projection-apply-turn: applies one L0 turn to its session's projection and advances the session's
  watermark, in one atomic step, with the sequencing and change rules of core's SessionFold.apply.

  Everything is validated before anything is written: a script that fails half way keeps its earlier
  writes, so the checks (and the simulation of the turn's own changes) come first, the writes last.
  The caller has already run the stateless checks (ids present, symbols known) and builds every stored
  value; this script only decides what depends on the stored state.

  KEYS[1]  meta     hash  applied (watermark), brokenSeq, brokenReason
  KEYS[2]  turns    hash  seq -> turnId (tells a redelivery from a conflict)
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

  ARGV[1]  seq (canonical integer text)
  ARGV[2]  turnId
  ARGV[3]  the turn's turns.l0 position, "partition:offset"
  ARGV[4..] the turn's changes in order, 6 fields each: op, index, a, b, c, d
           O item_opened    a = itemId   b = item JSON
           C item_closed    a = itemId   b = end JSON
           D item_disposed  a = itemKey  b = end JSON if it ends an open item  c = disp member  d = dispkey member
           A artifact       c = art member  d = artkey member
           R refused by the caller's stateless checks   a = reason code

  Returns  {1, seq, index, reason, endSeq, ...}  applied; a triple per skipped change (endSeq is the
                                                  seq an item already ended at, for item_not_open, else 0)
           {2, applied, index, reason, endSeq, ...}  a redelivery (same seq, same turnId): nothing
                                                  changed; the triples are those of its first apply
           {-1, applied}                          seq_gap
           {-2, applied, turnId}                  seq_duplicate_conflict (the turnId applied at that seq)
           {-3, applied, turnId}                  seq_regression
  Refusals and skipped changes mark the session broken at the turn's seq (the earliest mark is kept).
]]
local seq = tonumber(ARGV[1])
local applied = tonumber(redis.call('HGET', KEYS[1], 'applied') or '0')

local function markBroken(reason)
  local current = redis.call('HGET', KEYS[1], 'brokenSeq')
  if not current or seq < tonumber(current) then
    redis.call('HSET', KEYS[1], 'brokenSeq', ARGV[1], 'brokenReason', reason)
  end
end

if seq > applied + 1 then
  markBroken('seq_gap')
  return {-1, applied}
end
if seq <= applied then
  local turnId = redis.call('HGET', KEYS[2], ARGV[1])
  if turnId == ARGV[2] then
    local reply = {2, applied}
    local skipped = redis.call('HGET', KEYS[13], ARGV[1])
    if skipped then
      for field in string.gmatch(skipped, '[^,]+') do
        reply[#reply + 1] = field
      end
    end
    return reply
  end
  if seq == applied then
    markBroken('seq_duplicate_conflict')
    return {-2, applied, turnId or ''}
  end
  markBroken('seq_regression')
  return {-3, applied, turnId or ''}
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

for i = 4, #ARGV, 6 do
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
    return redis.error_reply('projection-apply-turn: unknown op ' .. tostring(op))
  end
end

-- Write: the changes, then the turn's id and position, then the watermark.
for _, w in ipairs(writes) do
  local kind = w[1]
  if kind == 'O' then
    redis.call('HSET', KEYS[4], w[2], w[3])
    redis.call('ZADD', KEYS[6], ARGV[1], w[2])
  elseif kind == 'C' then
    redis.call('HSET', KEYS[5], w[2], w[3])
    redis.call('ZREM', KEYS[6], w[2])
    redis.call('ZADD', KEYS[7], ARGV[1], w[2])
    redis.call('ZADD', KEYS[8], ARGV[1], w[2])
  elseif kind == 'E' then
    redis.call('HSET', KEYS[5], w[2], w[3])
    redis.call('ZREM', KEYS[6], w[2])
    redis.call('ZADD', KEYS[7], ARGV[1], w[2])
  elseif kind == 'D' then
    redis.call('ZADD', KEYS[9], ARGV[1], w[2])
    redis.call('ZADD', KEYS[10], 0, w[3])
  else
    redis.call('ZADD', KEYS[11], ARGV[1], w[2])
    redis.call('ZADD', KEYS[12], 0, w[3])
  end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[1], 'applied', ARGV[1])
if firstReason then
  markBroken(firstReason)
  redis.call('HSET', KEYS[13], ARGV[1], table.concat(reply, ',', 3))
end
return reply
