/* SPDX-License-Identifier: MIT */
/* cpp.cpp — a tour of the C++ face (include/dlock.hpp): dlock's locks under the
 * standard library's own guards.
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the program
 * exits 0 only if each one answered as this comment says:
 *
 *   1. a client; std::lock_guard on a reentrant lock
 *   2. four threads move money between two accounts under std::scoped_lock on two locks,
 *      two of them naming the locks in the other order: no deadlock, no update lost
 *   3. while one thread holds a lock, another's try_lock_for gives up after its wait
 *   4. a fenced lock's tokens rise from holder to holder
 *   5. a read-write lock: two readers at once under std::shared_lock, the writer kept out
 *   6. errors: a bad name as a std::error_code of the "dlock" category, and as a
 *      std::system_error thrown by the constructor that has no error_code
 *
 * Build: it is example_cpp in <build>/examples (cmake, when a C++ compiler is found);
 * run it with scripts/run-demo.sh build/examples/example_cpp */
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "dlock.hpp"

using namespace std::chrono_literals;

namespace {

bool check(bool ok, const char *what) {
    if (!ok)
        std::fprintf(stderr, "FAILED: %s\n", what);
    return ok;
}

/* Two balances that only the two dlock locks protect: a transfer reads both, pauses, and
 * writes both, so two transfers at once would lose money. */
struct accounts {
    long a = 1000;
    long b = 1000;
};

void transfer(long &from, long &to, long amount) {
    const long from_before = from;
    const long to_before = to;
    std::this_thread::sleep_for(1ms);
    from = from_before - amount;
    to = to_before + amount;
}

bool step_lock_guard(dlock::client &client) {
    dlock::reentrant_lock order(client, "cpp:orders:42");
    std::lock_guard<dlock::reentrant_lock> hold(order);
    return check(order.is_held() && order.hold_count() == 1, "lock_guard holds the lock");
}

bool step_scoped_lock(dlock::client &client) {
    dlock::reentrant_lock lock_a(client, "cpp:account:a");
    dlock::reentrant_lock lock_b(client, "cpp:account:b");
    accounts money;
    const int threads = 4;
    const int transfers = 10;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; t++) {
        workers.emplace_back([&, t] {
            for (int i = 0; i < transfers; i++) {
                if (t % 2 == 0) {
                    std::scoped_lock both(lock_a, lock_b);
                    transfer(money.a, money.b, 10);
                } else { /* the other order: std::scoped_lock still cannot deadlock */
                    std::scoped_lock both(lock_b, lock_a);
                    transfer(money.b, money.a, 5);
                }
            }
        });
    }
    for (std::thread &w : workers)
        w.join();
    const long moved = (threads / 2) * transfers * (10 - 5);
    return check(money.a == 1000 - moved && money.b == 1000 + moved,
                 "scoped_lock kept every transfer whole") &&
           check(!lock_a.is_locked() && !lock_b.is_locked(), "both locks free at the end");
}

bool step_try_lock_for(dlock::client &client) {
    dlock::reentrant_lock lock(client, "cpp:busy");
    std::lock_guard<dlock::reentrant_lock> hold(lock);
    bool got = true;
    std::chrono::steady_clock::duration waited{};
    std::thread other([&] {
        const auto start = std::chrono::steady_clock::now();
        got = lock.try_lock_for(200ms);
        waited = std::chrono::steady_clock::now() - start;
    });
    other.join();
    return check(!got, "try_lock_for on a held lock gives up") &&
           check(waited >= 200ms, "and only after its wait");
}

bool step_fencing(dlock::client &client) {
    dlock::fenced_lock lock(client, "cpp:fenced");
    std::uint64_t first = 0;
    std::uint64_t second = 0;
    {
        std::lock_guard<dlock::fenced_lock> hold(lock);
        first = lock.token();
    }
    std::thread([&] {
        std::lock_guard<dlock::fenced_lock> hold(lock);
        second = lock.token();
    }).join();
    return check(first > 0 && second > first, "fencing tokens rise from holder to holder");
}

bool step_shared_lock(dlock::client &client) {
    dlock::rw_lock table(client, "cpp:table");
    std::shared_lock<dlock::rw_lock> reading(table);
    bool second_reader = false;
    bool writer = true;
    std::thread([&] {
        std::shared_lock<dlock::rw_lock> also_reading(table, std::try_to_lock);
        second_reader = also_reading.owns_lock();
        writer = table.try_lock(); /* a write hold while readers hold it: refused */
        if (writer)
            table.unlock();
    }).join();
    return check(second_reader, "two readers at once") &&
           check(!writer, "no writer while readers hold it");
}

bool step_errors(dlock::client &client) {
    std::error_code ec;
    dlock::reentrant_lock nameless(client, "", ec);
    bool ok = check(ec == dlock::errc::invalid && !nameless, "an empty name is errc::invalid") &&
              check(std::string(ec.category().name()) == "dlock", "of the dlock category");
    try {
        dlock::fair_lock thrown(client, "");
        ok = check(false, "the throwing constructor throws");
    } catch (const std::system_error &e) {
        std::printf("caught: %s\n", e.what());
        ok = check(e.code() == dlock::errc::invalid, "std::system_error carries the code") && ok;
    }
    return ok;
}

} // namespace

int main() {
    try {
        dlock::client client{dlock::options()}; /* $DLOCK_URL, else redis://127.0.0.1:6379 */
        const bool ok = step_lock_guard(client) && step_scoped_lock(client) &&
                        step_try_lock_for(client) && step_fencing(client) &&
                        step_shared_lock(client) && step_errors(client);
        if (!ok)
            return 1;
    } catch (const std::system_error &e) {
        std::fprintf(stderr, "FAILED: %s (%s)\n", e.what(), e.code().message().c_str());
        return 1;
    }
    std::puts("cpp: every step answered as expected");
    return 0;
}
