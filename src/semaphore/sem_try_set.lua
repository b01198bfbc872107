-- sem_try_set.lua — set a semaphore's permits if it does not exist yet (trySetPermits).
--
-- KEYS[1]  the semaphore N: a string, the available permits
-- KEYS[2]  its channel redisson_sc:{N}
-- ARGV[1]  permits
-- Reply    1 set (and the count published), 0 it already existed
if redis.call('get', KEYS[1]) then
    return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
