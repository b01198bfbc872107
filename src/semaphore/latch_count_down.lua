-- latch_count_down.lua — count down by one; at zero the latch is deleted and its waiters
-- released.
--
-- KEYS[1]  the latch N
-- KEYS[2]  its channel redisson_countdownlatch__channel__{N}
-- Reply    the count now (0 when it finished; counting down a finished latch does nothing)
if not redis.call('get', KEYS[1]) then
    return 0
end
local count = redis.call('decr', KEYS[1])
if count <= 0 then
    redis.call('del', KEYS[1])
    redis.call('publish', KEYS[2], 0)
    return 0
end
return count
