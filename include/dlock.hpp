/* SPDX-License-Identifier: MIT */
/* dlock.hpp — the C++17 face of dlock: one header over the C API of dlock.h, with nothing
 * of its own to build or link (link libdlock as a C program does). docs/cpp.md is its
 * users' page.
 *
 *   dlock::client          dlock_client        (RAII; from a URL or a dlock_options)
 *   dlock::reentrant_lock  dlock_lock_new       \
 *   dlock::fenced_lock     dlock_fencedlock_new  |  TimedLockable: std::lock_guard,
 *   dlock::fair_lock       dlock_fairlock_new    |  std::unique_lock and std::scoped_lock
 *   dlock::spin_lock       dlock_spinlock_new    |  work on them unchanged
 *   dlock::multi_lock      dlock_multilock_new   |
 *   dlock::red_lock        dlock_redlock_new    /
 *   dlock::rw_lock         dlock_rwlock_new     (SharedTimedLockable: std::shared_lock)
 *   dlock::semaphore       dlock_semaphore_*    (as std::counting_semaphore)
 *   dlock::latch           dlock_latch_*        (as std::latch)
 *
 * The reentrant lock is not called dlock::lock: in a class named lock, l.lock() would name
 * the class itself (its injected-class-name), so std::lock_guard could not call it.
 *
 * Errors. A dlock error is a std::error_code of dlock::error_category() (name() "dlock",
 * message() dlock_strerror()), its value the C code (DLOCK_ETIMEDOUT, ...), comparable with
 * the dlock::errc enumerators and, where one fits, with std::errc (errc::timed_out ==
 * std::errc::timed_out). Every call that can fail has an overload taking a std::error_code&
 * that never throws. The overloads without it, the ones the standard names (lock(),
 * try_lock_for(), acquire(), wait(), ...), throw std::system_error with that code, as
 * std::mutex does; the try_ calls return false when the wait ran out and throw for any
 * other failure. They and the throwing constructors exist only when exceptions are on
 * (DLOCK_CXX_EXCEPTIONS): built with -fno-exceptions, only the error_code overloads are
 * there, so nothing fails in a way the program cannot see.
 *
 * unlock() never throws, as std::mutex's does not: a guard's destructor calls it, and an
 * exception there would end the program. What it would have reported (DLOCK_ELOST: the
 * lease ran out while held; DLOCK_ENOTOWNER) is in unlock(std::error_code&), and a lost
 * lease also reaches the lost-lease callback (lockable::on_lost).
 *
 * Owners. As on the C blocking face, the owner of a hold is the calling thread: unlock from
 * the thread that locked (a std::unique_lock must not be handed to another thread while it
 * holds). Holds are reentrant for every kind.
 *
 * Times. A wait (try_lock_for, try_acquire_for, ...) is rounded UP to whole milliseconds,
 * plus one (the C library's deadlines are whole ms, which may end a wait of N ms up to 1 ms
 * early), so a call never gives up sooner than asked: 1 us waits up to 2 ms. Zero or less
 * is one attempt (try_lock() is exactly that). A wait longer than DLOCK_MAX_TIME_MS (ten years) is
 * DLOCK_FOREVER. A *_until call turns its time point into a wait once, when it starts, with
 * the time point's own clock (steady_clock or system_clock); a system_clock change during
 * the wait does not move it. A lease (lockable::set_lease) is dlock::watchdog (the default:
 * held until released, the client's watchdog renews it) or a positive number of ms.
 *
 * Objects. Every class is movable and not copyable; a moved-from object is empty (as a
 * default-constructed one): its calls fail with errc::invalid and its destructor does
 * nothing. Destroying an object frees its C handle as the C *_free call does (no I/O: a
 * hold still in place expires by its lease). Destroy every primitive before the client it
 * was made from, and a multi_lock or red_lock before its members. One object may be used by
 * many threads at once, as its C handle may, except for moves, set_lease and on_lost,
 * which must not race with other calls on it. */
#ifndef DLOCK_HPP
#define DLOCK_HPP

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "dlock.h"

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define DLOCK_CXX_EXCEPTIONS 1
#else
#define DLOCK_CXX_EXCEPTIONS 0
#endif

namespace dlock {

/* ---- errors ------------------------------------------------------------------------------- */

/* The C codes of dlock/error.h, by name, and the lost-lease callback's one reason that is
 * not among them (max_hold_reached). A code the C library adds later still arrives as an
 * error_code of error_category() (its message is dlock_strerror's) before it has a name
 * here. */
enum class errc : int {
    invalid = DLOCK_EINVAL,
    out_of_memory = DLOCK_ENOMEM,
    timed_out = DLOCK_ETIMEDOUT,
    not_owner = DLOCK_ENOTOWNER,
    lost = DLOCK_ELOST,
    connection = DLOCK_ECONN,
    auth = DLOCK_EAUTH,
    redis = DLOCK_EREDIS,
    canceled = DLOCK_ECANCELED,
    closed = DLOCK_ECLOSED,
    busy = DLOCK_EBUSY,
    would_deadlock = DLOCK_EDEADLK,
    no_permission = DLOCK_ENOPERM,
    no_space = DLOCK_ENOSPC,
    /* only as a lost-lease reason: the watchdog stopped renewing the hold at its bound
     * (lockable::set_max_hold, dlock_options.max_hold_ms) and the lease ran out */
    max_hold_reached = DLOCK_LOST_MAX_HOLD,
};

namespace detail {

class error_category_impl final : public std::error_category {
  public:
    const char *name() const noexcept override {
        return "dlock";
    }
    std::string message(int code) const override {
        if (code == DLOCK_LOST_MAX_HOLD) /* a lost-lease reason, not a DLOCK_E* code */
            return "hold reached its bound (max_hold_ms)";
        return dlock_strerror(code);
    }

