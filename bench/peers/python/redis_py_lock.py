#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""redis_py_lock.py — the redis-py peer of dlock-bench: redis-py's Lock (Debian's
python3-redis) through the same workloads as dlock-bench, printing the same JSON lines.

    redis_py_lock.py --url unix:///path/redis.sock [--duration-ms 3000]
                     [--variant default|min_retry] [--placement TEXT] [--only WORKLOAD]

Workloads (threads of one process sharing one redis.Redis and its connection pool; every
thread its own Lock object, as the redis-py docs show it):

    uncontended_pair   T = 1, 8, 32 threads, a lock name each, loop acquire + release
    contended_handoff  P = 2, 4, 16 threads on ONE name, loop acquire, record, release
    hold_10ms          P = 4 threads on ONE name, 10 ms (a sleep) inside

measured as dlock-bench measures them (bench/contend.c): a pair from the acquire call to
the release return; for consecutive sections of different threads, hand-off = next
acquire returned - previous release returned, and from the previous release CALL;
fairness = min/max sections per thread. Every Lock has timeout=30 (the 30 s lease of
every dlock-bench workload) and blocks until it has the lock.

Variants: "default" is redis-py's own polling interval, sleep=0.1 s; "min_retry" is
sleep=0.001 s. redis-py accepts sleep=0, but that retries in a loop that never yields
the GIL to a sleep: 1 ms is the lowest interval that still sleeps, and the one node's
timers (the npm peers) and the naive lock poll at.

The GIL serialises the threads' Python work; that is part of what is measured."""

import argparse
import itertools
import json
import os
import platform
import resource
import sys
import threading
import time

try:
    import redis
    from redis.lock import Lock
except ImportError as exc:  # run.sh checks first; this is for a run by hand
    print(f"redis_py_lock.py: no redis-py ({exc}); apt-get install python3-redis", file=sys.stderr)
    sys.exit(3)

LEASE_S = 30
MAX_ERRORS = 1000
VARIANTS = {"default": 0.1, "min_retry": 0.001}


def now_ns():
    return time.monotonic_ns()  # CLOCK_MONOTONIC, as dlock-bench


def pct_us(sorted_ns, q):
    if not sorted_ns:
        return 0.0
    return sorted_ns[int(q * (len(sorted_ns) - 1) + 0.5)] / 1000.0


def latency(prefix, sorted_ns):
    return {
        f"{prefix}_n": len(sorted_ns),
        f"{prefix}_p50_us": round(pct_us(sorted_ns, 0.50), 3),
        f"{prefix}_p99_us": round(pct_us(sorted_ns, 0.99), 3),
        f"{prefix}_max_us": round(pct_us(sorted_ns, 1.0), 3),
    }


def cdf(sorted_ns):
    return {str(i): round(pct_us(sorted_ns, i / 100.0), 3) for i in range(101)}


class Counters:
    """INFO commandstats calls and the server's and this process's CPU, as bench_counters."""

    NAMES = ("evalsha", "eval", "publish", "subscribe", "unsubscribe", "set")

    def __init__(self, r):
        stats = r.info("commandstats")
        cpu = r.info("cpu")
        self.calls = {n: stats.get(f"cmdstat_{n}", {}).get("calls", 0) for n in self.NAMES}
        self.server_cpu_us = (cpu["used_cpu_user"] + cpu["used_cpu_sys"]) * 1e6
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.client_cpu_us = (ru.ru_utime + ru.ru_stime) * 1e6

    @staticmethod
    def per(before, after, n, unit):
        out = {}
        for name in Counters.NAMES:
            out[f"{name}_per_{unit}"] = round((after.calls[name] - before.calls[name]) / n, 3) if n else None
        out[f"server_cpu_us_per_{unit}"] = round((after.server_cpu_us - before.server_cpu_us) / n, 3) if n else None
        out[f"client_cpu_us_per_{unit}"] = round((after.client_cpu_us - before.client_cpu_us) / n, 3) if n else None
        return out


