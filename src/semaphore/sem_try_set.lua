-- sem_try_set.lua — set a semaphore's permits if it does not exist yet (trySetPermits).
--
-- KEYS[1]  the semaphore N: a string, the available permits
-- KEYS[2]  its channel redisson_sc:{N}
-- ARGV[1]  permits
-- Reply    1 set (and the count published), 0 it already existed
--
-- Checks first, then writes (see src/lock/acquire.lua): a refused call changes nothing.

-- A 64-bit integer as Redis writes one (INCR takes nothing else: no sign but '-', no
-- leading zero or space, within range), as two halves that are exact as Lua numbers
-- (doubles, exact only to 2^53): value = high * 10^9 + low, both with the value's sign.
-- nil for anything else.
local function int64_halves(s)
    local minus, digits = string.match(s, '^(%-?)([1-9]%d*)$')
    if not digits then
        return s == '0' and 0 or nil, 0
    end
    local sign = minus == '-' and -1 or 1
    local high, low = tonumber(string.sub(digits, 1, -10)) or 0, tonumber(string.sub(digits, -9))
    if #digits > 19 or high > 9223372036 or (high == 9223372036 and low > 854775807 + #minus) then
        return nil, 0
    end
    return sign * high, sign * low
end

-- The count under KEYS[1] ('0' when absent), or nil and the error that refuses the call
-- when it holds a string that is not a 64-bit integer (another type fails in GET).
local function count_of(what)
    local count = redis.call('get', KEYS[1]) or '0'
    if int64_halves(count) then
        return count
    end
    return nil, redis.error_reply(string.format('WRONGTYPE %s holds "%s", not %s (a 64-bit integer)',
        KEYS[1], (string.gsub(string.sub(count, 1, 40), '[^%w%p ]', '?')), what))
end

if redis.call('exists', KEYS[1]) == 1 then
    local count, refused = count_of('a count of permits')
    return count and 0 or refused
end
redis.call('publish', KEYS[2], ARGV[1])
redis.call('set', KEYS[1], ARGV[1])
return 1