    /* The portable condition a code matches, so that code == std::errc::timed_out works
     * without knowing dlock's codes. A code with no such condition stays dlock's own. */
    std::error_condition default_error_condition(int code) const noexcept override {
        switch (code) {
        case DLOCK_EINVAL:
            return std::errc::invalid_argument;
        case DLOCK_ENOMEM:
            return std::errc::not_enough_memory;
        case DLOCK_ETIMEDOUT:
            return std::errc::timed_out;
        case DLOCK_ENOTOWNER:
            return std::errc::operation_not_permitted;
        case DLOCK_ECANCELED:
            return std::errc::operation_canceled;
        case DLOCK_EBUSY:
            return std::errc::device_or_resource_busy;
        case DLOCK_EDEADLK:
            return std::errc::resource_deadlock_would_occur;
        case DLOCK_ENOPERM:
            return std::errc::permission_denied;
        case DLOCK_ENOSPC:
            return std::errc::no_buffer_space;
        default:
            return std::error_condition(code, *this);
        }
    }
};

} // namespace detail

namespace detail {

/* Holds the category and never destroys it: a client destroyed while the program exits may
 * still hand a lost-lease callback an error_code that refers to it. */
union category_storage {
    error_category_impl category;
    category_storage() noexcept : category() {
    }
    ~category_storage() {
    }
};

} // namespace detail

/* The category of every dlock error: one object per program. */
inline const std::error_category &error_category() noexcept {
    static detail::category_storage storage;
    return storage.category;
}

inline std::error_code make_error_code(errc e) noexcept {
    return std::error_code(static_cast<int>(e), error_category());
}

/* The detail of the calling thread's last failed dlock call (dlock_last_error()): read it
 * right after the call whose error_code you hold; the next dlock call may replace it. */
inline const char *last_error() noexcept {
    return dlock_last_error();
}

/* The owner id of the calling thread's holds (dlock_thread_owner()). */
inline std::uint64_t this_thread_owner() noexcept {
    return dlock_thread_owner();
}

/* The lease of a hold kept until released, renewed by the client's watchdog. */
inline constexpr std::chrono::milliseconds watchdog{DLOCK_WATCHDOG};

/* The bound of a lock's watchdog holds that is the client's dlock_options.max_hold_ms
 * (lockable::set_max_hold). */
inline constexpr std::chrono::milliseconds client_max_hold{DLOCK_MAX_HOLD_CLIENT};

/* dlock_options with dlock_options_init's defaults (url NULL: $DLOCK_URL, else
 * redis://127.0.0.1:6379). Set fields on the copy, then make a client from it. */
inline dlock_options options() noexcept {
    dlock_options o;
    dlock_options_init(&o);
    return o;
}

namespace detail {

inline std::error_code code(int rc) noexcept {
    return rc == DLOCK_OK ? std::error_code() : std::error_code(rc, error_category());
}

/* The C API takes names and URLs up to their first NUL: one inside the string would
 * silently name another object, so such a string is refused instead. */
inline bool has_nul(const std::string &s) noexcept {
    return s.find('\0') != std::string::npos;
}

/* rc of a call that waits: true when obtained; DLOCK_ETIMEDOUT is false with ec cleared, any
 * other failure false with ec set. */
inline bool obtained(int rc, std::error_code &ec) noexcept {
    ec = rc == DLOCK_ETIMEDOUT ? std::error_code() : code(rc);
    return rc == DLOCK_OK;
}

/* A wait in ms for the C API, so that a call never gives up sooner than asked: rounded up,
 * plus one, because the C library keeps a deadline in whole ms of a clock it reads
 * truncated (a wait of N ms may end up to 1 ms early). Zero, negative (and NaN) are one
 * attempt; above DLOCK_MAX_TIME_MS, for ever. Compared as long double first, so that no
 * duration, however long or fine, overflows on the way. */
template <class Rep, class Period>
std::int64_t wait_ms(const std::chrono::duration<Rep, Period> &d) noexcept {
    const long double ms = std::chrono::duration<long double, std::milli>(d).count();
    if (!(ms > 0))
        return 0;
    if (ms > static_cast<long double>(DLOCK_MAX_TIME_MS - 1))
        return DLOCK_FOREVER;
    return std::chrono::ceil<std::chrono::milliseconds>(d).count() + 1;
}

/* The wait until t, measured on t's clock now. */
template <class Clock, class Duration>
std::int64_t wait_ms(const std::chrono::time_point<Clock, Duration> &t) {
    using fine_ms = std::chrono::duration<long double, std::milli>;
    const fine_ms now = Clock::now().time_since_epoch();
    return wait_ms(fine_ms(t.time_since_epoch()) - now);
}

#if DLOCK_CXX_EXCEPTIONS
/* Throws what a failed call of the C function `call` returned, with the detail the C
 * library keeps for this thread (or `why`, for a failure found here before any C call). */
[[noreturn]] inline void throw_error(const std::error_code &ec, const char *call,
                                     const char *why = nullptr) {
    std::string what = call;
    const char *detail = why ? why : dlock_last_error();
    if (detail && *detail) {
        what += " (";
        what += detail;
        what += ")";
    }
    throw std::system_error(ec, what);
}

inline void throw_if(const std::error_code &ec, const char *call) {
    if (ec)
        throw_error(ec, call);
}

/* The answer of query(ec), an error_code overload, or what it set in ec, thrown. */
template <class Query> auto value_or_throw(const char *call, Query query) {
    std::error_code ec;
    auto out = query(ec);
    throw_if(ec, call);
    return out;
}

inline bool obtained_or_throw(int rc, const char *call) {
    std::error_code ec;
    const bool got = obtained(rc, ec);
    throw_if(ec, call);
    return got;
}
#endif

/* A client or object made by its C constructor: the handle, or NULL with ec set. */
inline dlock_client *new_client(const dlock_options &o, std::error_code &ec) noexcept {
    dlock_client *out = nullptr;
    ec = code(dlock_client_new(&o, &out));
    return out;
}
inline dlock_client *new_client(const std::string &url, std::error_code &ec) noexcept {
    if (has_nul(url)) {
        ec = make_error_code(errc::invalid);
        return nullptr;
    }
    dlock_options o = options();
    o.url = url.c_str();
    return new_client(o, ec);
}
template <class Handle>
Handle *new_handle(int (*create)(dlock_client *, const char *, Handle **), dlock_client *c,
                   const std::string &name, std::error_code &ec) noexcept {
    Handle *out = nullptr;
    if (has_nul(name))
        ec = make_error_code(errc::invalid);
    else
        ec = code(create(c, name.c_str(), &out));
    return out;
}
#if DLOCK_CXX_EXCEPTIONS
inline bool nul_in(const std::string &url) noexcept {
    return has_nul(url);
}
inline bool nul_in(const dlock_options &) noexcept {
    return false;
}
template <class Source> dlock_client *new_client_or_throw(const Source &source) {
    std::error_code ec;
    dlock_client *out = new_client(source, ec);
    if (ec)
        throw_error(ec, "dlock_client_new", nul_in(source) ? "the URL holds a NUL byte" : nullptr);
    return out;
}
template <class Handle>
Handle *new_handle_or_throw(int (*create)(dlock_client *, const char *, Handle **), dlock_client *c,
                            const std::string &name, const char *call) {
    std::error_code ec;
    Handle *out = new_handle(create, c, name, ec);
    if (ec)
        throw_error(ec, call, has_nul(name) ? "the name holds a NUL byte" : nullptr);
    return out;
}
#endif

/* unique_ptr deleters: the C *_free calls. */
struct client_free {
    void operator()(dlock_client *c) const noexcept {
        dlock_client_free(c);
    }
};
struct rwlock_free {
    void operator()(dlock_rwlock *rw) const noexcept {
        dlock_rwlock_free(rw);
    }
};
struct semaphore_free {
    void operator()(dlock_semaphore *s) const noexcept {
        dlock_semaphore_free(s);
    }
};
struct latch_free {
    void operator()(dlock_latch *l) const noexcept {
        dlock_latch_free(l);
    }
};

} // namespace detail

/* ---- client ------------------------------------------------------------------------------- */

/* The client (dlock_client_new, the blocking face): its own I/O thread and connections.
 * Its constructors block until connected, as dlock_client_new does; the destructor is
 * dlock_client_free (do not destroy it on its own loop thread, e.g. in a lost-lease
 * callback: the C call refuses, and the client would be left open). */
class client {
  public:
    client() noexcept = default;
    client(const dlock_options &o, std::error_code &ec) noexcept
        : handle_(detail::new_client(o, ec)) {
    }
    client(const std::string &url, std::error_code &ec) noexcept
        : handle_(detail::new_client(url, ec)) {
    }
#if DLOCK_CXX_EXCEPTIONS
    explicit client(const dlock_options &o) : handle_(detail::new_client_or_throw(o)) {
    }
    explicit client(const std::string &url) : handle_(detail::new_client_or_throw(url)) {
    }
#endif

