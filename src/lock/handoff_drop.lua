-- SPDX-License-Identifier: MIT
-- handoff_drop.lua — a waiter that gave up leaves the hand-off queue, takes back a promise
-- made to it (acquire.lua's marker and queue) and gives back a grant it never took
-- (below), so that a lock is not held back for the marker's or the grant's lifetime by a
-- waiter that has left, and no release names it. Only its own: a marker naming another
-- waiter stays.
--
-- KEYS[1]  [stored] the hand-off marker {N}:handoff (dlock's own): a string, the owner field of
--          the waiter the free lock is promised to
-- KEYS[2]  [stored] the hand-off queue {N}:handoff_queue (dlock's own): a sorted set of owner fields
-- KEYS[3]  [stored] optional, passed when the waiter holds nothing the client knows of: the
--          lock hash N
-- KEYS[4]  [unstored] with KEYS[3]: its channel redisson_lock__channel:{N}
-- ARGV[1]  the owner field of the waiter that gave up, <client-id>:<owner>
-- Reply    1 the marker named it and is gone; 0 it named another waiter, or nobody
--
-- A release may have handed N to this waiter (release.lua's grant) just before it gave up,
-- the grant's message not yet taken: a hold of the waiter's own in N, which its client does
-- not know of, is that grant (or an acquire's the client reported failed). Nobody will use
-- it, so it is given back here, at once, not held for the grant's lease: N is freed and "0"
-- published, which wakes the waiters of every client (and Redisson's).
--
-- A marker, queue or lock of another type fails GET, HEXISTS or ZREM, the first write,
-- before anything is written.
local promised = redis.call('get', KEYS[1]) == ARGV[1]
local granted = KEYS[3] and redis.call('hexists', KEYS[3], ARGV[1]) == 1
redis.call('zrem', KEYS[2], ARGV[1])
if granted then
    redis.call('del', KEYS[3])
    redis.call('publish', KEYS[4], 0)
end
if promised then
    redis.call('del', KEYS[1])
    return 1
end
return 0
