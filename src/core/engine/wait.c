/* SPDX-License-Identifier: MIT */
/* wait.c — the waiting engine: how every blocking acquire of every primitive waits.
 *
 *   attempt ──obtained──────────────────────────────────────────────> done(OK)
 *      │busy
 *      ├─ deadline passed ──────────────────────────────────────────> done(ETIMEDOUT)
 *      ├─ join the channel's queue (subscribe once per channel per client)
 *      ├─ no confirmed subscription when the attempt went out, or an event since ─> attempt
 *      └─ sleep until: a message wakes it, the hint (e.g. the holder's TTL) or the
 *         deadline runs out, the subscription is (re)confirmed ─────> attempt
 *
 * Nothing polls: a waiter sends an attempt only at its start, once after its subscription
 * is confirmed, and then when woken or when its hint says the object may have freed
 * itself. Every wait is bounded by the hint, so a lost message costs one hint, not a hang.
 *
 * Waiters of one client on one channel share a queue (one listener, one SUBSCRIBE). A
 * message wakes as many sleeping waiters, in arrival order, as the primitive's wake_count
 * says (a freed lock wakes one; a write unlock wakes all), so a release does not set off a
 * herd inside the process. A woken waiter that leaves without using its wake (timed out,
 * canceled) hands it to the next sleeper.
 *
 * Lost wake-ups are ruled out by an event count per queue: a waiter records it when its
 * attempt goes out, and if any message or (re)subscription happened before the "busy"
 * answer is in, it attempts again instead of sleeping. Redis writes a PUBLISH caused by a
 * release to the subscriber connection after it answered every command it ran before that
 * release, so a message not yet seen when "busy" arrives is still on its way to a waiter
 * that is by then in the queue.
 *
 * Turns (a lock's hand-off, release.lua): pub/sub is a broadcast, so a release would wake a
 * waiter in every client. When the object names, on the queue's turn channel, the owner
 * whose turn the next message is, the client of that owner wakes that owner's waiter alone
 * (ops->named) and every other client lets the message wake nobody: one waiter answers the
 * release, across processes as within one. (A turn of this client's owner that waits here
 * no longer wakes as a message without a turn does.) Why the next
 * message on the channel is the one the turn is about: the object publishes the turn and
 * then the message from one script, so a subscriber of both gets them back to back on its
 * subscriber connection; and a turn read while the channel is confirmed (no UNSUBSCRIBE
 * sent since) was published while the channel was subscribed, so the message follows it.
 * (Read while the channel is not confirmed, a turn is ignored: the message, if it comes,
 * wakes as ever.) Should the named waiter never take its turn (it died, or left), the
 * promise lapses within ops->turn_ms; so a message let pass becomes a wake turn_ms later
 * unless a message that wakes a waiter here or a (re)subscription comes first. A turn may
 * instead be a grant, the owner field followed by a space and what ops->granted reads: the
 * object handed to that owner's waiter by the release itself (the lock's release gives the
 * lock to its first waiter inside its script), with no message after it. A sleeping waiter
 * that takes it ends its wait there, with no attempt of its own; every other client lets
 * it wake nobody and looks again turn_ms later, unless a message comes first. A turn
 * channel the server refuses is not asked for again by this client: every message then
 * wakes all its waiters on the queue, since which of them was named is unknown.
 *
 * A subscription the server refuses (the user's ACL lacks the channel) ends every wait on
 * the queue with DLOCK_ENOPERM at once, as the next waiter to join it: without messages a
 * wait could only poll until its deadline. A waiter whose attempt is in flight ends when the
 * attempt answers "busy" (it may also have got the object).
 *
 * A wait with no channel (NULL: an object that publishes nothing, the spin lock) joins no
 * queue and subscribes to nothing: after each "busy" it sleeps until its hint (the
 * primitive's delay before the next attempt, its backoff) or its deadline, whichever comes
 * first, then attempts again; without a hint it looks again every DLOCK__RECHECK_MS. Such
 * waiters are kept on one list of the client, so that closing the client ends them too. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* The shortest sleep after a "busy" (see sleep_until_woken). */
#define MIN_SLEEP_MS 1

enum waiter_state { W_IDLE, W_TRYING, W_SUBSCRIBING, W_SLEEPING, W_DONE };

