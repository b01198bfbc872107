-- SPDX-License-Identifier: MIT
-- raise_token.lua — a fenced lock's token counter is raised to at least a floor, while the
-- owner holds the lock (a RedLock over fenced members: see src/multilock/multilock.c).
--
-- KEYS[1]  [stored] the lock hash N
-- KEYS[2]  [stored] the token counter redisson_lock_token:{N}
-- ARGV[1]  the owner field, <client-id>:<owner>
-- ARGV[2]  the floor: the composite's token
-- Reply    1 the owner holds N, and the counter is now at least the floor | 0 it does not
--
-- Only under the owner's hold: the next holder's INCR then comes after the raise. The
-- counter stays a plain integer string, as Redisson's RFencedLock keeps it; one that holds
-- anything else is refused, not overwritten. Compared exactly: tokens go to 2^63 - 1.

-- uses: int64

if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return 0
end
local token = redis.call('get', KEYS[2]) or '0' -- a key of another type fails here
local now_high, now_low = int64_halves(token)
if not now_high then
    return int64_refusal(KEYS[2], token, 'a fencing token')
end
local floor_high, floor_low = int64_halves(ARGV[2])
if now_high < floor_high or (now_high == floor_high and now_low < floor_low) then
    redis.call('set', KEYS[2], ARGV[2])
end
return 1
