--[[
  store-lock: the lock one rebuilder of a store holds while it rebuilds (the others wait for the epoch).
  Owned: only the owner that took it may renew or release it, and a lock whose holder died lapses after
  its time to live, so a crashed rebuilder never blocks the store for good.

  KEYS[1]  the store's lock key  (string: the owner's id, with a time to live)
  ARGV[1]  the operation: acquire | renew | release
  ARGV[2]  the owner's id
  ARGV[3]  the time to live in milliseconds (acquire, renew)

  Returns  1  held   (acquire: taken; renew: extended; release: released)
           0  not_held  another owner holds it (acquire), or the caller no longer does (renew, release)
]]
local op, owner = ARGV[1], ARGV[2]
if op == 'acquire' then
  if redis.call('SET', KEYS[1], owner, 'PX', ARGV[3], 'NX') then return 1 end
  return 0
end
if redis.call('GET', KEYS[1]) ~= owner then return 0 end
if op == 'renew' then
  return redis.call('PEXPIRE', KEYS[1], ARGV[3])
elseif op == 'release' then
  return redis.call('DEL', KEYS[1])
end
return redis.error_reply('store-lock: unknown operation ' .. tostring(op))