typedef struct wait_queue {
    dlock_client *client;
    char *channel;
    dlock__listener listener;
    dlock__listener turn_listener; /* on turn_channel, if any */
    char *turn_channel;
    /* The next message's turn, read on turn_channel: pending, whether it names one of this
     * client's owners, and the waiter it names if that waiter is in this queue. */
    bool turn_pending, turn_ours;
    dlock__waiter *turn_named;
    dlock__timer turn_lapse; /* a message let pass wakes as it would have, this late */
    int64_t turn_ms;
    dlock__waiter *head, *tail;
    size_t count;
    uint64_t events; /* messages, kicks and (re)confirmations seen */
    int dispatching; /* > 0 while the queue walks its waiters: do not free it */
    int error;       /* DLOCK_ENOPERM once the subscription was refused, else DLOCK_OK */
} wait_queue;

static void attempt(dlock__waiter *w);
static void finish(dlock__waiter *w, int status);

static wait_queue *queue_of(dlock__waiter *w) {
    return w->queue;
}

static void queue_free(wait_queue *q) {
    dlock__map_remove(&DLOCK__ENGINE(q->client)->waits.queues, q->channel);
    dlock__timer_stop(&DLOCK__NET(q->client)->sched, &q->turn_lapse);
    if (q->turn_channel)
        dlock__unlisten(q->client, &q->turn_listener);
    dlock__unlisten(q->client, &q->listener);
    dlock__free(q->turn_channel);
    dlock__free(q->channel);
    dlock__free(q);
}

/* The pending turn, if any, is used up. */
static void turn_forget(wait_queue *q) {
    q->turn_pending = false;
    q->turn_named = NULL;
}

/* A message, or the subscription (re)confirmed: whatever turn was pending is settled. */
static void turn_settled(wait_queue *q) {
    turn_forget(q);
    dlock__timer_stop(&DLOCK__NET(q->client)->sched, &q->turn_lapse);
}

static void queue_release_if_empty(wait_queue *q) {
    if (q->count == 0 && q->dispatching == 0)
        queue_free(q);
}

/* A message wakes w: it attempts, holding the wake until it uses it or hands it on. Counted
 * before the attempt goes out (dlock_client_stats' wakes). */
static void wake_by_message(wait_queue *q, dlock__waiter *w) {
    w->woken = true;
    dlock__stat_add(q->client, DLOCK__STAT_WAKES, 1);
    attempt(w);
}

/* Wakes up to n (-1: all) sleeping waiters, oldest first. */
static void queue_wake(wait_queue *q, int n) {
    q->events++;
    q->dispatching++;
    dlock__waiter *w = q->head;
    while (w && n != 0) {
        dlock__waiter *next = w->next;
        if (w->state == W_SLEEPING) {
            wake_by_message(q, w);
            if (n > 0)
                n--;
        }
        w = next;
    }
    q->dispatching--;
    queue_release_if_empty(q);
}

/* Every sleeping or subscribing waiter attempts again: the subscription is (again)
 * confirmed, and messages may have been missed while it was not. */
static void queue_refresh(wait_queue *q) {
    turn_settled(q);
    q->events++;
    q->dispatching++;
    dlock__waiter *w = q->head;
    while (w) {
        dlock__waiter *next = w->next;
        if (w->state == W_SLEEPING || w->state == W_SUBSCRIBING)
            attempt(w);
        w = next;
    }
    q->dispatching--;
    queue_release_if_empty(q);
}

/* The subscription was refused: every waiter not waiting for an attempt's answer ends
 * now; the others end with their answer (dlock__wait_result). */
static void queue_refuse(wait_queue *q, int err) {
    q->error = err;
    q->dispatching++;
    dlock__waiter *w = q->head;
    while (w) {
        dlock__waiter *next = w->next;
        if (w->state != W_TRYING)
            finish(w, w->canceled ? DLOCK_ECANCELED : err);
        w = next;
    }
    q->dispatching--;
    queue_release_if_empty(q);
}

static void on_queue_ready(dlock__listener *l) {
    wait_queue *q = DLOCK__CONTAINER_OF(l, wait_queue, listener);
    int err = dlock__listener_error(l);
    if (err != DLOCK_OK)
        queue_refuse(q, err);
    else
        queue_refresh(q);
}

/* Wakes the oldest sleepers whose needs fit in available, stopping at the first that does
 * not fit; waiters with an attempt in flight count against the supply too. */
