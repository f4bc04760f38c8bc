-- A fleet document's compare-and-set: stores the new value (or removes the document)
-- only if the stored one is the expected one (or there is none, when none is
-- expected). One script, so replicas racing on one document cannot both win.
--
-- KEYS: 1 the collection's hash
-- ARGV: 1 document id, 2 '1' if a value is expected ('0': the document must be
--       absent), 3 the expected value, 4 '1' to store the new value ('0': remove),
--       5 the new value
-- Returns 1 if swapped, 0 if the stored value was not the expected one.

local current = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  -- HGET of an absent field gives false, never equal to a string.
  if current ~= ARGV[3] then
    return 0
  end
elseif current then
  return 0
end
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[5])
else
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 1
