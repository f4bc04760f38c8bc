-- Removes and returns a dead letter, so two operators re-driving it cannot both get it.
--
-- KEYS: 1 the dead-letter hash, 2 the dead-letter order index
-- ARGV: 1 dead-letter id
-- Returns the letter's JSON, or nil.

local letter = redis.call('HGET', KEYS[1], ARGV[1])
if letter then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return letter
