-- claim.lua: the order consumer takes a batch's reservations over from the `pending`
-- worklist, atomically against `release.lua`, before it materializes their orders; and only
-- those the admission script recorded, for the user and the units the message names.
--
-- KEYS[1] sale:{id}:pending    hash orderId -> "userId:reservedAtMs:units"
-- KEYS[2] sale:{id}:released   set of orderIds already given back
-- KEYS[3] sale:{id}:orders     hash orderId -> "userId:units" once claimed ("userId" before)
-- ARGV    per order of one sale in the batch, three: orderId, userId, units (as the message
--         says them)
--
-- Returns one answer per order, in ARGV's order:
--   RELEASED  it is in `released` (the reconciliation, or the order route after an ambiguous
--             failed send, gave its unit back): nothing changes;
--   CLAIMED   its reservation is for that user and that many units: HDEL from `pending` and
--             HSET `orders` to "userId:units", so that the reservation is still known once it
--             left `pending`; an order claimed before answers CLAIMED again (idempotent);
--   MISMATCH  its reservation is for another user or another number of units: nothing changes
--             (the message is not the one the order route sent);
--   UNKNOWN   no reservation of it is known (never admitted, or Redis lost it): nothing changes.
-- An `orders` entry of an order claimed before entries kept its units ("userId" alone) is
-- checked on the user only.
--
-- Why a unit is never both confirmed and released: `release.lua` without a holder only
-- releases an order still in `pending` and not in `released`, and every script runs
-- atomically. So either the release ran first (the order is in `released`: the consumer puts
-- it REJECTED, no stock change, no further release), or this claim ran first (the order left
-- `pending`: a release without a holder is a no-op, and the unit stays the consumer's).
--
-- A claimed order whose DynamoDB commit then fails stays the consumer's: its message is
-- retried, and on the retry its `orders` entry answers CLAIMED again. (The price: the
-- reconciliation no longer sees a claimed order, so an `OrderPlaced` that ends in the
-- dead-letter queue keeps its unit held in Redis until it is redriven; Redis then undersells
-- by that unit, never oversells.)

local answers = {}
for i = 1, #ARGV, 3 do
  local order, user, units = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local answer = 'UNKNOWN'
  if redis.call('SISMEMBER', KEYS[2], order) == 1 then
    answer = 'RELEASED'
  else
    local owner, count
    local entry = redis.call('HGET', KEYS[1], order)
    if entry then
      owner, count = string.match(entry, '^([^:]*):%-?%d+:(%d+)$')
      if not owner then
        owner, count = string.match(entry, '^([^:]*):%-?%d+$'), '1'
      end
    else
      local kept = redis.call('HGET', KEYS[3], order)
      if kept then
        owner, count = string.match(kept, '^([^:]*):(%d+)$')
        if not owner then
          owner, count = kept, units
        end
      end
    end
    if owner then
      if owner ~= user or tonumber(count) ~= units then
        answer = 'MISMATCH'
      else
        answer = 'CLAIMED'
        if entry then
          redis.call('HSET', KEYS[3], order, owner .. ':' .. count)
          redis.call('HDEL', KEYS[1], order)
        end
      end
    end
  end
  answers[#answers + 1] = answer
end
return answers
