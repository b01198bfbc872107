-- SPDX-License-Identifier: MIT
-- handoff_drop_cluster.lua — handoff_drop.lua for a Cluster client: a waiter that gave up
-- leaves the hand-off queue and takes back a promise made to it, unless N's slot is being
-- migrated (acquire.lua, "In a Cluster": then marker and queue are left alone on both nodes,
-- and what the waiter leaves behind is dropped as a dead waiter's is: it lapses). Only its
-- own: a marker naming another waiter stays.
--
-- KEYS[1]  [stored] the lock hash N, never touched: the one declared key, so that the script
--          goes to N's node (and through ASK, never TRYAGAIN, during a migration)
-- KEYS[2]  [unstored] the hand-off marker {N}:handoff (dlock's own): a string, the owner
--          field of the waiter the free lock is promised to
-- KEYS[3]  [unstored] the hand-off queue {N}:handoff_queue (dlock's own): a sorted set of
--          owner fields
-- ARGV[1]  the owner field of the waiter that gave up, <client-id>:<owner>
-- ARGV[2]  the probe {N}:handoff_probe, a key of N's slot that never exists
-- Reply    1 the marker named it and is gone; 0 it named another waiter, or nobody, or the
--          slot is being migrated
--
-- A marker or a queue of another type fails GET or ZREM, the first write, before anything
-- is written.
if type(redis.pcall('exists', KEYS[3], ARGV[2])) == 'table' then
    return 0
end
local promised = redis.call('get', KEYS[2]) == ARGV[1]
redis.call('zrem', KEYS[3], ARGV[1])
if promised then
    redis.call('del', KEYS[2])
    return 1
end
return 0