static void queue_wake_supply(wait_queue *q, int64_t available) {
    q->events++;
    q->dispatching++;
    dlock__waiter *w = q->head;
    while (w) {
        dlock__waiter *next = w->next;
        int64_t need = w->ops->need(w);
        if (w->state == W_SLEEPING || w->state == W_TRYING) {
            if (need > available)
                break;
            available -= need;
            if (w->state == W_SLEEPING)
                wake_by_message(q, w);
        }
        w = next;
    }
    q->dispatching--;
    queue_release_if_empty(q);
}

/* The message a turn of another client's owner announced: nobody here looks, unless the
 * promise lapses first. The lapse counts from the first message let pass since one woke a
 * waiter here, not from the latest: however many releases name other clients' waiters,
 * one of this client's waiters looks again every turn_ms, which bounds what a waiter the
 * object lost track of (none should be) can be passed over. */
static void turn_spare(wait_queue *q) {
    turn_forget(q);
    dlock__stat_add(q->client, DLOCK__STAT_WAKES_SPARED, 1);
    if (!dlock__timer_active(&q->turn_lapse))
        dlock__timer_start(&DLOCK__NET(q->client)->sched, &q->turn_lapse, q->turn_ms);
}

/* The message a turn of w announced: w looks, and nobody else. One already looking looks
 * again if its attempt answers "busy" (the event below): it may have left before the
 * release. One subscribing looks once confirmed anyway. */
static void wake_named(wait_queue *q, dlock__waiter *w) {
    q->events++;
    if (w->state == W_SLEEPING) {
        q->dispatching++;
        wake_by_message(q, w);
        q->dispatching--;
        queue_release_if_empty(q);
    }
}

static void on_queue_message(dlock__listener *l, const char *msg, size_t len) {
    wait_queue *q = DLOCK__CONTAINER_OF(l, wait_queue, listener);
    bool turn = q->turn_pending, ours = q->turn_ours;
    dlock__waiter *named = q->turn_named;
    if (turn && !ours) {
        turn_spare(q);
        return;
    }
    turn_settled(q);
    if (named) {
        wake_named(q, named);
        return;
    }
    /* No turn, or a turn of an owner of this client that no longer waits here: as ever.
     * Every waiter of a queue belongs to the same kind of object: ask the first. */
    const dlock__wait_ops *ops = q->head ? q->head->ops : NULL;
    if (ops && ops->named && q->head->turn_channel && !q->turn_channel) {
        /* turns refused to this client: which of its waiters the object named is unknown,
         * so every one looks rather than the named one waiting out the promise's lapse */
        queue_wake(q, -1);
        return;
    }
    int64_t available;
    if (ops && ops->supply && ops->need && ops->supply(msg, len, &available)) {
        queue_wake_supply(q, available);
        return;
    }
    queue_wake(q, ops && ops->wake_count ? ops->wake_count(msg, len) : -1);
}

/* The turn lapsed: the message let pass wakes as a lock's "0" does. */
static void on_turn_lapse(dlock__timer *t, void *arg) {
    (void)t;
    wait_queue *q = arg;
    const dlock__wait_ops *ops = q->head ? q->head->ops : NULL;
    queue_wake(q, ops && ops->wake_count ? ops->wake_count("0", 1) : -1);
}

/* The waiter of this queue whose owner the turn names, or NULL. */
static dlock__waiter *turn_waiter(wait_queue *q, const char *msg, size_t len) {
    for (dlock__waiter *w = q->head; w; w = w->next)
        if (w->ops->named && w->ops->named(w, msg, len))
            return w;
    return NULL;
}

/* The named waiter w holds what the grant handed it: its wait ends, counted as a wake (the
 * one waiter the release woke). */
static void take_grant(wait_queue *q, dlock__waiter *w) {
    dlock__stat_add(q->client, DLOCK__STAT_WAKES, 1);
    q->dispatching++;
    finish(w, DLOCK_OK);
    q->dispatching--;
    queue_release_if_empty(q);
}

/* A grant (see turns above): no message follows it. The waiter it names takes it if asleep
 * (ops->granted), or else attempts (its attempt finds the object its own) now or after its
 * attempt in flight. A grant of another client's owner, or of an owner of this client that
 * no longer waits here, wakes nobody: the lapse looks again if the grant is never
 * confirmed (its heir died). Read whether or not the channel is confirmed: it announces no
 * message there. */
static void on_grant(wait_queue *q, const char *msg, size_t len) {
    dlock__waiter *w =
        dlock__owner_field_is_ours(q->client, msg, len) ? turn_waiter(q, msg, len) : NULL;
    if (!w)
        turn_spare(q);
    else if (w->state == W_SLEEPING && !w->canceled && w->ops->granted &&
             w->ops->granted(w, msg, len))
        take_grant(q, w);
    else
        wake_named(q, w);
}

