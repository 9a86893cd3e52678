--[[
  validator-record: records the decisions of one session's compactions, and the session's new frame
  state, before they are published (write-ahead), in one atomic step guarded by what the caller read
  (compare-and-set on version and epoch), so two validators can never interleave on one session.

  KEYS[1]  frame key    (hash: v = version, e = epoch, s = frame state JSON)
  KEYS[2]  decided key  (hash: compactionId -> decided record JSON)
  KEYS[3]  seen key     (string: the session had state here; kept when the other two expire)
  ARGV[1]  the epoch to write under (the store's current epoch, as the caller loaded it)
  ARGV[2]  the version the caller read (0 for an absent session)
  ARGV[3]  the epoch the caller read on the session ('' for an absent session)
  ARGV[4]  the new frame state JSON
  ARGV[5]  the state retention in ms (0: kept forever): frame and decided expire that long after this
           write, together; the seen key stays, so a later load knows to rebuild the session from the
           markers topic rather than start it anew
  ARGV[6..] pairs of compactionId, decided record JSON

  Returns  1  recorded (version is now ARGV[2] + 1)
           0  conflict: the session is not as the caller read it (another writer, or Redis lost it)
]]
local stored = redis.call('HMGET', KEYS[1], 'v', 'e')
local version = tonumber(stored[1]) or 0
local epoch = stored[2] or ''
if version ~= tonumber(ARGV[2]) or epoch ~= ARGV[3] then
  return 0
end
if epoch ~= ARGV[1] then
  -- A session left from an older epoch: its records are not this epoch's truth.
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[1], 'v', version + 1, 'e', ARGV[1], 's', ARGV[4])
for i = 6, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
local retention = tonumber(ARGV[5])
if retention > 0 then
  redis.call('PEXPIRE', KEYS[1], retention)
  redis.call('PEXPIRE', KEYS[2], retention)
  -- Once per session (and again after it expired): the mark itself never expires.
  if version == 0 then redis.call('SET', KEYS[3], '1') end
end
return 1
