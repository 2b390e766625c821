-- claim.lua: the order consumer takes a batch's reservations over from the `pending`
-- worklist, atomically against `release.lua`, before it materializes their orders.
--
-- KEYS[1] sale:{id}:pending    hash orderId -> "userId:reservedAtMs:units"
-- KEYS[2] sale:{id}:released   set of orderIds already given back
-- ARGV    the orderIds of one sale in the batch
--
-- For each orderId: if it is in `released` (the reconciliation, or the order route after an
-- ambiguous failed send, gave its unit back), it is reported and nothing changes; otherwise
-- it is claimed: HDEL from `pending` (a no-op if it is no longer there). Returns the
-- released orderIds; every other orderId is claimed. Idempotent.
--
-- Why a unit is never both confirmed and released: `release.lua` without a holder only
-- releases an order still in `pending` and not in `released`, and every script runs
-- atomically. So either the release ran first (the order is in `released`: the consumer puts
-- it REJECTED, no stock change, no further release), or this claim ran first (the order left
-- `pending`: a release without a holder is a no-op, and the unit stays the consumer's).
--
-- A claimed order whose DynamoDB commit then fails stays the consumer's: its message is
-- retried, and on the retry "neither pending nor released" is exactly "claimed by us", so the
-- claim answers the same. (The price: the reconciliation no longer sees a claimed order, so
-- an `OrderPlaced` that ends in the dead-letter queue keeps its unit held in Redis until it is
-- redriven; Redis then undersells by that unit, never oversells.)

local released = {}
for _, order in ipairs(ARGV) do
  if redis.call('SISMEMBER', KEYS[2], order) == 1 then
    released[#released + 1] = order
  else
    redis.call('HDEL', KEYS[1], order)
  end
end
return released
