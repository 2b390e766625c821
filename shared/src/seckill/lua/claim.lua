-- claim.lua: the order consumer takes a batch's reservations over from the `pending`
-- worklist, atomically against `release.lua`, before it materializes their orders, and
-- learns what each reservation holds: the consumer materializes that, not what a message says.
--
-- KEYS[1] sale:{id}:pending    hash orderId -> "userId:reservedAtMs:units"
-- KEYS[2] sale:{id}:released   set of orderIds already given back
-- KEYS[3] sale:{id}:claimed    hash orderId -> the entry it had in `pending`
-- ARGV    the orderIds of one sale in the batch
--
-- Answers one string per orderId, in order: '!' when it is in `released` (the reconciliation,
-- or the order route after an ambiguous failed send, gave its unit back; nothing changes);
-- its entry when it was pending (now moved from `pending` to `claimed`) or claimed before;
-- '' when Redis knows nothing of it (never admitted, or admitted before Redis lost its data).
-- Idempotent.
--
-- Why a unit is never both confirmed and released: `release.lua` without a holder only
-- releases an order still in `pending` and not in `released`, and every script runs
-- atomically. So either the release ran first (the order is in `released`: the consumer puts
-- it REJECTED, no stock change, no further release), or this claim ran first (the order left
-- `pending`: a release without a holder is a no-op, and the unit stays the consumer's).
--
-- A claimed order whose DynamoDB commit then fails stays the consumer's: its message is
-- retried, and the claim answers its entry again from `claimed`. (The price: the
-- reconciliation no longer sees a claimed order, so an `OrderPlaced` that ends in the
-- dead-letter queue keeps its unit held in Redis until it is redriven; Redis then undersells
-- by that unit, never oversells.)

local answers = {}
for i, order in ipairs(ARGV) do
  if redis.call('SISMEMBER', KEYS[2], order) == 1 then
    answers[i] = '!'
  else
    local entry = redis.call('HGET', KEYS[1], order)
    if entry then
      redis.call('HSET', KEYS[3], order, entry)
      redis.call('HDEL', KEYS[1], order)
    else
      entry = redis.call('HGET', KEYS[3], order)
    end
    answers[i] = entry or ''
  end
end
return answers
