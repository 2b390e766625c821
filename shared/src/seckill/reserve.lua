-- reserve.lua: admits one order of a flash sale, atomically, or says why not.
--
-- KEYS[1] sale:{id}:info       hash: startsAtMs, endsAtMs, perUserLimit, priceCents, ...
-- KEYS[2] sale:{id}:stock      integer: units left to reserve
-- KEYS[3] sale:{id}:bought     hash userId -> units the user holds
-- KEYS[4] sale:{id}:pending    hash orderId -> "userId:reservedAtMs"
-- KEYS[5] user:{u}:order-rate  integer: the user's order attempts, on every sale, in the
--                              current one-second window
-- KEYS[6] sale:{id}:orders     hash orderId -> userId: every admitted order's owner (never removed)
-- ARGV[1] userId
-- ARGV[2] orderId (fresh, unique)
-- ARGV[3] now, epoch milliseconds (the caller's clock: Lua's time is not replicated)
-- ARGV[4] attempts allowed per user per second
--
-- Returns {status, priceCents}: status is OK (one unit reserved for orderId, its owner
-- recorded in `orders`, so that the order reads as PENDING until it is materialized) or, with
-- nothing reserved, RATE_LIMITED, UNKNOWN_SALE, NOT_STARTED, ENDED, LIMIT_REACHED or
-- SOLD_OUT, checked in that order (priceCents is '' for RATE_LIMITED and UNKNOWN_SALE).
--
-- Every attempt counts against the rate limit, first, whatever it answers and whichever sale
-- it names: probing a sale before it starts, after it ended, or sales that do not exist costs
-- the same budget as buying.
--
-- KEYS[5] is the user's, not the sale's, so it lies in another hash slot than the sale's keys.
-- That is fine because the cache runs with cluster mode disabled (template.yaml, RedisCache: a
-- replication group of one primary and its replica, no node groups): every key is on the one
-- primary, where a script may use keys of any slot. A Redis Cluster would refuse this script
-- (CROSSSLOT); the counter would then need a call of its own before the script.

local attempts = redis.call('INCR', KEYS[5])
if attempts == 1 then
  redis.call('PEXPIRE', KEYS[5], 1000)
end
if attempts > tonumber(ARGV[4]) then
  return {'RATE_LIMITED', ''}
end

local sale = redis.call('HMGET', KEYS[1], 'startsAtMs', 'endsAtMs', 'perUserLimit', 'priceCents')
if not sale[1] then
  return {'UNKNOWN_SALE', ''}
end
local now = tonumber(ARGV[3])
if now < tonumber(sale[1]) then
  return {'NOT_STARTED', sale[4]}
end
if now >= tonumber(sale[2]) then
  return {'ENDED', sale[4]}
end

local bought = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if bought >= tonumber(sale[3]) then
  return {'LIMIT_REACHED', sale[4]}
end
local stock = tonumber(redis.call('GET', KEYS[2]) or '0')
if stock <= 0 then
  return {'SOLD_OUT', sale[4]}
end

redis.call('DECR', KEYS[2])
redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
redis.call('HSET', KEYS[4], ARGV[2], ARGV[1] .. ':' .. ARGV[3])
redis.call('HSET', KEYS[6], ARGV[2], ARGV[1])
return {'OK', sale[4]}