    explicit operator bool() const noexcept {
        return handle_ != nullptr;
    }
    dlock_client *native_handle() const noexcept {
        return handle_.get();
    }

    /* The client's UUID (dlock_client_id): "" for an empty client. */
    std::string id() const {
        return dlock_client_id(handle_.get());
    }

    /* One round trip to Redis (dlock_client_ping). */
    void ping(std::error_code &ec) noexcept {
        ec = detail::code(dlock_client_ping(handle_.get()));
    }
#if DLOCK_CXX_EXCEPTIONS
    void ping() {
        detail::throw_if(detail::code(dlock_client_ping(handle_.get())), "dlock_client_ping");
    }
#endif

  private:
    std::unique_ptr<dlock_client, detail::client_free> handle_;
};

/* ---- locks -------------------------------------------------------------------------------- */

/* What every lock kind shares: the calls of dlock/lock.h on one dlock_lock handle, as
 * TimedLockable members (lock, try_lock, try_lock_for, try_lock_until, unlock) and the
 * queries. Each kind below is a lockable made by its C constructor; a rw_lock's halves are
 * lockables it owns. */
class lockable {
  public:
    /* Called once per lost lease, on the client's I/O thread, with the owner whose hold was
     * lost and the reason (errc::lost: the lock was found gone or taken; errc::connection: no
     * renewal was confirmed in time; errc::max_hold_reached: the hold reached its bound). It must
     * be quick, must not make blocking dlock calls and must not throw (an exception ends the
     * program: it cannot cross the C library). */
    using lost_handler = std::function<void(std::uint64_t owner, std::error_code reason)>;

    lockable(const lockable &) = delete;
    lockable &operator=(const lockable &) = delete;

    explicit operator bool() const noexcept {
        return handle_ != nullptr;
    }
    dlock_lock *native_handle() const noexcept {
        return handle_;
    }
    /* The name given at creation; "" for an empty object. */
    std::string name() const {
        const char *n = dlock_lock_name(handle_);
        return n ? n : "";
    }

