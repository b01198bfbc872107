-- sem_add.lua — add permits (a negative delta takes them away; the count may go below 0).
--
-- KEYS[1]  the semaphore N
-- KEYS[2]  its channel redisson_sc:{N}
-- ARGV[1]  delta
-- Reply    the available permits now (also published, so waiters look again)
local available = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], available)
return available
