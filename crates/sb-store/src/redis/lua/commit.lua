-- The compare-and-set commit: check the task's seq, write the record, append its events
-- to the task's stream and the global stream, publish them, update both indexes. One
-- script, so a racing replica sees either all of it or none of it.
--
-- KEYS: 1 task hash, 2 task stream, 3 global stream, 4 principal index, 5 all-tasks index,
--       6 the principal's set of unfinished tasks, 7 the finished tasks by end time,
--       8 every unfinished task
-- ARGV: 1 expected seq, 2 new seq, 3 record JSON, 4 task id, 5 status millis,
--       6 created millis, 7 pub/sub channel, 8 global stream cap,
--       9 "1" if the task is unfinished after this commit, else "0",
--       10 for a create, the most unfinished tasks the principal may have ("0": no limit),
--       11 the pub/sub channel that hears of a task's end (its id, when ARGV 9 is "0"),
--       then one (seq, event JSON, state after it or "") triple per event, seqs strictly
--       increasing
-- Returns nil when written, "limit" when the open-task limit refused a create, else the
-- stored seq ("0" when absent) as a string.

-- Compared as strings: both sides are canonical decimals, and Lua numbers are doubles.
local current = redis.call('HGET', KEYS[1], 'seq') or '0'
if current ~= ARGV[1] then
  return current
end
if current == '0' and ARGV[10] ~= '0' and redis.call('SCARD', KEYS[6]) >= tonumber(ARGV[10]) then
  return 'limit'
end

-- Scripts do not roll back, so every check that could fail an XADD comes before any write.
if #ARGV > 11 then
  local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
  if last then
    local last_seq = tonumber(string.match(last[1], '^(%d+)-'))
    if last_seq >= tonumber(ARGV[12]) then
      return redis.error_reply('event ' .. ARGV[12] .. ' is not after the logged ' .. last_seq)
    end
  end
end

local old_index = redis.call('HGET', KEYS[1], 'idx')
if old_index and old_index ~= KEYS[4] then
  redis.call('ZREM', old_index, ARGV[4])
end
-- `idx` names the principal index, so delete.lua finds it without decoding the record.
redis.call('HSET', KEYS[1], 'seq', ARGV[2], 'rec', ARGV[3], 'idx', KEYS[4], 'open', KEYS[6])
if ARGV[9] == '1' then
  redis.call('SADD', KEYS[6], ARGV[4])
  redis.call('SADD', KEYS[8], ARGV[4])
else
  redis.call('SREM', KEYS[6], ARGV[4])
  redis.call('SREM', KEYS[8], ARGV[4])
end

-- The all-tasks stream carries a notice of each event, not the event: its readers go to
-- the task's log for the rest.
for i = 12, #ARGV, 3 do
  local seq, event = ARGV[i], ARGV[i + 1]
  redis.call('XADD', KEYS[2], seq .. '-0', 'e', event)
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[8], '*', 't', ARGV[4], 's', seq, 'st', ARGV[i + 2])
  redis.call('PUBLISH', ARGV[7], event)
end

redis.call('ZADD', KEYS[4], ARGV[5], ARGV[4])
redis.call('ZADD', KEYS[5], ARGV[6], ARGV[4])
-- After the events: whoever hears of the end reads a task that has every one of them.
if ARGV[9] == '0' then
  redis.call('ZADD', KEYS[7], ARGV[5], ARGV[4])
  redis.call('PUBLISH', ARGV[11], ARGV[4])
end
return false