class Bench:
    def __init__(self, args):
        self.args = args
        self.sleep = VARIANTS[args.variant]
        self.r = redis.Redis.from_url(args.url)
        self.admin = redis.Redis.from_url(args.url)
        self.redis_version = self.admin.info("server")["redis_version"]
        self.transport = "unix" if args.url.startswith("unix://") else "tcp"
        self.tag = f"{os.getpid()}-{int(time.time())}"

    def lock(self, name):
        return Lock(self.r, name, timeout=LEASE_S, sleep=self.sleep)

    def emit(self, workload, params, figures, errors):
        obj = {
            "workload": workload,
            "transport": self.transport,
            "client": "redis-py",
            "client_version": redis.__version__,
            "runtime": f"python {platform.python_version()}",
            "redis_version": self.redis_version,
            "placement": self.args.placement,
            "params": dict(params, variant=self.args.variant, retry_ms=self.sleep * 1000,
                           duration_ms=self.args.duration_ms, lease_ms=LEASE_S * 1000,
                           api=f"redis.lock.Lock(timeout=30, sleep={self.sleep}).acquire() + .release(); "
                               "threads share one redis.Redis (connection pool)"),
            "figures": figures,
            "errors": errors,
        }
        print(json.dumps(obj, separators=(",", ":")), flush=True)

    # ---- uncontended_pair ----

    def pairs(self, threads):
        ready, go = threading.Barrier(threads + 1), threading.Barrier(threads + 1)
        deadline = [0]
        results = [None] * threads

        def worker(i):
            lk = self.lock(f"dlock-bench:{self.tag}:redis-py:pair:{threads}:{i}")
            lat, errors, end = [], 0, 0
            try:
                for _ in range(20):
                    lk.acquire()
                    lk.release()
            except redis.RedisError as exc:
                print(f"redis_py_lock.py: warm-up: {exc}", file=sys.stderr)
                errors += 1
            ready.wait()  # warmed up
            go.wait()  # the deadline is set
            t = now_ns()
            while t < deadline[0] and errors < MAX_ERRORS:
                try:
                    ok = lk.acquire()
                    lk.release()
                except redis.RedisError as exc:
                    print(f"redis_py_lock.py: {exc}", file=sys.stderr)
                    ok = False
                e = now_ns()
                if ok:
                    lat.append(e - t)
                else:
                    errors += 1
                t = e
            results[i] = (lat, errors, t)

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        ready.wait()
        before = Counters(self.admin)
        start = now_ns()
        deadline[0] = start + self.args.duration_ms * 1_000_000
        go.wait()
        for t in ts:
            t.join()
        after = Counters(self.admin)
        lat = sorted(itertools.chain.from_iterable(r[0] for r in results))
        errors = sum(r[1] for r in results)
        end = max([start] + [r[2] for r in results])
        seconds = (end - start) / 1e9
        figures = {"pairs": len(lat), "pairs_per_s": round(len(lat) / seconds, 3) if seconds > 0 else 0}
        figures.update(latency("pair", lat))
        figures.update(Counters.per(before, after, len(lat), "pair"))
        self.emit("uncontended_pair", {"threads": threads, "clients": 1, "connections": threads},
                  figures, errors)

    # ---- contended_handoff / hold_10ms ----

    def contend(self, workload, workers, hold_s):
        name = f"dlock-bench:{self.tag}:redis-py:{workload}:{workers}"
        ready, go = threading.Barrier(workers + 1), threading.Barrier(workers + 1)
        deadline = [0]
        log = []  # [worker, acquire_ns, release_start_ns, release_ns]; appended inside the lock
        counts = [0] * workers
        errs = [0] * workers

        def worker(w):
            lk = self.lock(name)
            try:
                lk.acquire()
                lk.release()
            except redis.RedisError as exc:
                print(f"redis_py_lock.py: warm-up: {exc}", file=sys.stderr)
                errs[w] += 1
            ready.wait()  # warmed up
            go.wait()  # the deadline is set
            while now_ns() < deadline[0] and errs[w] < MAX_ERRORS:
                try:
                    lk.acquire()
                except redis.RedisError as exc:
                    print(f"redis_py_lock.py: acquire: {exc}", file=sys.stderr)
                    errs[w] += 1
                    continue
                entry = [w, now_ns(), 0, 0]
                log.append(entry)  # inside the lock: the lock orders the log
                if hold_s:
                    time.sleep(hold_s)
                entry[2] = now_ns()
                try:
                    lk.release()
                except redis.RedisError as exc:
                    print(f"redis_py_lock.py: release: {exc}", file=sys.stderr)
                    errs[w] += 1
                entry[3] = now_ns()
                counts[w] += 1

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
        for t in ts:
            t.start()
        ready.wait()
        before = Counters(self.admin)
        start = now_ns()
        deadline[0] = start + self.args.duration_ms * 1_000_000
        go.wait()
        for t in ts:
            t.join()
        after = Counters(self.admin)
        self.emit(workload, {"workers": workers, "mode": "threads", "clients": 1,
                             "connections": workers, "hold_us": int(hold_s * 1e6)},
                  contention_figures(log, counts, start, hold_s, before, after), sum(errs))


def contention_figures(log, counts, start, hold_s, before, after):
    """The figures of bench_contend from a log ordered by the lock."""
    handoff, from_start = [], []
    end = start
    for i, s in enumerate(log):
        end = max(end, s[3])
        if i and s[0] != log[i - 1][0]:
            handoff.append(s[1] - log[i - 1][3])
            from_start.append(s[1] - log[i - 1][2])
    handoff.sort()
    from_start.sort()
    seconds = (end - start) / 1e9
    sections = len(log)
    per_s = sections / seconds if seconds > 0 else 0
    lo, hi = min(counts), max(counts)
    f = {"sections": sections, "sections_per_s": round(per_s, 3)}
    if hold_s:
        f["ratio_to_ideal_sections_per_s"] = round(per_s * hold_s, 3)
    f["handoffs"] = len(handoff)
    f["handoff_share"] = round(len(handoff) / (sections - 1), 3) if sections > 1 else None
    f.update(latency("handoff", handoff))
    f.update({"min_sections_per_worker": lo, "max_sections_per_worker": hi,
              "fairness_min_max": round(lo / hi, 3) if hi else None})
    f.update(latency("handoff_from_release_start", from_start))
    f.update(latency("release", sorted(s[3] - s[2] for s in log)))
    f.update(Counters.per(before, after, sections, "section"))
    f["handoff_cdf_us"] = cdf(handoff)
    f["handoff_from_release_start_cdf_us"] = cdf(from_start)
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default=os.environ.get("DLOCK_URL", "redis://127.0.0.1:6379"))
    ap.add_argument("--duration-ms", type=int, default=1000 if os.environ.get("QUICK") == "1" else 3000)
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="default")
    ap.add_argument("--placement", default="not pinned")
    ap.add_argument("--only", choices=["uncontended_pair", "contended_handoff", "hold_10ms"])
    args = ap.parse_args()
    b = Bench(args)
    if args.only in (None, "uncontended_pair"):
        for t in (1, 8, 32):
            b.pairs(t)
    if args.only in (None, "contended_handoff"):
        for p in (2, 4, 16):
            b.contend("contended_handoff", p, 0)
    if args.only in (None, "hold_10ms"):
        b.contend("hold_10ms", 4, 0.010)


if __name__ == "__main__":
    main()
