-- SPDX-License-Identifier: MIT
-- set_lease.lua — give a lock its owner already holds a new lease (a MultiLock takes its
-- members under the watchdog, then sets the caller's lease on each once all are taken).
--
-- KEYS[1]  [stored] the lock hash N
-- ARGV[1]  the lease, ms
-- ARGV[2]  the owner field
-- Reply    1 set, 0 the owner holds nothing
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0
