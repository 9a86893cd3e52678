--[[
  projection-state-at: reads what a BoundaryQuery needs from one session's projection, in one step
  (a consistent snapshot), at a cost of O(items in the span + the fewer of the items ended after the
  boundary and the ended items opened by it + looked-up ids), never O(history). Of the items ended
  after the boundary only those opened by it are fetched (a reader far behind the materializer would
  otherwise fetch every item opened since). The caller assembles the StateAtBoundary (as-of
  filtering, latest per key, sorting); this script only fetches.

  KEYS[1]  turns    KEYS[2] items   KEYS[3] ends    KEYS[4] open    KEYS[5] ended
  KEYS[6]  disp     KEYS[7] dispkey KEYS[8] art     KEYS[9] artkey  KEYS[10] endedopen
  (the layout of projection-apply-turns; the watermark is the number of turns applied, HLEN turns)

  ARGV[1]  fromSeq
  ARGV[2]  toSeq
  ARGV[3]  n, the number of item ids to look up, then the n ids
  then     m, the number of disposition keys, then m pairs: max, min (ZREVRANGEBYLEX bounds)
  then     p, the number of artifact paths, then p pairs: max, min

  Returns  { applied,
             openIds, openItems, openEnds,         -- open now and opened by toSeq, then ended after toSeq
             closedIds, closedItems, closedEnds,   -- closed inside fromSeq..toSeq
             dispMembers, artMembers,              -- span index members inside fromSeq..toSeq, in order
             lookupItems, lookupEnds,              -- per looked-up id (nil when absent; 1 when in open or closed)
             lookupDisp, lookupArt }               -- per key / path, the latest member at or before toSeq
]]
local fromSeq, toSeq = ARGV[1], ARGV[2]
local lastSeq = tonumber(toSeq)

-- A multi-key read in chunks: unpack's stack holds a few thousand values, a session may hold more.
local chunk = 1000
local function each(command, key, ids)
  if #ids == 0 then
    return {}
  elseif #ids <= chunk then
    return redis.call(command, key, unpack(ids))
  end
  local found = {}
  for first = 1, #ids, chunk do
    local part = redis.call(command, key, unpack(ids, first, math.min(#ids, first + chunk - 1)))
    for i = 1, #part do
      found[first + i - 1] = part[i]
    end
  end
  return found
end
local function mget(key, ids)
  return each('HMGET', key, ids)
end

local openIds = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', toSeq)
-- The items open at the boundary that have ended since: opened by toSeq and ended after it. Either index
-- finds them, filtered by the other (both are written by the same step, projection-apply-turns): the
-- one with fewer candidates is read, the items ended after the boundary for a reader close behind the
-- materializer, the ended items opened by the boundary for one far behind it.
local function addWhere(ids, scores, keep)
  for i, id in ipairs(ids) do
    local score = scores[i]
    if score and keep(tonumber(score)) then
      openIds[#openIds + 1] = id
    end
  end
end
local after = '(' .. toSeq
if redis.call('ZCOUNT', KEYS[5], after, '+inf') <= redis.call('ZCOUNT', KEYS[10], '-inf', toSeq) then
  local endedAfter = redis.call('ZRANGEBYSCORE', KEYS[5], after, '+inf')
  addWhere(endedAfter, each('ZMSCORE', KEYS[10], endedAfter), function(opened)
    return opened <= lastSeq
  end)
else
  local openedBy = redis.call('ZRANGEBYSCORE', KEYS[10], '-inf', toSeq)
  addWhere(openedBy, each('ZMSCORE', KEYS[5], openedBy), function(ended)
    return ended > lastSeq
  end)
end
-- Closed inside the span: the items ended there whose end is a close (not a disposition).
local closedIds, closedEnds = {}, {}
local endedInSpan = redis.call('ZRANGEBYSCORE', KEYS[5], fromSeq, toSeq)
local spanEnds = mget(KEYS[3], endedInSpan)
for i, id in ipairs(endedInSpan) do
  local e = spanEnds[i]
  if e and string.sub(e, 1, 16) == '{"type":"closed"' then
    closedIds[#closedIds + 1] = id
    closedEnds[#closedEnds + 1] = e
  end
end

local cursor = 3
local function take(n)
  local list = {}
  for i = 1, n do
    list[i] = ARGV[cursor + i]
  end
  cursor = cursor + n + 1
  return list
end
local lookupIds = take(tonumber(ARGV[cursor]))
-- A looked-up id already in the reply (open or closed above: a claim about the span names its own items,
-- which is most lookups) is answered 1, "as above", not fetched and sent a second time.
local inReply = {}
for _, id in ipairs(openIds) do
  inReply[id] = true
end
for _, id in ipairs(closedIds) do
  inReply[id] = true
end
local fetchIds = {}
for _, id in ipairs(lookupIds) do
  if not inReply[id] then
    fetchIds[#fetchIds + 1] = id
  end
end
local fetchedItems, fetchedEnds = mget(KEYS[2], fetchIds), mget(KEYS[3], fetchIds)
local lookupItems, lookupEnds = {}, {}
local fetched = 0
for i, id in ipairs(lookupIds) do
  if inReply[id] then
    lookupItems[i], lookupEnds[i] = 1, 1
  else
    fetched = fetched + 1
    lookupItems[i], lookupEnds[i] = fetchedItems[fetched], fetchedEnds[fetched]
  end
end

local function latest(key, n)
  local found = {}
  for i = 1, n do
    local max, min = ARGV[cursor + 2 * i - 1], ARGV[cursor + 2 * i]
    local hit = redis.call('ZREVRANGEBYLEX', key, max, min, 'LIMIT', 0, 1)
    found[i] = hit[1] or false
  end
  cursor = cursor + 2 * n + 1
  return found
end
local lookupDisp = latest(KEYS[7], tonumber(ARGV[cursor]))
local lookupArt = latest(KEYS[9], tonumber(ARGV[cursor]))

return {
  redis.call('HLEN', KEYS[1]),
  openIds, mget(KEYS[2], openIds), mget(KEYS[3], openIds),
  closedIds, mget(KEYS[2], closedIds), closedEnds,
  redis.call('ZRANGEBYSCORE', KEYS[6], fromSeq, toSeq),
  redis.call('ZRANGEBYSCORE', KEYS[8], fromSeq, toSeq),
  lookupItems, lookupEnds,
  lookupDisp, lookupArt,
}