    /* The lease of the holds lock() and the try_ calls take from now on: dlock::watchdog
     * (the default) or a positive time. Another value makes them fail with errc::invalid. */
    void set_lease(std::chrono::milliseconds lease) noexcept {
        lease_ms_ = lease.count();
    }
    std::chrono::milliseconds lease() const noexcept {
        return std::chrono::milliseconds(lease_ms_);
    }

    /* How long a watchdog hold taken from now on may last (dlock_lock_set_max_hold): a
     * positive bound, 0 ms none, dlock::client_max_hold the client's max_hold_ms (the
     * default). At the bound the watchdog stops renewing, the lease runs out, the lost-lease
     * callback says errc::max_hold_reached and unlock says errc::lost. A composite has no
     * bound of its own (errc::invalid): bound its members. */
    void set_max_hold(std::chrono::milliseconds bound, std::error_code &ec) noexcept {
        ec = detail::code(dlock_lock_set_max_hold(handle_, bound.count()));
    }
#if DLOCK_CXX_EXCEPTIONS
    void set_max_hold(std::chrono::milliseconds bound) {
        detail::throw_if(detail::code(dlock_lock_set_max_hold(handle_, bound.count())),
                         "dlock_lock_set_max_hold");
    }
#endif

    /* dlock_lock_acquire: blocks until the calling thread holds it. */
    void lock(std::error_code &ec) noexcept {
        ec = detail::code(dlock_lock_acquire(handle_, lease_ms_));
    }
    /* One attempt. */
    bool try_lock(std::error_code &ec) noexcept {
        return detail::obtained(dlock_lock_try_acquire(handle_, 0, lease_ms_), ec);
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &wait,
                      std::error_code &ec) noexcept {
        return detail::obtained(dlock_lock_try_acquire(handle_, detail::wait_ms(wait), lease_ms_),
                                ec);
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &deadline,
                        std::error_code &ec) noexcept {
        return detail::obtained(
            dlock_lock_try_acquire(handle_, detail::wait_ms(deadline), lease_ms_), ec);
    }
    /* Releases one hold of the calling thread (dlock_lock_release): errc::not_owner if it
     * holds none, errc::lost if a hold was lost while held. */
    void unlock(std::error_code &ec) noexcept {
        ec = detail::code(dlock_lock_release(handle_));
    }
    /* The same, reporting nothing (see the top of this header). */
    void unlock() noexcept {
        dlock_lock_release(handle_);
    }

#if DLOCK_CXX_EXCEPTIONS
    void lock() {
        detail::throw_if(detail::code(dlock_lock_acquire(handle_, lease_ms_)),
                         "dlock_lock_acquire");
    }
    bool try_lock() {
        return detail::obtained_or_throw(dlock_lock_try_acquire(handle_, 0, lease_ms_),
                                         "dlock_lock_try_acquire");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &wait) {
        return detail::obtained_or_throw(
            dlock_lock_try_acquire(handle_, detail::wait_ms(wait), lease_ms_),
            "dlock_lock_try_acquire");
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &deadline) {
        return detail::obtained_or_throw(
            dlock_lock_try_acquire(handle_, detail::wait_ms(deadline), lease_ms_),
            "dlock_lock_try_acquire");
    }
#endif

    /* Queries, each one round trip (dlock_lock_is_locked, _is_held, _hold_count, _ttl). On
     * an error they answer false / 0 with ec set. */
    bool is_locked(std::error_code &ec) noexcept {
        bool out = false;
        ec = detail::code(dlock_lock_is_locked(handle_, &out));
        return out;
    }
    /* By the calling thread. */
    bool is_held(std::error_code &ec) noexcept {
        bool out = false;
        ec = detail::code(dlock_lock_is_held(handle_, &out));
        return out;
    }
    /* The calling thread's reentrant holds. */
    std::int64_t hold_count(std::error_code &ec) noexcept {
        std::int64_t out = 0;
        ec = detail::code(dlock_lock_hold_count(handle_, &out));
        return out;
    }
    /* The remaining lease: -2 ms not locked, -1 ms no expiry. */
    std::chrono::milliseconds ttl(std::error_code &ec) noexcept {
        std::int64_t out = 0;
        ec = detail::code(dlock_lock_ttl(handle_, &out));
        return std::chrono::milliseconds(out);
    }
    /* Deletes the lock whoever holds it (dlock_lock_force_release); true if it was held. */
    bool force_unlock(std::error_code &ec) noexcept {
        bool was_locked = false;
        ec = detail::code(dlock_lock_force_release(handle_, &was_locked));
        return was_locked;
    }
#if DLOCK_CXX_EXCEPTIONS
    bool is_locked() {
        return detail::value_or_throw("dlock_lock_is_locked",
                                      [this](std::error_code &ec) { return is_locked(ec); });
    }
    bool is_held() {
        return detail::value_or_throw("dlock_lock_is_held",
                                      [this](std::error_code &ec) { return is_held(ec); });
    }
    std::int64_t hold_count() {
        return detail::value_or_throw("dlock_lock_hold_count",
                                      [this](std::error_code &ec) { return hold_count(ec); });
    }
    std::chrono::milliseconds ttl() {
        return detail::value_or_throw("dlock_lock_ttl",
                                      [this](std::error_code &ec) { return ttl(ec); });
    }
    bool force_unlock() {
        return detail::value_or_throw("dlock_lock_force_release",
                                      [this](std::error_code &ec) { return force_unlock(ec); });
    }
#endif

