-- Removes one push config with its cursor, and the task from the set of tasks having
-- configs once its last config is gone.
--
-- KEYS: 1 the task's config hash, 2 the task's cursor hash, 3 the set of tasks with configs
-- ARGV: 1 config id, 2 task id
-- Returns 1 when a config was removed, else 0.

local removed = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[3], ARGV[2])
end
return removed
