-- Moves a push config's delivery cursor forward, never back, and only while the config
-- exists (a delivery finishing after a delete must not bring the config back).
--
-- KEYS: 1 the task's config hash, 2 the task's cursor hash
-- ARGV: 1 config id, 2 seq
-- Returns 1 when the cursor moved, else 0.

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local current = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[2]) > current then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  return 1
end
return 0
