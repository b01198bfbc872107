-- SPDX-License-Identifier: MIT
-- count.lua — the count a semaphore, a permit semaphore or a latch keeps under KEYS[1],
-- read and checked before anything is written.
--
-- A prelude (see int64.lua), put after int64.lua in front of each script whose header
-- has the line "-- uses: count".
--
-- uses: int64

-- The count under KEYS[1] ('0' when absent), or nil and the error that refuses the call
-- when it holds a string that is not a 64-bit integer (another type fails in GET).
local function count_of(what)
    local count = redis.call('get', KEYS[1]) or '0'
    if int64_halves(count) then
        return count
    end
    return nil, int64_refusal(KEYS[1], count, what)
end