    /* Sets the lost-lease callback (dlock_lock_on_lost; an empty function removes it). Set it
     * before acquiring. The function lives in this object and moves with it. */
    void on_lost(lost_handler handler, std::error_code &ec) noexcept {
        std::unique_ptr<lost_handler> next;
        if (handler) {
            next.reset(new (std::nothrow) lost_handler(std::move(handler)));
            if (!next) {
                ec = make_error_code(errc::out_of_memory);
                return;
            }
        }
        /* When dlock_lock_on_lost returns, the previous function is no longer called: only
         * then may it go. */
        ec =
            detail::code(dlock_lock_on_lost(handle_, next ? lost_trampoline : nullptr, next.get()));
        if (!ec)
            lost_ = std::move(next);
    }
#if DLOCK_CXX_EXCEPTIONS
    void on_lost(lost_handler handler) {
        std::error_code ec;
        on_lost(std::move(handler), ec);
        detail::throw_if(ec, "dlock_lock_on_lost");
    }
#endif

  protected:
    lockable() noexcept = default;
    /* Takes a handle that this object frees (owned) or that its owner frees (rw_lock's
     * halves). */
    lockable(dlock_lock *handle, bool owned) noexcept : handle_(handle), owned_(owned) {
    }

    lockable(lockable &&other) noexcept
        : handle_(std::exchange(other.handle_, nullptr)),
          owned_(std::exchange(other.owned_, false)), lease_ms_(other.lease_ms_),
          lost_(std::move(other.lost_)) {
    }
    lockable &operator=(lockable &&other) noexcept {
        if (this != &other) {
            release_handle();
            handle_ = std::exchange(other.handle_, nullptr);
            owned_ = std::exchange(other.owned_, false);
            lease_ms_ = other.lease_ms_;
            lost_ = std::move(other.lost_); /* after the handle went: see release_handle */
        }
        return *this;
    }
    /* Not virtual: a lockable is never deleted through a pointer to this class. */
    ~lockable() {
        release_handle();
    }

    /* The fenced kinds' token of the calling thread's latest acquisition (dlock_lock_token). */
    std::uint64_t token(std::error_code &ec) noexcept {
        std::uint64_t out = 0;
        ec = detail::code(dlock_lock_token(handle_, &out));
        return out;
    }
#if DLOCK_CXX_EXCEPTIONS
    std::uint64_t token() {
        return detail::value_or_throw("dlock_lock_token",
                                      [this](std::error_code &ec) { return token(ec); });
    }
#endif

  private:
    /* dlock_lock_free: the lost callback runs no more once it returns, so lost_ may go
     * after it (the members' destructors run after this). A borrowed handle is its owner's
     * to free, before this object's lost_ goes (rw_lock sees to that). */
    void release_handle() noexcept {
        if (owned_)
            dlock_lock_free(handle_);
        handle_ = nullptr;
        owned_ = false;
    }

    static void lost_trampoline(dlock_lock *, std::uint64_t owner, int reason, void *arg) noexcept {
        (*static_cast<lost_handler *>(arg))(owner, detail::code(reason));
    }

