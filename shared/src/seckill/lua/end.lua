-- end.lua: ends a sale early, at once: every admission after this answers ENDED.
--
-- KEYS[1] sale:{id}:info   hash: startsAtMs, endsAtMs, ... (reserve.lua's)
-- ARGV[1] the end, epoch milliseconds (the sale's new endsAt in DynamoDB)
--
-- Sets `ended` (which reserve.lua checks before anything else of the sale, whatever the
-- caller's clock) and brings `endsAtMs` forward to ARGV[1], never later, so that the detail
-- shows the sale ENDED. A script, so that no admission runs between the two writes. A sale the
-- cache does not hold is left alone (preheating an ended sale writes both fields itself).
-- Returns 1 when the sale was there, 0 otherwise.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'ended', '1')
local ends = tonumber(redis.call('HGET', KEYS[1], 'endsAtMs'))
if ends == nil or ends > tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'endsAtMs', ARGV[1])
end
return 1
