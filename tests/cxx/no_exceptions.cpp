/* SPDX-License-Identifier: MIT */
/* no_exceptions.cpp — include/dlock.hpp compiled with -fno-exceptions (built, never run):
 * every call has its std::error_code overload there, and the throwing ones are gone, so a
 * program built without exceptions cannot call one that would have to abort. */
#include <chrono>
#include <mutex>
#include <system_error>
#include <type_traits>
#include <utility>

#include "dlock.hpp"

static_assert(DLOCK_CXX_EXCEPTIONS == 0, "built without exceptions");

template <class T, class = void> struct has_plain_lock : std::false_type {};
template <class T>
struct has_plain_lock<T, std::void_t<decltype(std::declval<T &>().lock())>> : std::true_type {};
static_assert(!has_plain_lock<dlock::reentrant_lock>::value, "lock() throws: not here");
static_assert(!has_plain_lock<dlock::rw_lock>::value, "lock() throws: not here");

template <class T, class = void> struct has_plain_acquire : std::false_type {};
template <class T>
struct has_plain_acquire<T, std::void_t<decltype(std::declval<T &>().acquire())>> : std::true_type {
};
static_assert(!has_plain_acquire<dlock::semaphore>::value, "acquire() throws: not here");

/* Every error_code overload, called once (never run: this only has to compile). */
int use_every_call(const std::string &url) {
    using namespace std::chrono_literals;
    std::error_code ec;
    dlock::client c(url, ec);
    dlock::client from_options(dlock::options(), ec);
    c.ping(ec);
    dlock::reentrant_lock a(c, "a", ec);
    dlock::fenced_lock b(c, "b", ec);
    dlock::fair_lock f(c, "f", ec);
    dlock::spin_lock s(c, "s", ec);
    dlock::multi_lock m({a, b}, ec);
    dlock::red_lock r({f, s}, ec);
    a.set_lease(dlock::watchdog);
    a.lock(ec);
    a.try_lock(ec);
    a.try_lock_for(1s, ec);
    a.try_lock_until(std::chrono::system_clock::now() + 1s, ec);
    a.is_locked(ec);
    a.is_held(ec);
    a.hold_count(ec);
    a.ttl(ec);
    a.force_unlock(ec);
    a.on_lost([](std::uint64_t, std::error_code) {}, ec);
    a.unlock(ec);
    a.unlock(); /* never throws: there with exceptions off too */
    b.token(ec);
    m.token(ec);
    r.lock(ec);
    dlock::rw_lock rw(c, "rw", ec);
    rw.lock_shared(ec);
    rw.try_lock_shared_for(1s, ec);
    rw.try_lock_shared_until(std::chrono::steady_clock::now() + 1s, ec);
    rw.unlock_shared(ec);
    rw.read().lock(ec);
    rw.write().try_lock(ec);
    dlock::semaphore sem(c, "sem", ec);
    sem.try_set_permits(1, ec);
    sem.add_permits(1, ec);
    sem.acquire(ec);
    sem.try_acquire(2, ec);
    sem.try_acquire_for(1, 1s, ec);
    sem.try_acquire_until(1, std::chrono::steady_clock::now() + 1s, ec);
    sem.release(ec);
    sem.available(ec);
    sem.drain(ec);
    dlock::latch l(c, "l", ec);
    l.try_set_count(1, ec);
    l.count_down(ec);
    l.count(ec);
    l.try_wait(ec);
    l.try_wait_for(1s, ec);
    l.wait(ec);
    l.arrive_and_wait(ec);
    return ec ? 1 : 0;
}