/* A turn read while the channel is not confirmed is ignored (see turns above). A turn with a
 * space after the owner field is a grant. */
static void on_turn(dlock__listener *l, const char *msg, size_t len) {
    wait_queue *q = DLOCK__CONTAINER_OF(l, wait_queue, turn_listener);
    if (memchr(msg, ' ', len)) {
        on_grant(q, msg, len);
        return;
    }
    q->turn_pending = dlock__listener_ready(&q->listener);
    q->turn_ours = q->turn_pending && dlock__owner_field_is_ours(q->client, msg, len);
    q->turn_named = q->turn_ours ? turn_waiter(q, msg, len) : NULL;
}

/* The turn channel confirmed, or refused: refused, this client asks for none again (the
 * server's error was logged once by the router) and its waiters wake as without turns. */
static void on_turn_ready(dlock__listener *l) {
    wait_queue *q = DLOCK__CONTAINER_OF(l, wait_queue, turn_listener);
    if (dlock__listener_error(l) == DLOCK_OK)
        return;
    DLOCK__ENGINE(q->client)->waits.turns_refused = true;
    dlock__unlisten(q->client, l);
    dlock__free(q->turn_channel);
    q->turn_channel = NULL;
    queue_refresh(q); /* a grant to one of them would go unheard: they attempt, out of line now */
}

bool dlock__wait_turns_refused(const dlock_client *c) {
    return DLOCK__ENGINE(c)->waits.turns_refused;
}

/* q listens on the waiter's turn channel too (after its own channel: see turns above). */
static int listen_turns(wait_queue *q, const dlock__waiter *w) {
    if (!w->turn_channel || DLOCK__ENGINE(q->client)->waits.turns_refused)
        return DLOCK_OK;
    q->turn_channel = dlock__strdup(w->turn_channel);
    if (!q->turn_channel)
        return DLOCK_ENOMEM;
    q->turn_ms = w->ops->turn_ms;
    q->turn_listener.on_ready = on_turn_ready;
    q->turn_listener.on_message = on_turn;
    int rc = dlock__listen(q->client, q->turn_channel, &q->turn_listener);
    if (rc != DLOCK_OK) {
        dlock__free(q->turn_channel);
        q->turn_channel = NULL;
    }
    return rc;
}

static int join(dlock__waiter *w) {
    dlock_client *c = w->client;
    wait_queue *q = dlock__map_get(&DLOCK__ENGINE(c)->waits.queues, w->channel);
    if (!q) {
        q = dlock__calloc(1, sizeof(*q));
        if (!q)
            return DLOCK_ENOMEM;
        q->client = c;
        q->channel = dlock__strdup(w->channel);
        q->listener.on_ready = on_queue_ready;
        q->listener.on_message = on_queue_message;
        if (!q->channel || dlock__map_put(&DLOCK__ENGINE(c)->waits.queues, q->channel, q) != 0) {
            dlock__free(q->channel);
            dlock__free(q);
            return DLOCK_ENOMEM;
        }
        int rc = dlock__listen(c, q->channel, &q->listener);
        if (rc != DLOCK_OK) {
            dlock__map_remove(&DLOCK__ENGINE(c)->waits.queues, q->channel);
            dlock__free(q->channel);
            dlock__free(q);
            return rc;
        }
        q->error = dlock__listener_error(&q->listener); /* a channel refused already */
        dlock__timer_init(&q->turn_lapse, on_turn_lapse, q);
        rc = listen_turns(q, w);
        if (rc != DLOCK_OK) {
            queue_free(q);
            return rc;
        }
    }
    w->queue = q;
    w->prev = q->tail;
    w->next = NULL;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    q->count++;
    return DLOCK_OK;
}

static void leave(dlock__waiter *w) {
    wait_queue *q = queue_of(w);
    if (!q)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    q->count--;
    if (q->turn_named == w)
        q->turn_named = NULL; /* its turn's message wakes as a turn of nobody here */
    w->prev = w->next = NULL;
    w->queue = NULL;
    if (w->woken) {
        /* It leaves without having used its wake: the next sleeper gets it. */
        w->woken = false;
        q->dispatching++;
        for (dlock__waiter *o = q->head; o; o = o->next) {
            if (o->state == W_SLEEPING) {
                o->woken = true;
                attempt(o);
                break;
            }
        }
        q->dispatching--;
    }
    queue_release_if_empty(q);
}

