-- release.lua: gives an order's reserved units back, at most once per order.
--
-- KEYS[1] sale:{id}:stock      integer: units left to reserve
-- KEYS[2] sale:{id}:bought     hash userId -> units the user holds
-- KEYS[3] sale:{id}:pending    hash orderId -> "userId:reservedAtMs:units" (an entry written
--                              before orders had a quantity has no ":units": one unit)
-- KEYS[4] sale:{id}:released   set of orderIds already given back
-- KEYS[5] sale:{id}:orders     hash orderId -> userId of the admitted orders
-- ARGV[1] orderId
-- ARGV[2] holder userId, or '' (see below)
-- ARGV[3] the holder's units of the order (with a holder; a pending entry's own count wins)
--
-- Without a holder, releases a reservation still in `pending` (the order route after a
-- failed send, the reconciliation, a consumer that rejects the order before it removed the
-- pending entry). With a holder, releases even an order no longer pending, e.g. an order
-- materialized then cancelled for non-payment: the caller vouches that the order existed and
-- that the holder held it, with that many units.
--
-- Returns 1 when it gave the units back: HDEL pending, SADD released, INCRBY stock units,
-- HINCRBY bought -units, and, when the order was still pending (given up before it became an
-- order), HDEL orders: its Idempotency-Key, if any, is free again (see reserve.lua). Returns 0 and changes nothing when the order was already released,
-- or is unknown and no holder was given.

if redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1 then
  return 0
end
local user = ARGV[2]
local units = tonumber(ARGV[3]) or 1
local entry = redis.call('HGET', KEYS[3], ARGV[1])
if entry then
  redis.call('HDEL', KEYS[5], ARGV[1])
  local owner, count = string.match(entry, '^([^:]*):%-?%d+:(%d+)$')
  if owner then
    user, units = owner, tonumber(count)
  else
    user, units = string.match(entry, '^([^:]*):%-?%d+$') or user, 1
  end
elseif user == '' then
  return 0
end

redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('INCRBY', KEYS[1], units)
if redis.call('HINCRBY', KEYS[2], user, -units) <= 0 then
  redis.call('HDEL', KEYS[2], user)
end
return 1
