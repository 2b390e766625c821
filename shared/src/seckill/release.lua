-- release.lua: gives one reserved unit back, at most once per order.
--
-- KEYS[1] sale:{id}:stock      integer: units left to reserve
-- KEYS[2] sale:{id}:bought     hash userId -> units the user holds
-- KEYS[3] sale:{id}:pending    hash orderId -> "userId:reservedAtMs"
-- KEYS[4] sale:{id}:released   set of orderIds already given back
-- ARGV[1] orderId
-- ARGV[2] holder userId, or '' (see below)
--
-- Without a holder, releases a reservation still in `pending` (the order route after a
-- failed send, the reconciliation, a consumer that rejects the order before it removed the
-- pending entry). With a holder, releases even an order no longer pending, e.g. an order
-- materialized then cancelled for non-payment: the caller vouches that the order existed and
-- that the holder held it.
--
-- Returns 1 when it gave the unit back: HDEL pending, SADD released, INCR stock,
-- HINCRBY bought -1. Returns 0 and changes nothing when the order was already released,
-- or is unknown and no holder was given.

if redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1 then
  return 0
end
local user = ARGV[2]
local entry = redis.call('HGET', KEYS[3], ARGV[1])
if entry then
  user = string.match(entry, '^(.*):%-?%d+$') or user
elseif user == '' then
  return 0
end

redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('INCR', KEYS[1])
if redis.call('HINCRBY', KEYS[2], user, -1) <= 0 then
  redis.call('HDEL', KEYS[2], user)
end
return 1
