-- SPDX-License-Identifier: MIT
-- handoff_drop.lua — a waiter that gave up leaves the hand-off queue and takes back a
-- promise made to it (acquire.lua's marker and queue), so that a free lock is not held
-- back for the marker's lifetime by a waiter that has left, and no release names it. Only
-- its own: a marker naming another waiter stays.
--
-- KEYS[1]  [stored] the hand-off marker {N}:handoff (dlock's own): a string, the owner field of
--          the waiter the free lock is promised to
-- KEYS[2]  [stored] the hand-off queue {N}:handoff_queue (dlock's own): a sorted set of owner fields
-- ARGV[1]  the owner field of the waiter that gave up, <client-id>:<owner>
-- Reply    1 the marker named it and is gone; 0 it named another waiter, or nobody
--
-- A marker or a queue of another type fails GET or ZREM, the first write, before anything
-- is written.
local promised = redis.call('get', KEYS[1]) == ARGV[1]
redis.call('zrem', KEYS[2], ARGV[1])
if promised then
    redis.call('del', KEYS[1])
    return 1
end
return 0