/* The waiter stops waiting without the object. For an object handed out in amounts it
 * may have been the larger request that a message stopped at, keeping smaller ones
 * asleep (queue_wake_supply): then the next sleeper looks now, not at its own hint. */
static void give_up(dlock__waiter *w, int status) {
    if (w->queue && w->ops->supply && w->ops->need)
        w->woken = true; /* leave() hands it on */
    finish(w, status);
}

static void on_timer(dlock__timer *t, void *arg) {
    (void)t;
    dlock__waiter *w = arg;
    if (w->canceled)
        give_up(w, DLOCK_ECANCELED);
    else
        attempt(w);
}

/* now + ms, saturated: a hint may be any lease another client set (up to INT64_MAX). */
static int64_t due_after(int64_t now, int64_t ms) {
    return ms > INT64_MAX - now ? INT64_MAX : now + ms;
}

static void sleep_until_woken(dlock__waiter *w, enum waiter_state state, int64_t hint_ms) {
    w->state = state;
    int64_t due = w->deadline_ms;
    if (hint_ms >= 0) {
        /* never at once: a "busy" that says "free now" (a lease in its last ms, a holder
         * gone) is looked at again after the shortest sleep, so no server answer, however
         * often repeated, makes a wait send attempts back to back */
        int64_t hint_due =
            due_after(dlock__now_ms(), hint_ms > MIN_SLEEP_MS ? hint_ms : MIN_SLEEP_MS);
        if (hint_due < due)
            due = hint_due;
    }
    if (due != INT64_MAX)
        dlock__timer_start_at(&DLOCK__NET(w->client)->sched, &w->timer, due);
}

static void attempt(dlock__waiter *w) {
    dlock__timer_stop(&DLOCK__NET(w->client)->sched, &w->timer);
    wait_queue *q = w->queue ? queue_of(w)
                    : w->channel
                        ? dlock__map_get(&DLOCK__ENGINE(w->client)->waits.queues, w->channel)
                        : NULL;
    w->seen_seq = q && dlock__listener_ready(&q->listener) ? q->events + 1 : 0;
    w->state = W_TRYING;
    w->ops->attempt(w);
}

static void handle_unlink(dlock__waiter *w) {
    dlock__handle *h = w->handle;
    if (!h)
        return;
    if (w->handle_prev)
        w->handle_prev->handle_next = w->handle_next;
    else
        h->waiters = w->handle_next;
    if (w->handle_next)
        w->handle_next->handle_prev = w->handle_prev;
    w->handle_prev = w->handle_next = NULL;
    w->handle = NULL;
}

/* A wait with no channel is on the client's list of them from its start to its end. */
static void no_channel_link(dlock__waiter *w) {
    dlock__waits *ws = &DLOCK__ENGINE(w->client)->waits;
    w->prev = NULL;
    w->next = ws->no_channel;
    if (ws->no_channel)
        ws->no_channel->prev = w;
    ws->no_channel = w;
}