    dlock_lock *handle_ = nullptr;
    bool owned_ = false;
    std::int64_t lease_ms_ = DLOCK_WATCHDOG;
    std::unique_ptr<lost_handler> lost_;
};

namespace detail {

/* The C constructors' names, for what() of the exceptions they cause. */
inline constexpr char lock_new[] = "dlock_lock_new";
inline constexpr char fencedlock_new[] = "dlock_fencedlock_new";
inline constexpr char fairlock_new[] = "dlock_fairlock_new";
inline constexpr char spinlock_new[] = "dlock_spinlock_new";
inline constexpr char semaphore_new[] = "dlock_semaphore_new";
inline constexpr char latch_new[] = "dlock_latch_new";

/* A lock kind: a lockable made from a client and a name by the C constructor Create. */
template <int (*Create)(dlock_client *, const char *, dlock_lock **), const char *Call>
class lock_kind : public lockable {
  public:
    lock_kind() noexcept = default;
    lock_kind(client &c, const std::string &name, std::error_code &ec) noexcept
        : lockable(new_handle(Create, c.native_handle(), name, ec), true) {
    }
#if DLOCK_CXX_EXCEPTIONS
    lock_kind(client &c, const std::string &name)
        : lockable(new_handle_or_throw(Create, c.native_handle(), name, Call), true) {
    }
#endif
};

} // namespace detail

/* The reentrant lock (dlock_lock_new; Redisson RLock). */
class reentrant_lock : public detail::lock_kind<dlock_lock_new, detail::lock_new> {
  public:
    using lock_kind::lock_kind;
};

/* The fenced lock (dlock_fencedlock_new; RFencedLock): token() is the calling thread's
 * fencing token of its latest acquisition, strictly increasing from holder to holder. */
class fenced_lock : public detail::lock_kind<dlock_fencedlock_new, detail::fencedlock_new> {
  public:
    using lock_kind::lock_kind;
    using lockable::token;
};

/* The fair lock (dlock_fairlock_new; RFairLock): waiters get it in arrival order. */
class fair_lock : public detail::lock_kind<dlock_fairlock_new, detail::fairlock_new> {
  public:
    using lock_kind::lock_kind;
};

/* The spin lock (dlock_spinlock_new; RSpinLock): waits by backoff, no pub/sub. */
class spin_lock : public detail::lock_kind<dlock_spinlock_new, detail::spinlock_new> {
  public:
    using lock_kind::lock_kind;
};

namespace detail {

using composite_fn = int (*)(dlock_lock *const *, std::size_t, dlock_lock **);

/* A composite's handle over the members' handles, or NULL with ec set. */
template <class Members>
dlock_lock *new_composite(composite_fn create, const Members &members,
                          std::error_code &ec) noexcept {
    std::unique_ptr<dlock_lock *[]> handles(new (std::nothrow) dlock_lock *[members.size() + 1]);
    if (!handles) {
        ec = make_error_code(errc::out_of_memory);
        return nullptr;
    }
    std::size_t n = 0;
    for (lockable &member : members)
        handles[n++] = member.native_handle();
    dlock_lock *out = nullptr;
    ec = code(create(handles.get(), n, &out));
    return out;
}
#if DLOCK_CXX_EXCEPTIONS
template <class Members>
dlock_lock *new_composite_or_throw(composite_fn create, const Members &members, const char *call) {
    std::error_code ec;
    dlock_lock *out = new_composite(create, members, ec);
    throw_if(ec, call);
    return out;
}
#endif

} // namespace detail

/* The members of a composite: lock objects of any kind but a composite, on any clients, e.g.
 * {a, b} or {rw.read(), c}. They must outlive the composite, which takes over their
 * lost-lease callbacks. */
using members = std::vector<std::reference_wrapper<lockable>>;

/* MultiLock (dlock_multilock_new; RedissonMultiLock): every member or none, taken in one
 * order whatever the order given, so two multi_locks over the same locks never deadlock.
 * token() is the largest of the fenced members' tokens. */
class multi_lock : public lockable {
  public:
    multi_lock() noexcept = default;
    multi_lock(const members &locks, std::error_code &ec) noexcept
        : lockable(detail::new_composite(dlock_multilock_new, locks, ec), true) {
    }
#if DLOCK_CXX_EXCEPTIONS
    explicit multi_lock(const members &locks)
        : lockable(
              detail::new_composite_or_throw(dlock_multilock_new, locks, "dlock_multilock_new"),
              true) {
    }
#endif
    using lockable::token;
};

/* RedLock (dlock_redlock_new): a quorum of members on independent Redis masters (fenced
 * members all or none). */
class red_lock : public lockable {
  public:
    red_lock() noexcept = default;
    red_lock(const members &locks, std::error_code &ec) noexcept
        : lockable(detail::new_composite(dlock_redlock_new, locks, ec), true) {
    }
#if DLOCK_CXX_EXCEPTIONS
    explicit red_lock(const members &locks)
        : lockable(detail::new_composite_or_throw(dlock_redlock_new, locks, "dlock_redlock_new"),
                   true) {
    }
#endif
    using lockable::token;
};

/* ---- read-write lock ---------------------------------------------------------------------- */

/* The read-write lock (dlock_rwlock_new; RReadWriteLock): any number of readers or one
 * writer. read() and write() are its halves, each a lockable (std::lock_guard on
 * rw.read() takes a read hold). The lock itself is SharedTimedLockable: lock() and the
 * try_lock calls take the write half, lock_shared() and the try_lock_shared calls the read
 * half, so std::unique_lock and std::shared_lock work on it. */
class rw_lock {
  public:
    /* A half: borrowed from the rw_lock, which frees it; it lives and moves only with it. */
    class half : public lockable {
        friend class rw_lock;
        half() noexcept = default;
        explicit half(dlock_lock *h) noexcept : lockable(h, false) {
        }
        half(half &&) noexcept = default;
        half &operator=(half &&) noexcept = default;
    };

    rw_lock() noexcept = default;
    rw_lock(client &c, const std::string &name, std::error_code &ec) noexcept
        : rw_lock(detail::new_handle(dlock_rwlock_new, c.native_handle(), name, ec)) {
    }
#if DLOCK_CXX_EXCEPTIONS
    rw_lock(client &c, const std::string &name)
        : rw_lock(detail::new_handle_or_throw(dlock_rwlock_new, c.native_handle(), name,
                                              "dlock_rwlock_new")) {
    }
#endif

    rw_lock(const rw_lock &) = delete;
    rw_lock &operator=(const rw_lock &) = delete;
    rw_lock(rw_lock &&other) noexcept = default;
    rw_lock &operator=(rw_lock &&other) noexcept {
        if (this != &other) {
            handle_.reset(); /* frees the halves' handles before their lost callbacks go */
            read_ = std::move(other.read_);
            write_ = std::move(other.write_);
            handle_ = std::move(other.handle_);
        }
        return *this;
    }
    /* handle_ is declared last, so it is freed first, then the halves' lost callbacks. */
    ~rw_lock() = default;

    explicit operator bool() const noexcept {
        return handle_ != nullptr;
    }
    dlock_rwlock *native_handle() const noexcept {
        return handle_.get();
    }

    half &read() noexcept {
        return read_;
    }
    half &write() noexcept {
        return write_;
    }

    void lock(std::error_code &ec) noexcept {
        write_.lock(ec);
    }
    bool try_lock(std::error_code &ec) noexcept {
        return write_.try_lock(ec);
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &wait,
                      std::error_code &ec) noexcept {
        return write_.try_lock_for(wait, ec);
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &deadline,
                        std::error_code &ec) noexcept {
        return write_.try_lock_until(deadline, ec);
    }
    void unlock(std::error_code &ec) noexcept {
        write_.unlock(ec);
    }
    void unlock() noexcept {
        write_.unlock();
    }

