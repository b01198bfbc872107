/* SPDX-License-Identifier: MIT */
/* test_cxx.cpp — the C++ face (include/dlock.hpp) against a real redis-server: the standard
 * library's guards on dlock's locks, mutual exclusion between threads and between processes
 * through std::scoped_lock, timed waits, errors as std::error_code and std::system_error,
 * and moves.
 *
 * A plain C++17 program (no cmocka): each test_* function checks with CHECK, which prints
 * what failed and exits 1 (the fixture's atexit handler stops the server). A SIGALRM
 * watchdog turns a hang into a failure with a message. Timing bounds are lower bounds (a
 * wait took at least what it was given) and generous upper bounds against a hang. */
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "dlock.hpp"

extern "C" {
#include "checker.h"
#include "redis_fixture.h"
}

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

redis_fixture *server;
std::string url;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

/* ec must be `want`; on failure says what it was instead. */
#define CHECK_EC(ec, want)                                                                         \
    do {                                                                                           \
        const std::error_code got_ = (ec);                                                         \
        if (got_ != (want)) {                                                                      \
            std::fprintf(stderr, "%s:%d: %s is %s:%d (%s), expected %s\n", __FILE__, __LINE__,     \
                         #ec, got_.category().name(), got_.value(), got_.message().c_str(),        \
                         #want);                                                                   \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

/* Runs `body`, which must throw std::system_error with code `want`. */
template <class Body> void check_throws(Body body, dlock::errc want, const char *what) {
    try {
        body();
    } catch (const std::system_error &e) {
        if (e.code() != want || std::strcmp(e.code().category().name(), "dlock") != 0) {
            std::fprintf(stderr, "%s: threw %s (%s), expected dlock code %d\n", what, e.what(),
                         e.code().category().name(), static_cast<int>(want));
            std::exit(1);
        }
        return;
    }
    std::fprintf(stderr, "%s: did not throw\n", what);
    std::exit(1);
}

long long redis_int(const char *fmt, const char *arg) {
    return redis_fixture_int(server, fmt, arg);
}

/* Waits until pred() holds, for at most `bound`; says whether it did. */
template <class Pred> bool eventually(Pred pred, steady::duration bound) {
    const auto deadline = steady::now() + bound;
    while (!pred()) {
        if (steady::now() > deadline)
            return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

void on_hang(int) {
    static const char msg[] = "TEST HANG: test_cxx did not finish within its budget\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    redis_fixture_kill_all();
    _exit(1);
}

/* ---- errors ------------------------------------------------------------------------------- */

/* Every code of error.h has its errc name: a code added to the C library fails this until
 * dlock.hpp names it. */
constexpr bool errc_names(int code) {
    switch (static_cast<dlock::errc>(code)) {
    case dlock::errc::invalid:
    case dlock::errc::out_of_memory:
    case dlock::errc::timed_out:
    case dlock::errc::not_owner:
    case dlock::errc::lost:
    case dlock::errc::connection:
    case dlock::errc::auth:
    case dlock::errc::redis:
    case dlock::errc::canceled:
    case dlock::errc::closed:
    case dlock::errc::busy:
    case dlock::errc::would_deadlock:
    case dlock::errc::no_permission:
    case dlock::errc::no_space:
    case dlock::errc::max_hold_reached:
        return true;
    }
    return false;
}
#define NAMED_IN_ERRC(name, value, text)                                                           \
    static_assert(errc_names(DLOCK_##name), "dlock::errc has no name for DLOCK_" #name);
DLOCK_ERRNO_MAP(NAMED_IN_ERRC)
#undef NAMED_IN_ERRC

void test_error_category() {
    const int codes[] = {
#define CODE_OF(name, value, text) DLOCK_##name,
        DLOCK_ERRNO_MAP(CODE_OF)
#undef CODE_OF
    };
    for (int code : codes) {
        const std::error_code ec = dlock::make_error_code(static_cast<dlock::errc>(code));
        CHECK(ec.value() == code);
        CHECK(std::string(ec.category().name()) == "dlock");
        CHECK(ec.message() == dlock_strerror(code));
        CHECK(&ec.category() == &dlock::error_category());
    }
    const std::error_code timed_out = dlock::errc::timed_out; /* is_error_code_enum */
    CHECK(timed_out == std::errc::timed_out);
    CHECK(timed_out != std::errc::invalid_argument);
    /* docs/cpp.md's table: the codes equal to a std::errc, and those equal to none. */
    const std::pair<dlock::errc, std::errc> portable[] = {
        {dlock::errc::invalid, std::errc::invalid_argument},
        {dlock::errc::out_of_memory, std::errc::not_enough_memory},
        {dlock::errc::timed_out, std::errc::timed_out},
        {dlock::errc::not_owner, std::errc::operation_not_permitted},
        {dlock::errc::canceled, std::errc::operation_canceled},
        {dlock::errc::busy, std::errc::device_or_resource_busy},
        {dlock::errc::would_deadlock, std::errc::resource_deadlock_would_occur},
        {dlock::errc::no_permission, std::errc::permission_denied},
        {dlock::errc::no_space, std::errc::no_buffer_space},
    };
    for (const auto &[code, condition] : portable) {
        CHECK(std::error_code(code) == condition);
        CHECK(std::error_code(code).default_error_condition() == condition);
    }
    const dlock::errc own[] = {dlock::errc::lost, dlock::errc::connection, dlock::errc::auth,
                               dlock::errc::redis, dlock::errc::closed};
    for (dlock::errc code : own) {
        const std::error_condition condition = std::error_code(code).default_error_condition();
        CHECK(&condition.category() == &dlock::error_category());
        CHECK(condition.value() == static_cast<int>(code));
    }
}

/* Waits are rounded up to whole ms, plus the 1 ms the C library's whole-ms deadlines may
 * cut short: a short wait never becomes a single attempt, and no wait ends early. */
void test_wait_rounding() {
    using dlock::detail::wait_ms;
    CHECK(wait_ms(1us) == 2);
    CHECK(wait_ms(1ns) == 2);
    CHECK(wait_ms(1ms) == 2);
    CHECK(wait_ms(1001us) == 3);
    CHECK(wait_ms(2s) == 2001);
    CHECK(wait_ms(std::chrono::duration<double>(0.0015)) == 3);
    CHECK(wait_ms(0ms) == 0);
    CHECK(wait_ms(-5s) == 0);
    CHECK(wait_ms(std::chrono::duration<double>(-1.0)) == 0);
    CHECK(wait_ms(std::chrono::hours::max()) == DLOCK_FOREVER);
    CHECK(wait_ms(std::chrono::nanoseconds::max()) == DLOCK_FOREVER);
    CHECK(wait_ms(std::chrono::milliseconds(DLOCK_MAX_TIME_MS - 1)) == DLOCK_MAX_TIME_MS);
    CHECK(wait_ms(std::chrono::milliseconds(DLOCK_MAX_TIME_MS)) == DLOCK_FOREVER);
    CHECK(wait_ms(steady::now() - 1s) == 0);
    CHECK(wait_ms(steady::time_point::min()) == 0);
    CHECK(wait_ms(steady::time_point::max()) == DLOCK_FOREVER);
    const std::int64_t ahead = wait_ms(std::chrono::system_clock::now() + 10s);
    CHECK(ahead > 9000 && ahead <= 10001);
}

void test_bad_input(dlock::client &c) {
    std::error_code ec;
    dlock::client bad_url("bogus://127.0.0.1", ec);
    CHECK_EC(ec, dlock::errc::invalid);
    CHECK(!bad_url);
    dlock::client nul_url(url + std::string("\0x", 2), ec);
    CHECK_EC(ec, dlock::errc::invalid);
    check_throws([] { dlock::client thrown("bogus://127.0.0.1"); }, dlock::errc::invalid,
                 "client from a bad URL");

    const long long keys_before = redis_fixture_int(server, "DBSIZE");
    dlock::reentrant_lock nameless(c, "", ec);
    CHECK_EC(ec, dlock::errc::invalid);
    CHECK(std::string(ec.category().name()) == "dlock");
    CHECK(!nameless && nameless.native_handle() == nullptr);
    dlock::fenced_lock nul_name(c, std::string("cxx:a\0b", 7), ec); /* would name "cxx:a" */
    CHECK_EC(ec, dlock::errc::invalid);
    dlock::rw_lock nul_rw(c, std::string("cxx:rw\0", 7), ec);
    CHECK_EC(ec, dlock::errc::invalid);
    CHECK(!nul_rw);
    dlock::semaphore nameless_semaphore(c, "", ec);
    CHECK_EC(ec, dlock::errc::invalid);
    dlock::latch nameless_latch(c, "", ec);
    CHECK_EC(ec, dlock::errc::invalid);
    check_throws([&] { dlock::fair_lock thrown(c, ""); }, dlock::errc::invalid,
                 "fair_lock with an empty name");
    check_throws([&] { dlock::spin_lock thrown(c, std::string("x\0y", 3)); }, dlock::errc::invalid,
                 "spin_lock with a NUL in its name");
    check_throws([&] { dlock::multi_lock thrown(dlock::members{}); }, dlock::errc::invalid,
                 "multi_lock of nothing");
    try {
        dlock::fair_lock thrown(c, "");
    } catch (const std::system_error &e) { /* the C call and the library's detail */
        CHECK(std::strstr(e.what(), "dlock_fairlock_new") != nullptr);
        CHECK(std::strstr(e.what(), "empty") != nullptr);
    }

    /* An empty object: every call is errc::invalid, its unlock() and destructor nothing. */
    dlock::spin_lock empty;
    empty.lock(ec);
    CHECK_EC(ec, dlock::errc::invalid);
    CHECK(!empty.try_lock_for(1s, ec));
    CHECK_EC(ec, dlock::errc::invalid);
    check_throws([&] { empty.lock(); }, dlock::errc::invalid, "lock() of an empty object");
    check_throws([&] { empty.try_lock(); }, dlock::errc::invalid, "try_lock() of an empty object");
    empty.unlock();

    /* A lease neither dlock::watchdog nor positive: refused before any I/O. */
    dlock::reentrant_lock leased(c, "cxx:bad-lease");
    leased.set_lease(0ms);
    CHECK(!leased.try_lock(ec));
    CHECK_EC(ec, dlock::errc::invalid);
    dlock::semaphore sem(c, "cxx:bad-sem");
    CHECK(!sem.try_acquire(-1, ec));
    CHECK_EC(ec, dlock::errc::invalid);
    CHECK(redis_fixture_int(server, "DBSIZE") == keys_before);
}

/* ---- the standard library's guards -------------------------------------------------------- */

void test_lock_guard_and_unique_lock(dlock::client &c) {
    dlock::reentrant_lock lock(c, "cxx:guard");
    {
        std::lock_guard<dlock::reentrant_lock> hold(lock);
        CHECK(lock.is_held());
        CHECK(lock.hold_count() == 1);
        CHECK(redis_int("EXISTS %s", "cxx:guard") == 1);
        { /* reentrant, as every kind */
            std::lock_guard<dlock::reentrant_lock> again(lock);
            CHECK(lock.hold_count() == 2);
        }
        CHECK(lock.hold_count() == 1);
    }
    CHECK(redis_int("EXISTS %s", "cxx:guard") == 0);

    std::unique_lock<dlock::reentrant_lock> later(lock, std::defer_lock);
    CHECK(!later.owns_lock());
    CHECK(later.try_lock_for(5s));
    CHECK(lock.is_held());
    later.unlock();
    CHECK(!lock.is_locked());
    std::unique_lock<dlock::reentrant_lock> tried(lock, std::try_to_lock);
    CHECK(tried.owns_lock());
    tried.unlock();
    CHECK(tried.try_lock_until(steady::now() + 5s));
    tried.unlock();
    CHECK(redis_int("EXISTS %s", "cxx:guard") == 0);

    /* The lease given by set_lease is the hold's lease in Redis. */
    lock.set_lease(60s);
    {
        std::lock_guard<dlock::reentrant_lock> hold(lock);
        const long long pttl = redis_int("PTTL %s", "cxx:guard");
        CHECK(pttl > 30000 && pttl <= 60000);
    }
}

void test_scoped_lock_and_tokens(dlock::client &c) {
    dlock::fenced_lock fenced(c, "cxx:fenced");
    dlock::fair_lock fair(c, "cxx:fair");
    std::uint64_t first = 0;
    {
        std::scoped_lock both(fenced, fair);
        CHECK(fenced.is_held() && fair.is_held());
        first = fenced.token();
        CHECK(first > 0);
    }
    CHECK(!fenced.is_locked() && !fair.is_locked());
    std::uint64_t second = 0;
    std::thread([&] {
        std::scoped_lock both(fair, fenced);
        second = fenced.token();
    }).join();
    CHECK(second > first);
    std::error_code ec;
    dlock::reentrant_lock plain(c, "cxx:plain");
    dlock::multi_lock composite({plain, fenced}, ec);
    CHECK_EC(ec, std::error_code());
    {
        std::lock_guard<dlock::multi_lock> all(composite);
        CHECK(plain.is_held() && fenced.is_held());
        CHECK(composite.token() > second);
    }
    CHECK(!plain.is_locked() && !fenced.is_locked());
}

void test_shared_lock(dlock::client &c) {
    dlock::rw_lock table(c, "cxx:table");
    {
        std::shared_lock<dlock::rw_lock> reading(table);
        bool second_reader = false;
        bool writer = true;
        std::thread([&] {
            std::shared_lock<dlock::rw_lock> also(table, std::try_to_lock);
            second_reader = also.owns_lock();
            writer = table.try_lock_for(300ms);
        }).join();
        CHECK(second_reader);
        CHECK(!writer);
        CHECK(table.read().is_locked());
    }
    CHECK(!table.read().is_locked());
    {
        std::unique_lock<dlock::rw_lock> writing(table);
        CHECK(table.write().is_held());
        bool reader = true;
        std::thread([&] {
            std::shared_lock<dlock::rw_lock> refused(table, 300ms);
            reader = refused.owns_lock();
        }).join();
        CHECK(!reader);
    }
    { /* the halves are lockables of their own */
        std::lock_guard<dlock::rw_lock::half> reading(table.read());
        CHECK(table.read().is_held());
        CHECK(!table.write().is_locked());
    }
    CHECK(!table.read().is_locked() && !table.write().is_locked());
}

/* ---- mutual exclusion --------------------------------------------------------------------- */

/* Worker `id` enters its section `rounds` times under std::scoped_lock on a and b, half of
 * the workers naming them in the other order (std::scoped_lock must not deadlock on it). */
void scoped_lock_worker(dlock::lockable &a, dlock::lockable &b, checker *k, int id, int rounds) {
    for (int i = 0; i < rounds; i++) {
        auto section = [&] {
            const long slot = checker_enter(k, id);
            std::this_thread::sleep_for(1ms);
            checker_exit(k, slot, 0);
        };
        try {
            if (id % 2 == 0) {
                std::scoped_lock both(a, b);
                section();
            } else {
                std::scoped_lock both(b, a);
                section();
            }
        } catch (const std::system_error &e) {
            checker_error(k, id, "%s", e.what());
        }
    }
    checker_finished(k, id);
}

void test_threads_exclude_each_other(dlock::client &c) {
    const int threads = 4;
    const int rounds = 15;
    checker *k = checker_new("cxx threads", threads, threads * rounds, false);
    dlock::reentrant_lock a(c, "cxx:threads:a");
    dlock::spin_lock b(c, "cxx:threads:b");
    std::vector<std::thread> workers;
    for (int id = 0; id < threads; id++)
        workers.emplace_back(scoped_lock_worker, std::ref(a), std::ref(b), k, id, rounds);
    for (std::thread &w : workers)
        w.join();
    const checker_report r = checker_check(k);
    CHECK(r.ok);
    CHECK(r.sections == threads * rounds);
    checker_free(k);
}

/* Two processes, two threads each, each process with its own client. */
void test_processes_exclude_each_other() {
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer cannot start threads in a child forked from a process with threads. */
    std::puts("skipped - two processes through std::scoped_lock (ThreadSanitizer)");
    return;
#endif
    const int processes = 2;
    const int threads = 2;
    const int rounds = 10;
    checker *k =
        checker_new("cxx processes", processes * threads, processes * threads * rounds, false);
    std::vector<pid_t> children;
    for (int p = 0; p < processes; p++) {
        const pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            int status = 0;
            {
                std::error_code ec;
                dlock::client own(url, ec);
                dlock::fair_lock a(own, "cxx:processes:a", ec);
                dlock::reentrant_lock b(own, "cxx:processes:b", ec);
                if (ec) {
                    checker_error(k, p * threads, "setup: %s", ec.message().c_str());
                    status = 1;
                } else {
                    std::vector<std::thread> workers;
                    for (int t = 0; t < threads; t++)
                        workers.emplace_back(scoped_lock_worker, std::ref(a), std::ref(b), k,
                                             p * threads + t, rounds);
                    for (std::thread &w : workers)
                        w.join();
                }
            }
            _exit(status);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    const checker_report r = checker_check(k);
    CHECK(r.ok);
    CHECK(r.sections == processes * threads * rounds);
    checker_free(k);
    std::puts("ok - two processes through std::scoped_lock");
}

/* ---- timed waits -------------------------------------------------------------------------- */

void test_timed_waits_give_up(dlock::client &c) {
    dlock::reentrant_lock lock(c, "cxx:held");
    std::lock_guard<dlock::reentrant_lock> hold(lock); /* this thread holds it throughout */
    std::thread([&] {
        CHECK(!lock.try_lock());
        CHECK(!lock.try_lock_for(1us)); /* rounded up to 1 ms, not a hang */

        auto start = steady::now();
        CHECK(!lock.try_lock_for(500ms));
        auto waited = steady::now() - start;
        CHECK(waited >= 500ms && waited < 60s);

        start = steady::now();
        CHECK(!lock.try_lock_until(steady::now() + 500ms));
        waited = steady::now() - start;
        CHECK(waited >= 500ms && waited < 60s);

        start = steady::now();
        CHECK(!lock.try_lock_until(std::chrono::system_clock::now() + 500ms));
        waited = steady::now() - start;
        CHECK(waited >= 499ms && waited < 60s); /* two clocks: 1 ms for their rates */

        std::error_code ec = dlock::errc::busy; /* cleared by a timeout */
        CHECK(!lock.try_lock_for(100ms, ec));
        CHECK_EC(ec, std::error_code());
        CHECK(!lock.is_held());
    }).join();
    CHECK(lock.hold_count() == 1);
}

/* ---- errors from Redis, thrown and returned ----------------------------------------------- */

void test_errors_throw_system_error(dlock::client &c) {
    redisReply *reply = redis_fixture_cmd(server, "SET %s %s", "cxx:string", "not a lock");
    CHECK(reply != nullptr);
    freeReplyObject(reply);
    dlock::reentrant_lock wrong(c, "cxx:string");
    std::error_code ec;
    wrong.lock(ec);
    CHECK_EC(ec, dlock::errc::redis);
    CHECK(!wrong.try_lock(ec)); /* not a timeout: false with the code */
    CHECK_EC(ec, dlock::errc::redis);
    check_throws([&] { wrong.lock(); }, dlock::errc::redis, "lock() on a string key");
    check_throws([&] { wrong.try_lock(); }, dlock::errc::redis, "try_lock() on a string key");
    check_throws([&] { wrong.try_lock_for(1s); }, dlock::errc::redis, "try_lock_for() on it");
    try {
        wrong.lock();
    } catch (const std::system_error &e) { /* the server's text rides along */
        CHECK(std::strstr(e.what(), "WRONGTYPE") != nullptr);
    }
    check_throws([&] { std::lock_guard<dlock::reentrant_lock> never(wrong); }, dlock::errc::redis,
                 "std::lock_guard on a string key");
    dlock::semaphore sem(c, "cxx:string");
    check_throws([&] { sem.acquire(); }, dlock::errc::redis, "semaphore acquire() on a string");
    dlock::latch latch(c, "cxx:string");
    check_throws([&] { latch.wait(); }, dlock::errc::redis, "latch wait() on a string");

    /* unlock() by a thread that holds nothing: the error_code says so, unlock() does not throw. */
    dlock::reentrant_lock lock(c, "cxx:not-mine");
    lock.unlock(ec);
    CHECK_EC(ec, dlock::errc::not_owner);
    lock.unlock();
    CHECK(redis_int("EXISTS %s", "cxx:not-mine") == 0);
}

/* ---- moves and the lost-lease callback ---------------------------------------------------- */

void test_moves() {
    dlock::client first(url);
    dlock::client second(std::move(first));
    CHECK(!first && first.native_handle() == nullptr);
    CHECK(second);
    std::error_code ec;
    first.ping(ec);
    CHECK_EC(ec, dlock::errc::invalid);
    second.ping();
    dlock::client third(url);
    third = std::move(second); /* frees third's own client */
    CHECK(!second && third);

    dlock::reentrant_lock kept;
    {
        dlock::reentrant_lock made(third, "cxx:moved");
        made.lock();
        kept = std::move(made);
        CHECK(!made && made.native_handle() == nullptr);
        made.unlock(ec);
        CHECK_EC(ec, dlock::errc::invalid);
    } /* the moved-from object goes here: nothing happens to the hold */
    CHECK(kept.hold_count() == 1);
    CHECK(redis_int("EXISTS %s", "cxx:moved") == 1);
    kept.unlock();
    CHECK(redis_int("EXISTS %s", "cxx:moved") == 0);
    kept = dlock::reentrant_lock(third, "cxx:moved:again"); /* frees the handle it had */
    CHECK(kept.name() == "cxx:moved:again");

    dlock::rw_lock rw_made(third, "cxx:moved:rw");
    dlock::rw_lock rw(std::move(rw_made));
    CHECK(!rw_made && rw);
    {
        std::shared_lock<dlock::rw_lock> reading(rw);
        CHECK(rw.read().is_held());
    }
    rw_made = std::move(rw);
    CHECK(rw_made && !rw);
    rw.lock(ec);
    CHECK_EC(ec, dlock::errc::invalid);

    dlock::semaphore sem_made(third, "cxx:moved:sem");
    dlock::semaphore sem(std::move(sem_made));
    CHECK(!sem_made && sem);
    CHECK(sem.try_set_permits(1));
    CHECK(!sem_made.try_set_permits(1, ec));
    CHECK_EC(ec, dlock::errc::invalid);

    dlock::latch latch_made(third, "cxx:moved:latch");
    dlock::latch latch(std::move(latch_made));
    CHECK(!latch_made && latch);
    CHECK(latch.try_wait()); /* never set: at zero */
}

/* The lost-lease callback as a std::function, which moves with its lock. */
void test_lost_callback() {
    dlock_options o = dlock::options();
    o.url = url.c_str();
    o.watchdog_ms = 9000; /* renewed every 3 s: the deletion is seen within seconds, and a
                           * loaded machine has 6 s to confirm each renewal (else the
                           * reason would be errc::connection) */
    dlock::client c(o);
    std::atomic<int> calls{0};
    std::atomic<int> reason{0};
    std::atomic<std::uint64_t> owner{0};
    dlock::reentrant_lock lock;
    {
        dlock::reentrant_lock made(c, "cxx:lost");
        made.on_lost([&](std::uint64_t lost_owner, std::error_code why) {
            owner = lost_owner;
            reason = why.value();
            calls++;
        });
        lock = std::move(made);
    }
    lock.lock();
    redisReply *reply = redis_fixture_cmd(server, "DEL %s", "cxx:lost");
    CHECK(reply != nullptr);
    freeReplyObject(reply);
    CHECK(eventually([&] { return calls.load() > 0; }, 60s));
    CHECK(calls.load() == 1);
    CHECK(reason.load() == DLOCK_ELOST);
    CHECK(owner.load() == dlock::this_thread_owner());
    std::error_code ec;
    lock.unlock(ec);
    CHECK_EC(ec, dlock::errc::lost);
    lock.on_lost(nullptr); /* removed */
}

/* A bound on a hold: at it the watchdog stops renewing, the lease runs out, and the
 * lost-lease callback says errc::max_hold_reached. */
void test_max_hold() {
    dlock_options o = dlock::options();
    o.url = url.c_str();
    o.watchdog_ms = 9000; /* as in test_lost_callback: a renewal has 6 s to be confirmed */
    dlock::client c(o);
    std::atomic<int> calls{0};
    std::atomic<int> reason{0};
    dlock::reentrant_lock lock(c, "cxx:bounded");
    std::error_code ec;
    lock.set_max_hold(-2ms, ec);
    CHECK_EC(ec, dlock::errc::invalid);
    {
        dlock::multi_lock composite({lock});
        composite.set_max_hold(1s, ec); /* bounded through its members only */
        CHECK_EC(ec, dlock::errc::invalid);
    }
    lock.on_lost([&](std::uint64_t, std::error_code why) {
        reason = why.value();
        calls++;
    });
    lock.set_max_hold(1s);
    const auto start = steady::now(); /* before the acquire, from which the bound counts */
    lock.lock();
    CHECK(eventually([&] { return calls.load() > 0; }, 60s));
    CHECK(steady::now() - start >= 1s);
    const std::error_code why(reason.load(), dlock::error_category());
    CHECK_EC(why, dlock::errc::max_hold_reached);
    CHECK(why.message() == "hold reached its bound (max_hold_ms)");
    lock.unlock(ec);
    CHECK_EC(ec, dlock::errc::lost);
    lock.set_max_hold(dlock::client_max_hold); /* the client's again: none */
    {
        std::lock_guard<dlock::reentrant_lock> hold(lock);
        CHECK(lock.is_held());
    }
    CHECK(calls.load() == 1);
}

/* ---- semaphore and latch ------------------------------------------------------------------ */

void test_semaphore(dlock::client &c) {
    dlock::semaphore sem(c, "cxx:sem");
    CHECK(sem.try_set_permits(2));
    CHECK(!sem.try_set_permits(5));
    sem.acquire(2);
    CHECK(sem.available() == 0);
    CHECK(!sem.try_acquire());
    const auto start = steady::now();
    CHECK(!sem.try_acquire_for(1, 300ms));
    CHECK(steady::now() - start >= 300ms);
    std::atomic<bool> acquired{false};
    std::thread waiter([&] {
        sem.acquire();
        acquired = true;
    });
    sem.release(); /* the waiter's permit, whether it waits already or not */
    waiter.join();
    CHECK(acquired.load());
    CHECK(sem.available() == 0);
    sem.release(3);
    CHECK(sem.try_acquire_until(2, steady::now() + 5s));
    CHECK(sem.drain() == 1);
    CHECK(sem.available() == 0);
}

void test_latch(dlock::client &c) {
    dlock::latch done(c, "cxx:latch");
    CHECK(done.try_set_count(2));
    CHECK(!done.try_wait());
    std::atomic<bool> released{false};
    std::thread waiter([&] {
        done.wait();
        released = true;
    });
    done.count_down();
    CHECK(done.count() == 1);
    CHECK(!done.try_wait_for(200ms));
    CHECK(!released.load());
    done.count_down();
    waiter.join();
    CHECK(released.load());
    CHECK(done.try_wait());
    CHECK(done.count() == 0);
}

} // namespace

int main() {
    std::signal(SIGALRM, on_hang);
    alarm(400); /* ctest gives 600 s */
    test_error_category();
    test_wait_rounding();
    std::puts("ok - error category, wait rounding");

    CHECK(redis_fixture_start(nullptr, &server) == 0);
    url = redis_fixture_unix_url(server);
    test_processes_exclude_each_other(); /* first: fork before this process has clients */
    {
        dlock::client c(url);
        test_bad_input(c);
        std::puts("ok - bad input");
        test_lock_guard_and_unique_lock(c);
        std::puts("ok - std::lock_guard, std::unique_lock");
        test_scoped_lock_and_tokens(c);
        std::puts("ok - std::scoped_lock, fencing tokens, multi_lock");
        test_shared_lock(c);
        std::puts("ok - std::shared_lock");
        test_threads_exclude_each_other(c);
        std::puts("ok - threads through std::scoped_lock");
        test_timed_waits_give_up(c);
        std::puts("ok - timed waits");
        test_errors_throw_system_error(c);
        std::puts("ok - std::system_error");
        test_semaphore(c);
        std::puts("ok - semaphore");
        test_latch(c);
        std::puts("ok - latch");
    }
    test_moves();
    std::puts("ok - moves");
    test_lost_callback();
    std::puts("ok - lost-lease callback");
    test_max_hold();
    std::puts("ok - max hold");
    redis_fixture_stop(server);
    return 0;
}
