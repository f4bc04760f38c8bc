-- Removes a task, its event stream, its index entries and its open-task entry (TTL
-- eviction).
--
-- KEYS: 1 task hash, 2 task stream, 3 all-tasks index, 4 finished tasks by end time,
--       5 every unfinished task
-- ARGV: 1 task id
-- Returns 1 when the task existed, else 0.

local index = redis.call('HGET', KEYS[1], 'idx')
local open = redis.call('HGET', KEYS[1], 'open')
local existed = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
if index then
  redis.call('ZREM', index, ARGV[1])
end
if open then
  redis.call('SREM', open, ARGV[1])
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('SREM', KEYS[5], ARGV[1])
return existed
