-- SPDX-License-Identifier: MIT
-- release.lua — give back one hold; the last one hands the lock to the first waiter in line,
-- or frees it and wakes its waiters.
--
-- KEYS[1]  [stored] the lock hash N
-- KEYS[2]  [unstored] its channel redisson_lock__channel:{N}
-- KEYS[3]  [unstored] optional, passed when others waited in line as the holds were taken
--          (the acquire's reply 2): the hand-off marker {N}:handoff (acquire.lua). Without
--          it the release names nobody and costs what Redisson's does: every key and
--          argument of a script costs the server time in every call. A Cluster client
--          passes it undeclared, with ARGV[6] (acquire.lua says why).
-- KEYS[4]  [unstored] with KEYS[3]: the hand-off queue {N}:handoff_queue (acquire.lua)
-- KEYS[5]  [unstored] with KEYS[3]: the turn channel dlock_lock_turn__channel:{N} (dlock's own)
-- KEYS[6]  [stored] optional, with KEYS[3], never in a Cluster: the token counter
--          redisson_lock_token:{N}, whether the handle is fenced or not (the heir may be): the
--          release hands the lock over (the grant, below); it rises for the heir if it exists
-- ARGV[1]  the lease to keep when holds remain, ms
-- ARGV[2]  the owner field, <client-id>:<owner>
-- ARGV[3]  the hold count the client believes this owner has (0: it does not know)
-- ARGV[4]  with KEYS[6]: the grant's lease, ms: how long the lock is the first waiter's
--          before that waiter's client confirms it with its own lease. Else with KEYS[3]:
--          the marker's lifetime, ms
-- ARGV[5]  with KEYS[3]: the bound, ms: a first waiter that joined the queue this long
--          ago or longer is promised the lock
-- ARGV[6]  optional, a Cluster client's with KEYS[3]: the probe {N}:handoff_probe
--          (acquire.lua): while N's slot is being migrated the release names nobody
-- Reply    -1 the owner holds nothing; otherwise the holds left (0: the lock was handed on,
--          or deleted and "0" published, Redisson's unlock message)
--
-- The grant: the last release of holds taken while others waited in line hands the lock,
-- inside this script, to the queue's first waiter (the heir): N becomes the heir's hash,
-- one hold, with the grant's short lease; the heir leaves the queue, and a fenced lock's
-- token counter, if the name has one, rises for it (a fenced heir of a name without one
-- takes its token with its own attempt, acquire.lua). The release publishes the grant on
-- the turn channel (and no "0": the lock is not free), "<heir's field> <1|2> <token> <joined> <now>": 2 when others still wait
-- in line, token 0 without a counter, joined the heir's place in the queue (its join time in
-- µs, as acquire.lua's busy reply gives it to the heir), so that a grant heard late, after
-- the heir has lost it and joined again, is told apart, and now the server's clock (µs):
-- from now - joined the heir's client tells how long after its joining attempt the grant's
-- lease began, whatever the message's delay. The heir's client holds the lock once
-- it has heard the grant, with no command of its own, and then sets the heir's own lease
-- (src/lock/engine_grant.c); every other dlock client lets it wake none of its waiters
-- (src/core/engine/wait.c, turns). A heir that died holds the lock for the grant's lease at most.
-- Redisson's clients never hear the grant, and their waiters take only a free lock: so a
-- release grants nothing while one may wait. A Redisson waiter is subscribed to KEYS[2]
-- alone; a dlock client with waiters on N to both KEYS[2] and KEYS[5] (once each, however
-- many waiters). So while KEYS[2] has more subscribers than KEYS[5] (PUBSUB NUMSUB, which
-- counts this server's subscribers), some are not dlock's, and the release frees the lock
-- and publishes "0" as Redisson's does: the Redisson waiter races for it as it would
-- against Redisson's own clients, and without a grant every dlock waiter wakes too. The
-- count errs only towards freeing (a dlock client whose turn subscription is not yet
-- confirmed, or was refused, counts as another), which costs a hand-off, never a waiter.
--
-- The writes of a grant come first, and only what cannot fail follows them: the token
-- counter's rise (if the name has one), then the heir's hold, then the grant's PUBLISH, each
-- through pcall. A refused one (a server out of memory, a turn channel the user may not
-- publish to) is no grant, never a failed release: the heir's hold is taken back and the
-- release frees the lock as without a line; a token that rose for nobody leaves a gap,
-- which fencing allows. So is a queue or turn channel out of reach or of another type, and
-- a token past 15 digits (exact as a double only that far) or not a counter (the heir's own
-- attempt then takes the token, or says why it cannot). A grant nobody hears stands: its
-- heir, if alive, is still subscribing, and attempts once subscribed, which finds the lock
-- its own; if dead, the grant lapses.
--
-- The turn (a Cluster's, which passes no KEYS[6]): the last release names one waiter, the one the marker promises the lock to
-- or else the queue's first, and publishes its owner field on the turn channel just
-- before "0". A dlock client reads both on its one subscriber connection, in that order:
-- the named waiter's client wakes that waiter alone, every other client lets the "0" wake
-- none of its own (src/core/engine/wait.c, turns). So one waiter answers a release, not one in
-- every process. A first waiter that has waited past the bound leaves the queue for the
-- marker: the lock is promised to it and newcomers are refused until it comes (or the
-- marker's lifetime runs out); one that has not may find the lock taken again by a
-- newcomer, and stays first. Redisson's clients never hear the turn; their "0" is as
-- ever. Marker, queue and turn channel through pcall: one out of reach or of another
-- type, or a turn channel the user may not publish to, is no turn, never a failed
-- release.
--
-- Holds beyond what the client believes are orphans of acquires it reported failed: they
-- are dropped, so the owner's last release frees the lock.
--
-- Applied once even when sent twice: if the owner has one hold fewer than the client
-- believes, this is a resend of a release whose reply was lost; it changes nothing. (The
-- resend of a last release finds nothing: the client tells that case apart by knowing it
-- sent the command twice.)
local holds = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not holds then
    return -1
end
local believed = tonumber(ARGV[3])
if believed > 0 and holds == believed - 1 then
    return holds
end
if believed > 0 and holds > believed then
    -- holds the client never learned of: acquires whose reply was lost and that the
    -- caller was told failed. They go with this release instead of outliving it.
    holds = believed
end
holds = holds - 1
if holds > 0 then
    redis.call('hset', KEYS[1], ARGV[2], holds)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return holds
end
local heir, grant = false, nil
if KEYS[6] then
    local line = redis.pcall('zrange', KEYS[4], 0, 1, 'withscores')
    heir = type(line) == 'table' and line[1] ~= ARGV[2] and line[1] or false
    -- A Redisson waiter takes only a free lock: while one listens, hand the lock to nobody.
    -- It listens on KEYS[2] alone, every dlock client with waiters on KEYS[2] and KEYS[5].
    if heir then
        local all = redis.pcall('pubsub', 'numsub', KEYS[2])
        local dlocks = redis.pcall('pubsub', 'numsub', KEYS[5])
        local counted = type(all) == 'table' and type(dlocks) == 'table'
        heir = counted and all[2] <= dlocks[2] and heir
    end
    local token = heir and redis.pcall('get', KEYS[6])
    if token then -- a fenced lock's counter (none: a plain lock's name, token 0)
        local counter = type(token) == 'string' and #token <= 15 and
                            (token == '0' or string.find(token, '^%-?[1-9]%d*$'))
        local risen = counter and redis.pcall('incr', KEYS[6])
        token = type(risen) == 'number' and string.format('%d', risen)
        heir = token and heir
    else
        token = '0'
    end
    if heir and type(redis.pcall('hset', KEYS[1], heir, 1)) ~= 'number' then
        heir = false
    end
    if heir then
        local joined = math.floor(tonumber(line[2]) * 1000 + 0.5)
        local now = redis.call('time')
        grant = heir .. ' ' .. (line[3] and 2 or 1) .. ' ' .. token .. ' ' ..
                    string.format('%d', joined) .. ' ' .. now[1] .. string.format('%06d', now[2])
        if type(redis.pcall('publish', KEYS[5], grant)) ~= 'number' then
            redis.call('hdel', KEYS[1], heir)
            heir = false
        end
    end
end
if heir then
    redis.call('hdel', KEYS[1], ARGV[2])
    redis.call('pexpire', KEYS[1], ARGV[4])
    redis.pcall('zrem', KEYS[4], heir)
    return 0
end
-- what to publish first: a refused PUBLISH must leave the lock as it was (see acquire.lua)
local turn, promise = false, false
if KEYS[3] and not KEYS[6] and not (ARGV[6] and type(redis.pcall('exists', KEYS[4], ARGV[6])) == 'table') then
    turn = redis.pcall('get', KEYS[3])
    if type(turn) ~= 'string' then -- no promise standing: the queue's first, if any
        local first = turn == false and redis.pcall('zrange', KEYS[4], 0, 0, 'withscores')
        turn = type(first) == 'table' and first[1] or false
        if turn then
            local t = redis.call('time')
            local waited = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000 - tonumber(first[2])
            promise = waited >= tonumber(ARGV[5])
        end
    end
end
if turn then
    redis.pcall('publish', KEYS[5], turn)
end
redis.call('publish', KEYS[2], 0)
if promise then
    redis.pcall('zrem', KEYS[4], turn)
    redis.pcall('set', KEYS[3], turn, 'px', ARGV[4])
end
redis.call('del', KEYS[1])
return 0