    void lock_shared(std::error_code &ec) noexcept {
        read_.lock(ec);
    }
    bool try_lock_shared(std::error_code &ec) noexcept {
        return read_.try_lock(ec);
    }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &wait,
                             std::error_code &ec) noexcept {
        return read_.try_lock_for(wait, ec);
    }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &deadline,
                               std::error_code &ec) noexcept {
        return read_.try_lock_until(deadline, ec);
    }
    void unlock_shared(std::error_code &ec) noexcept {
        read_.unlock(ec);
    }
    void unlock_shared() noexcept {
        read_.unlock();
    }

#if DLOCK_CXX_EXCEPTIONS
    void lock() {
        write_.lock();
    }
    bool try_lock() {
        return write_.try_lock();
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &wait) {
        return write_.try_lock_for(wait);
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &deadline) {
        return write_.try_lock_until(deadline);
    }
    void lock_shared() {
        read_.lock();
    }
    bool try_lock_shared() {
        return read_.try_lock();
    }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &wait) {
        return read_.try_lock_for(wait);
    }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &deadline) {
        return read_.try_lock_until(deadline);
    }
#endif

  private:
    explicit rw_lock(dlock_rwlock *handle) noexcept
        : read_(dlock_rwlock_read(handle)), write_(dlock_rwlock_write(handle)), handle_(handle) {
    }

    half read_;
    half write_;
    std::unique_ptr<dlock_rwlock, detail::rwlock_free> handle_;
};

namespace detail {

/* What the semaphore and the latch share: a C handle made from a client and a name by the
 * C constructor Create, freed by Free. */
template <class Handle, int (*Create)(dlock_client *, const char *, Handle **), class Free,
          const char *Call>
class named_object {
  public:
    named_object() noexcept = default;
    named_object(client &c, const std::string &name, std::error_code &ec) noexcept
        : handle_(new_handle(Create, c.native_handle(), name, ec)) {
    }
#if DLOCK_CXX_EXCEPTIONS
    named_object(client &c, const std::string &name)
        : handle_(new_handle_or_throw(Create, c.native_handle(), name, Call)) {
    }
#endif

    explicit operator bool() const noexcept {
        return handle_ != nullptr;
    }
    Handle *native_handle() const noexcept {
        return handle_.get();
    }

  protected:
    std::unique_ptr<Handle, Free> handle_;
};

} // namespace detail

/* ---- semaphore ---------------------------------------------------------------------------- */

/* The semaphore (dlock_semaphore_*; RSemaphore): a count of permits in Redis, with
 * std::counting_semaphore's calls, each for n permits (1 by default). Permits have no
 * owner: any thread or process may release them. */
class semaphore : public detail::named_object<dlock_semaphore, dlock_semaphore_new,
                                              detail::semaphore_free, detail::semaphore_new> {
  public:
    using named_object::named_object;

    /* Sets the count if the semaphore does not exist yet; true if it did. */
    bool try_set_permits(std::int64_t permits, std::error_code &ec) noexcept {
        bool was_set = false;
        ec = detail::code(dlock_semaphore_try_set_permits(handle_.get(), permits, &was_set));
        return was_set;
    }
    /* Adds delta permits (negative takes them away). */
    void add_permits(std::int64_t delta, std::error_code &ec) noexcept {
        ec = detail::code(dlock_semaphore_add_permits(handle_.get(), delta));
    }
    std::int64_t available(std::error_code &ec) noexcept {
        std::int64_t out = 0;
        ec = detail::code(dlock_semaphore_available(handle_.get(), &out));
        return out;
    }
    /* Takes every available permit; how many. */
    std::int64_t drain(std::error_code &ec) noexcept {
        std::int64_t out = 0;
        ec = detail::code(dlock_semaphore_drain(handle_.get(), &out));
        return out;
    }

    void acquire(std::int64_t n, std::error_code &ec) noexcept {
        ec = detail::code(dlock_semaphore_acquire(handle_.get(), n));
    }
    void acquire(std::error_code &ec) noexcept {
        acquire(1, ec);
    }
    bool try_acquire(std::int64_t n, std::error_code &ec) noexcept {
        return detail::obtained(dlock_semaphore_try_acquire(handle_.get(), n, 0), ec);
    }
    bool try_acquire(std::error_code &ec) noexcept {
        return try_acquire(1, ec);
    }
    template <class Rep, class Period>
    bool try_acquire_for(std::int64_t n, const std::chrono::duration<Rep, Period> &wait,
                         std::error_code &ec) noexcept {
        return detail::obtained(
            dlock_semaphore_try_acquire(handle_.get(), n, detail::wait_ms(wait)), ec);
    }
    template <class Clock, class Duration>
    bool try_acquire_until(std::int64_t n, const std::chrono::time_point<Clock, Duration> &deadline,
                           std::error_code &ec) noexcept {
        return detail::obtained(
            dlock_semaphore_try_acquire(handle_.get(), n, detail::wait_ms(deadline)), ec);
    }
    void release(std::int64_t n, std::error_code &ec) noexcept {
        ec = detail::code(dlock_semaphore_release(handle_.get(), n));
    }
    void release(std::error_code &ec) noexcept {
        release(1, ec);
    }

#if DLOCK_CXX_EXCEPTIONS
    bool try_set_permits(std::int64_t permits) {
        return detail::value_or_throw("dlock_semaphore_try_set_permits", [&](std::error_code &ec) {
            return try_set_permits(permits, ec);
        });
    }
    void add_permits(std::int64_t delta) {
        detail::throw_if(detail::code(dlock_semaphore_add_permits(handle_.get(), delta)),
                         "dlock_semaphore_add_permits");
    }
    std::int64_t available() {
        return detail::value_or_throw("dlock_semaphore_available",
                                      [this](std::error_code &ec) { return available(ec); });
    }
    std::int64_t drain() {
        return detail::value_or_throw("dlock_semaphore_drain",
                                      [this](std::error_code &ec) { return drain(ec); });
    }
    void acquire(std::int64_t n = 1) {
        detail::throw_if(detail::code(dlock_semaphore_acquire(handle_.get(), n)),
                         "dlock_semaphore_acquire");
    }
    bool try_acquire(std::int64_t n = 1) {
        return detail::obtained_or_throw(dlock_semaphore_try_acquire(handle_.get(), n, 0),
                                         "dlock_semaphore_try_acquire");
    }
    template <class Rep, class Period>
    bool try_acquire_for(std::int64_t n, const std::chrono::duration<Rep, Period> &wait) {
        return detail::obtained_or_throw(
            dlock_semaphore_try_acquire(handle_.get(), n, detail::wait_ms(wait)),
            "dlock_semaphore_try_acquire");
    }
    template <class Rep, class Period>
    bool try_acquire_for(const std::chrono::duration<Rep, Period> &wait) {
        return try_acquire_for(1, wait);
    }
    template <class Clock, class Duration>
    bool try_acquire_until(std::int64_t n,
                           const std::chrono::time_point<Clock, Duration> &deadline) {
        return detail::obtained_or_throw(
            dlock_semaphore_try_acquire(handle_.get(), n, detail::wait_ms(deadline)),
            "dlock_semaphore_try_acquire");
    }
    template <class Clock, class Duration>
    bool try_acquire_until(const std::chrono::time_point<Clock, Duration> &deadline) {
        return try_acquire_until(1, deadline);
    }
    void release(std::int64_t n = 1) {
        detail::throw_if(detail::code(dlock_semaphore_release(handle_.get(), n)),
                         "dlock_semaphore_release");
    }
#endif
};

