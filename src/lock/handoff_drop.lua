-- SPDX-License-Identifier: MIT
-- handoff_drop.lua — a waiter that gave up takes back its claim on the next turn (the
-- hand-off marker of acquire.lua), so that a free lock is not held back for the marker's
-- lifetime by a waiter that has left: a try right after would be refused though nobody
-- waits. Only its own claim: a marker naming another waiter stays.
--
-- KEYS[1]  the hand-off marker {N}:handoff (dlock's own): a string, the owner field of
--          the waiter the free lock is promised to
-- ARGV[1]  the owner field of the waiter that gave up, <client-id>:<owner>
-- Reply    1 the marker named it and is gone; 0 it named another waiter, or nobody
--
-- A marker of another type fails GET (WRONGTYPE) before anything is written.
if redis.call('get', KEYS[1]) == ARGV[1] then
    redis.call('del', KEYS[1])
    return 1
end
return 0
