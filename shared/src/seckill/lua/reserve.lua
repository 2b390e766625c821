-- reserve.lua: admits one order of a flash sale, all its units or none, atomically, or says
-- why not.
--
-- KEYS[1] sale:{id}:info       hash: startsAtMs, endsAtMs, perUserLimit, priceCents, ended
--                              (set once a sale is ended early, end.lua),
--                              reservationOpensAtMs (only on a sale that requires a
--                              reservation), ...
-- KEYS[2] sale:{id}:stock      integer: units left to reserve
-- KEYS[3] sale:{id}:bought     hash userId -> units the user holds
-- KEYS[4] sale:{id}:pending    hash orderId -> "userId:reservedAtMs:units"
-- KEYS[5] user:{u}:order-rate  integer: the user's order attempts, on every sale, in the
--                              current one-second window
-- KEYS[6] sale:{id}:orders     hash orderId -> userId: every admitted order's owner (removed
--                              only when its reservation is given up before it became an order)
-- KEYS[7] sale:{id}:reserved   set of the userIds who reserved (预约) the sale
-- KEYS[8] (only with an Idempotency-Key) user:{u}:order-key:<key>  hash request, order, price:
--                              what the buyer's key admitted, kept for ARGV[7] ms
-- ARGV[1] userId
-- ARGV[2] orderId (fresh, unique)
-- ARGV[3] now, epoch milliseconds (the caller's clock: Lua's time is not replicated)
-- ARGV[4] attempts allowed per user per second
-- ARGV[5] units to reserve, at least 1 (the route checked it)
-- ARGV[6] (with KEYS[8]) the request's fingerprint: its sale and checkout, hashed
-- ARGV[7] (with KEYS[8]) how long an admitted key is kept, milliseconds (24 hours)
--
-- Returns {status, priceCents, n}: status is OK (the units reserved for orderId, its owner
-- recorded in `orders`, so that the order reads as PENDING until it is materialized) or, with
-- nothing reserved, RATE_LIMITED, UNKNOWN_SALE, NOT_STARTED, ENDED, NOT_RESERVED (the sale
-- requires a reservation the user does not hold), LIMIT_REACHED (n: the
-- units the user may still buy, maybe 0), SOLD_OUT, or NOT_ENOUGH_STOCK (n: the units left,
-- at least 1, fewer than asked), checked in that order (priceCents is '' for RATE_LIMITED and
-- UNKNOWN_SALE; n is '' unless stated).
--
-- With an Idempotency-Key (KEYS[8]), after the rate limit: a key that admitted an order for
-- another request answers KEY_REUSED; one that admitted an order for this request answers
-- {REPLAY, priceCents, orderId, reservedAtMs} and reserves nothing: reservedAtMs when the
-- reservation is still pending (its event may never have been sent: the caller sends it, the
-- consumer takes an order once), '' when the consumer took it over (materialized, or being
-- so). A key whose order was given up before it became an order (the event could not be sent,
-- or the reconciliation released it) is free again: the attempt is judged as a new one. Only
-- an admission records the key, in this same script, so no reservation exists without its key
-- and no key without its reservation; a refusal reserved nothing and records nothing (a retry
-- is judged again), so refusals cannot fill the cache for a day at the rate limit.
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

if KEYS[8] then
  local kept = redis.call('HMGET', KEYS[8], 'request', 'order', 'price')
  if kept[1] then
    if kept[1] ~= ARGV[6] then
      return {'KEY_REUSED', ''}
    end
    local entry = redis.call('HGET', KEYS[4], kept[2])
    if entry then
      return {'REPLAY', kept[3], kept[2], string.match(entry, '^[^:]*:(%-?%d+)') or ARGV[3]}
    end
    if redis.call('HEXISTS', KEYS[6], kept[2]) == 1 then
      return {'REPLAY', kept[3], kept[2], ''}
    end
  end
end

local sale = redis.call('HMGET', KEYS[1], 'startsAtMs', 'endsAtMs', 'perUserLimit', 'priceCents', 'ended', 'reservationOpensAtMs')
if not sale[1] then
  return {'UNKNOWN_SALE', ''}
end
-- Ended early by an operator (end.lua): whatever the caller's clock says.
if sale[5] then
  return {'ENDED', sale[4]}
end
local now = tonumber(ARGV[3])
if now < tonumber(sale[1]) then
  return {'NOT_STARTED', sale[4]}
end
if now >= tonumber(sale[2]) then
  return {'ENDED', sale[4]}
end
-- Only a sale that requires a reservation carries reservationOpensAtMs.
if sale[6] and redis.call('SISMEMBER', KEYS[7], ARGV[1]) == 0 then
  return {'NOT_RESERVED', sale[4]}
end

local units = tonumber(ARGV[5])
local bought = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
local limit = tonumber(sale[3])
if bought + units > limit then
  local room = limit - bought
  if room < 0 then
    room = 0
  end
  return {'LIMIT_REACHED', sale[4], tostring(room)}
end
local stock = tonumber(redis.call('GET', KEYS[2]) or '0')
if stock <= 0 then
  return {'SOLD_OUT', sale[4], ''}
end
if stock < units then
  return {'NOT_ENOUGH_STOCK', sale[4], tostring(stock)}
end

redis.call('DECRBY', KEYS[2], units)
redis.call('HINCRBY', KEYS[3], ARGV[1], units)
redis.call('HSET', KEYS[4], ARGV[2], ARGV[1] .. ':' .. ARGV[3] .. ':' .. units)
redis.call('HSET', KEYS[6], ARGV[2], ARGV[1])
if KEYS[8] then
  redis.call('HSET', KEYS[8], 'request', ARGV[6], 'order', ARGV[2], 'price', sale[4])
  redis.call('PEXPIRE', KEYS[8], ARGV[7])
end
return {'OK', sale[4], ''}