static void no_channel_unlink(dlock__waiter *w) {
    dlock__waits *ws = &DLOCK__ENGINE(w->client)->waits;
    if (w->prev)
        w->prev->next = w->next;
    else
        ws->no_channel = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

static void finish(dlock__waiter *w, int status) {
    const char *kind = w->handle ? w->handle->kind : NULL; /* for the stats: unlink forgets it */
    dlock__timer_stop(&DLOCK__NET(w->client)->sched, &w->timer);
    handle_unlink(w);
    if (!w->channel)
        no_channel_unlink(w);
    if (status == DLOCK_OK)
        w->woken = false; /* the wake was used */
    leave(w);
    w->state = W_DONE;
    dlock__stat_add(w->client, DLOCK__STAT_WAITS, -1);
    dlock__stat_wait_ended(w->client, kind, status, dlock__now_us() - w->started_us);
    w->ops->done(w, status);
}

void dlock__wait_start_on(dlock__waiter *w, dlock__handle *h, const dlock__wait_ops *ops,
                          const char *channel, const char *turn_channel, int64_t wait_ms) {
    memset(w, 0, sizeof(*w));
    w->handle = h;
    w->handle_next = h->waiters;
    if (h->waiters)
        h->waiters->handle_prev = w;
    h->waiters = w;
    w->ops = ops;
    w->client = h->client;
    w->channel = channel;
    w->turn_channel = channel ? turn_channel : NULL;
    w->deadline_ms = dlock__deadline_ms(wait_ms);
    w->started_us = dlock__now_us();
    dlock__timer_init(&w->timer, on_timer, w);
    if (!channel)
        no_channel_link(w);
    dlock__stat_add(w->client, DLOCK__STAT_WAITS, 1);
    attempt(w);
}

void dlock__wait_result(dlock__waiter *w, int status, int64_t hint_ms) {
    if (status != DLOCK__BUSY) {
        finish(w, status);
        return;
    }
    /* A waiter that leaves now hands its wake (if it has one) to the next sleeper. */
    if (w->canceled) {
        give_up(w, DLOCK_ECANCELED);
        return;
    }
    if (dlock__now_ms() >= w->deadline_ms) {
        give_up(w, DLOCK_ETIMEDOUT);
        return;
    }
    w->woken = false; /* it stays: its wake was used up, someone else got in first */
    if (!w->channel) {
        sleep_until_woken(w, W_SLEEPING, hint_ms >= 0 ? hint_ms : DLOCK__RECHECK_MS);
        return;
    }
    if (!w->queue) {
        int rc = join(w);
        if (rc != DLOCK_OK) {
            finish(w, rc);
            return;
        }
    }
    wait_queue *q = queue_of(w);
    if (q->error != DLOCK_OK) {
        finish(w, q->error);
        return;
    }
    if (!dlock__listener_ready(&q->listener)) {
        /* attempt again once the subscription is confirmed, or at the hint */
        sleep_until_woken(w, W_SUBSCRIBING, hint_ms);
        return;
    }
    if (w->seen_seq != q->events + 1) {
        /* the subscription was not confirmed when this attempt left, or an event came
         * since: the object may be free already */
        attempt(w);
        return;
    }
    sleep_until_woken(w, W_SLEEPING, hint_ms);
}

void dlock__wait_cancel(dlock__waiter *w) {
    if (w->state == W_DONE || w->canceled)
        return;
    w->canceled = true;
    if (w->state != W_TRYING) /* an attempt in flight settles it when it answers */
        dlock__timer_start(&DLOCK__NET(w->client)->sched, &w->timer, 0);
}

void dlock__wait_kick(dlock_client *c, const char *channel, int n) {
    wait_queue *q = channel ? dlock__map_get(&DLOCK__ENGINE(c)->waits.queues, channel) : NULL;
    if (q)
        queue_wake(q, n);
}

void dlock__waits_init(dlock__waits *ws) {
    dlock__map_init(&ws->queues);
    ws->no_channel = NULL;
    ws->turns_refused = false;
}

static void collect_queue(const char *key, void *value, void *arg) {
    (void)key;
    wait_queue ***cursor = arg;
    *(*cursor)++ = value;
}

void dlock__waits_close(dlock__waits *ws, dlock_client *c) {
    (void)c;
    size_t n = ws->queues.count;
    wait_queue **all = n ? dlock__malloc(sizeof(*all) * n) : NULL, **cursor = all;
    if (all) {
        dlock__map_each(&ws->queues, collect_queue, &cursor);
        for (size_t i = 0; i < n; i++) {
            wait_queue *q = all[i];
            q->dispatching++;
            while (q->head) {
                dlock__waiter *w = q->head;
                w->woken = false;
                finish(w, DLOCK_ECANCELED);
            }
            q->dispatching--;
            queue_release_if_empty(q);
        }
        dlock__free(all);
    }
    dlock__map_free(&ws->queues);
    while (ws->no_channel)
        finish(ws->no_channel, DLOCK_ECANCELED);
}

bool dlock__message_count(const char *msg, size_t len, int64_t *available) {
    char buf[24];
    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, msg, len);
    buf[len] = '\0';
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (*end != '\0')
        return false;
    *available = v;
    return true;
}

/* The clock counts whole ms, so "now" is up to 1 ms behind the true time: a deadline of
 * now + wait_ms could come up to 1 ms before wait_ms had passed, and a caller that asked for
 * 200 ms could be told DLOCK_ETIMEDOUT after 199.7. A wait is never cut short: its deadline
 * is a ms further (wait 0 stays one attempt, whatever the clock says). */
int64_t dlock__deadline_ms(int64_t wait_ms) {
    int64_t now = dlock__now_ms();
    if (wait_ms < 0)
        return INT64_MAX; /* for ever */
    if (wait_ms == 0)
        return now;
    return due_after(now + 1, wait_ms); /* so far off that it is the same */
}
