-- sem_drain.lua — take every available permit at once.
--
-- KEYS[1]  the semaphore N
-- Reply    the permits taken: 0 when there are none, or the count is below zero (a
--          negative count is left as it is: draining must not add permits)
local available = tonumber(redis.call('get', KEYS[1])) or 0
if available <= 0 then
    return 0
end
redis.call('set', KEYS[1], 0)
return available
