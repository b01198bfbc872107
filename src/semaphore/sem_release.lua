-- sem_release.lua — give permits back (no owner: anybody may, as in Redisson).
--
-- KEYS[1]  the semaphore N
-- KEYS[2]  its channel redisson_sc:{N}
-- ARGV[1]  permits (> 0)
-- Reply    the available permits now (also published: the waiters' wake-up)
local available = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], available)
return available
