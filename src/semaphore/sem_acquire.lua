-- sem_acquire.lua — take permits if that many are available.
--
-- KEYS[1]  the semaphore N
-- ARGV[1]  permits wanted (> 0)
-- Reply    {1, available after} taken, {0, available} not enough
local available = tonumber(redis.call('get', KEYS[1])) or 0
local wanted = tonumber(ARGV[1])
if available >= wanted then
    return {1, redis.call('decrby', KEYS[1], wanted)}
end
return {0, available}
