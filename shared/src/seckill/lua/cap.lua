-- cap.lua: lowers a sale's Redis stock to what DynamoDB can still confirm; never raises it.
--
-- KEYS[1] sale:{id}:stock      integer: units left to reserve
-- KEYS[2] sale:{id}:pending    hash orderId -> "userId:reservedAtMs:units" (no ":units": 1)
-- ARGV[1] the sale's stockRemaining in DynamoDB, read just before
--
-- In steady state the stock is DynamoDB's stockRemaining minus the pending reservations' units
-- minus those of the orders the consumer claimed and is committing, so it never exceeds
-- stockRemaining - (the pending units). It does when Redis lost admissions (a failover to a replica
-- that missed the last writes, a node that came back empty and was preheated while orders
-- were in flight): then Redis would admit orders that DynamoDB must reject. This sets the
-- stock to that ceiling (at least 0). Atomic against the admission and release scripts.
--
-- Returns how many units it took away: 0 when within the ceiling or when the sale has no
-- stock key.

local stock = redis.call('GET', KEYS[1])
if not stock then
  return 0
end
stock = tonumber(stock)
local pending = 0
for _, entry in ipairs(redis.call('HVALS', KEYS[2])) do
  pending = pending + (tonumber(string.match(entry, '^[^:]*:%-?%d+:(%d+)$')) or 1)
end
local ceiling = tonumber(ARGV[1]) - pending
if ceiling < 0 then
  ceiling = 0
end
if stock <= ceiling then
  return 0
end
redis.call('SET', KEYS[1], ceiling)
return stock - ceiling