/* ---- latch -------------------------------------------------------------------------------- */

/* The count-down latch (dlock_latch_*; RCountDownLatch), with std::latch's calls. Unlike
 * std::latch its count is set after construction (try_set_count), by any client, and may be
 * set again once it reached zero; count_down() counts one. */
class latch : public detail::named_object<dlock_latch, dlock_latch_new, detail::latch_free,
                                          detail::latch_new> {
  public:
    using named_object::named_object;

    /* Sets the count if the latch is unset or finished; true if it did. */
    bool try_set_count(std::int64_t count, std::error_code &ec) noexcept {
        bool was_set = false;
        ec = detail::code(dlock_latch_try_set_count(handle_.get(), count, &was_set));
        return was_set;
    }
    /* The remaining count (0 when unset or finished). */
    std::int64_t count(std::error_code &ec) noexcept {
        std::int64_t out = 0;
        ec = detail::code(dlock_latch_count(handle_.get(), &out));
        return out;
    }
    void count_down(std::error_code &ec) noexcept {
        ec = detail::code(dlock_latch_count_down(handle_.get()));
    }
    /* One look: true if the count is zero. */
    bool try_wait(std::error_code &ec) noexcept {
        return detail::obtained(dlock_latch_await(handle_.get(), 0), ec);
    }
    void wait(std::error_code &ec) noexcept {
        ec = detail::code(dlock_latch_await(handle_.get(), DLOCK_FOREVER));
    }
    template <class Rep, class Period>
    bool try_wait_for(const std::chrono::duration<Rep, Period> &wait,
                      std::error_code &ec) noexcept {
        return detail::obtained(dlock_latch_await(handle_.get(), detail::wait_ms(wait)), ec);
    }
    template <class Clock, class Duration>
    bool try_wait_until(const std::chrono::time_point<Clock, Duration> &deadline,
                        std::error_code &ec) noexcept {
        return detail::obtained(dlock_latch_await(handle_.get(), detail::wait_ms(deadline)), ec);
    }
    /* count_down(), then wait(). */
    void arrive_and_wait(std::error_code &ec) noexcept {
        count_down(ec);
        if (!ec)
            wait(ec);
    }

#if DLOCK_CXX_EXCEPTIONS
    bool try_set_count(std::int64_t count) {
        return detail::value_or_throw("dlock_latch_try_set_count", [&](std::error_code &ec) {
            return try_set_count(count, ec);
        });
    }
    std::int64_t count() {
        return detail::value_or_throw("dlock_latch_count",
                                      [this](std::error_code &ec) { return count(ec); });
    }
    void count_down() {
        detail::throw_if(detail::code(dlock_latch_count_down(handle_.get())),
                         "dlock_latch_count_down");
    }
    bool try_wait() {
        return detail::obtained_or_throw(dlock_latch_await(handle_.get(), 0), "dlock_latch_await");
    }
    void wait() {
        detail::throw_if(detail::code(dlock_latch_await(handle_.get(), DLOCK_FOREVER)),
                         "dlock_latch_await");
    }
    template <class Rep, class Period>
    bool try_wait_for(const std::chrono::duration<Rep, Period> &wait) {
        return detail::obtained_or_throw(dlock_latch_await(handle_.get(), detail::wait_ms(wait)),
                                         "dlock_latch_await");
    }
    template <class Clock, class Duration>
    bool try_wait_until(const std::chrono::time_point<Clock, Duration> &deadline) {
        return detail::obtained_or_throw(
            dlock_latch_await(handle_.get(), detail::wait_ms(deadline)), "dlock_latch_await");
    }
    void arrive_and_wait() {
        count_down();
        wait();
    }
#endif
};

} // namespace dlock

namespace std {
template <> struct is_error_code_enum<dlock::errc> : true_type {};
} // namespace std

#endif /* DLOCK_HPP */
