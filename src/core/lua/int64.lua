-- SPDX-License-Identifier: MIT
-- int64.lua — exact 64-bit integers (Redis counters and fencing tokens go to 2^63 - 1),
-- where a Lua number, a double, is exact only to 2^53.
--
-- A prelude, not a script: the build (cmake/embed_lua.cmake) puts it in front of each
-- script whose header has the line "-- uses: int64". Line numbers in a Redis error from
-- such a script count these lines too (dlock_scripts.c says how many come first).

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

-- a + b, two 64-bit integer strings, exactly: the sum as a decimal string, or nil outside
-- the 64-bit range (where INCRBY would fail).
local function int64_add(a, b)
    -- The usual case, counts far below 10^15: with at most 15 characters each, both and
    -- their sum (below 2 * 10^15 < 2^53) are exact as Lua numbers, and the string work
    -- below (which doubled a semaphore script's time) is not needed.
    if #a <= 15 and #b <= 15 then
        return string.format('%d', tonumber(a) + tonumber(b))
    end
    local a_high, a_low = int64_halves(a)
    local b_high, b_low = int64_halves(b)
    local high, low = a_high + b_high, a_low + b_low
    local carry = math.floor(low / 1e9) -- low into 0 .. 10^9 - 1
    high, low = high + carry, low - carry * 1e9
    if high < 0 and low > 0 then -- low takes the sign of high
        high, low = high + 1, low - 1e9
    end
    local sum = high == 0 and string.format('%d', low) or
                    string.format('%d%09d', high, math.abs(low))
    if int64_halves(sum) then
        return sum
    end
    return nil
end

-- A 64-bit integer string as a reply: an integer where a Lua number (a double) holds it
-- exactly, below 2^53 = 9007199254740992, else the decimal string (the C side reads both).
local function int64_reply(s)
    if #s <= 15 or math.abs(int64_halves(s)) < 9007199 then
        return tonumber(s)
    end
    return s
end

-- The error that refuses a call because key holds value, a string that is not a 64-bit
-- integer where what (e.g. 'a fencing token') belongs. The value is shown cut to 40 bytes,
-- each byte that is not printable ASCII as '?'.
local function int64_refusal(key, value, what)
    return redis.error_reply(string.format('WRONGTYPE %s holds "%s", not %s (a 64-bit integer)',
        key, (string.gsub(string.sub(value, 1, 40), '[^%w%p ]', '?')), what))
end
