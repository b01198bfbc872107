#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""report.py — the tables and the picture of one benchmark run (bench/run.sh calls it).

    bench/report.py RESULTS.json [--png OUT.png] [--png-throughput OUT.png] [--elapsed S]
                    [--load TEXT] [--command TEXT] [--baseline EARLIER.json]

RESULTS.json is the JSON array bench/run.sh wrote: the objects of dlock-bench (dlock, the
floor, the naive lock) and of the peers (bench/peers/). Prints, on stdout:

  1. the floor and every dlock workload, each figure with its ratio to the floor (the floor
     dlock-bench measured just before that workload, in brackets);
  2. dlock against the naive lock and each peer, on the workloads they all run: each value
     and, in brackets, its ratio to dlock's (peer / dlock: above 1 is more pairs or
     sections per second, or a longer latency, than dlock's);
  3. each implementation's latencies against the floor (the targets of BENCHMARKS.md:
     pair p50 within 1.2x of 2 PING round trips, hand-off within 1.5x of one PUBLISH
     delivery + one PING);
  4. each of issue 20's targets 1-7: the measured figure, the bound, the ratio and "met" or
     "missed" ("see note" where there is no fixed bound, "no data" where the run lacks the
     figure), every figure from this run;
  5. a Cluster's contended hand-off (bench/cluster.sh's lines, when the run has them);
  6. what sync_replicas=auto costs against 0 with one replica (bench/sync_replicas.sh's
     object, when the run has it): pairs/s per round, the cost, WAITs per pair, the bound;
  7. issue 29's items 1, 2 and 4 the same way: dlock against the naive lock of this run, the
     kept figures (32 threads, longest wait, fairness, wakes, overlaps), and the async face
     and the watchdog against --baseline, an earlier run (printed, not judged, without one);
with --png-throughput draws pairs/s against threads (uncontended_pair) for dlock, the naive
lock and the peers, with the async face and the script ceilings as lines; and with --png draws the hand-off latency distributions (CDF, from the release call to
the next acquire returning) of contended_handoff with P = 2, 4, 16 threads/workers, one
line per implementation, with gnuplot. Standard library only."""

import argparse
import json
import math
import shutil
import subprocess
import sys

IMPLS = [  # (key, column label, legend)
    ("dlock", "dlock", "dlock (this library), blocking face, threads share one client"),
    ("naive", "naive", "SET NX PX + compare-and-delete over hiredis, 1 ms polling, a connection per thread"),
    ("layout_floor", "layout", "dlock's acquire.lua + release.lua alone over hiredis, a connection per thread (the layout's ceiling)"),
    ("redis-py", "rpy", "redis-py Lock, default sleep 100 ms, threads share one redis.Redis"),
    ("redis-py/min", "rpy/min", "redis-py Lock, sleep 1 ms"),
    ("redlock", "redlock", "npm redlock 4 on one ioredis client, default retryDelay 200 ms + jitter 100 ms"),
    ("redlock/min", "redlock/min", "npm redlock, retryDelay 0, jitter 0 (node: 1 ms)"),
    ("redis-semaphore", "rsem", "npm redis-semaphore Mutex on ioredis, default retryInterval 10 ms"),
    ("redis-semaphore/min", "rsem/min", "npm redis-semaphore Mutex, retryInterval 0 (node: 1 ms)"),
]
LABEL = {k: l for k, l, _ in IMPLS}


def impl_of(o):
    c = o.get("client", "")
    if o.get("params", {}).get("variant") == "min_retry":
        c += "/min"
    return c


def mode_of(o):
    return "processes" if o.get("params", {}).get("mode") == "processes" else "threads"


def r1(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"


def r2(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def r0(x):
    return "-" if x is None else f"{x:.0f}"


def big(x):
    """A figure with as many digits as it deserves."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def per(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def table(rows, out):
    """Prints rows (lists of strings) as aligned columns; a row of one "" is a blank line."""
    widths = {}
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths.get(i, 0), len(cell))
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip(), file=out)


# ---- 1. the floor and dlock ---------------------------------------------------------------


def dlock_rows(objs):
    rows = [["workload", "params", "figure", "value", "ratio to floor"]]

    def row(w, p, f, v, ratio=""):
        rows.append([w, p, f, v, ratio])

    for o in objs:
        if o.get("client") not in ("dlock", "hiredis", "redis-benchmark"):
            continue
        w, p, f = o["workload"], o.get("params", {}), o.get("figures", {})
        if w.startswith("cluster_"):
            continue  # section 5 (cluster_rows)
        fl = f"({r1(f.get('floor_ping_p50_us'))})"
        pubping = f"({r1(f.get('floor_publish_p50_us'))}+{r1(f.get('floor_ping_p50_us'))})"
        if w == "floor_ping":
            row(w, o["transport"], "rtt p50 / p99 us", f"{r1(f.get('rtt_p50_us'))} / {r1(f.get('rtt_p99_us'))}")
            row(w, o["transport"], "CPU us per ping client, server",
                f"{r1(f.get('client_cpu_us_per_ping'))}, {r1(f.get('server_cpu_us_per_ping'))}")
        elif w == "floor_publish":
            row(w, o["transport"], "delivery p50 / p99 us",
                f"{r1(f.get('delivery_p50_us'))} / {r1(f.get('delivery_p99_us'))}")
            row(w, o["transport"], "CPU us per message client, server",
                f"{r1(f.get('client_cpu_us_per_message'))}, {r1(f.get('server_cpu_us_per_message'))}")
        elif w == "floor_script":
            ps = f"-P {p.get('pipeline')} -c {p.get('connections')}"
            row(w, ps, "lock-sized scripts/s", r0(f.get("scripts_per_s")), "")
            row(w, ps, "= pairs/s ceiling", r0(f.get("pairs_per_s_ceiling")), "")
            row(w, ps, "server CPU us per script", r1(f.get("server_cpu_us_per_script")), "")
        elif w in ("uncontended_pair", "semaphore_pair", "client_pair"):
            ps = f"T={p.get('threads')}" + (" a client each" if w == "client_pair" else "")
            row(w, ps, "pairs/s", r0(f.get("pairs_per_s")))
            row(w, ps, "pair p50 / p99 us", f"{r1(f.get('pair_p50_us'))} / {r1(f.get('pair_p99_us'))}",
                f"{r2(f.get('ratio_pair_p50_to_2x_ping_p50'))}x 2 PING {fl}")
            if "client_ping_p50_us" in f:
                row(w, ps, "dlock_client_ping p50 us", r1(f.get("client_ping_p50_us")),
                    f"{r2(per(f.get('client_ping_p50_us'), f.get('floor_ping_p50_us')))}x PING")
            row(w, ps, "EVALSHA, PUBLISH per pair", f"{r2(f.get('evalsha_per_pair'))}, {r2(f.get('publish_per_pair'))}")
            row(w, ps, "CPU us per pair client, server",
                f"{r1(f.get('client_cpu_us_per_pair'))}, {r1(f.get('server_cpu_us_per_pair'))}")
            if "reply_spins_per_pair" in f:  # the lone caller's spin (dlock_options.reply_spin_us)
                row(w, ps, "waits spun, replies caught, us spun per pair",
                    f"{r2(f.get('reply_spins_per_pair'))}, {r2(f.get('reply_spin_hits_per_pair'))}, "
                    f"{r1(f.get('reply_spin_us_per_pair'))}")
        elif w == "async_pairs":
            ps = f"{p.get('in_flight')} in flight, 1 thread"
            row(w, ps, "pairs/s", r0(f.get("pairs_per_s")))
            row(w, ps, "pair p50 / p99 us", f"{r1(f.get('pair_p50_us'))} / {r1(f.get('pair_p99_us'))}")
            row(w, ps, "EVALSHA, PUBLISH per pair", f"{r2(f.get('evalsha_per_pair'))}, {r2(f.get('publish_per_pair'))}")
            row(w, ps, "CPU us per pair client, server",
                f"{r1(f.get('client_cpu_us_per_pair'))}, {r1(f.get('server_cpu_us_per_pair'))}")
        elif w in ("contended_handoff", "hold_10ms", "semaphore_contended"):
            ps = f"P={p.get('workers')} {p.get('mode')}"
            row(w, ps, "sections/s", r0(f.get("sections_per_s")),
                f"{r2(f.get('ratio_to_ideal_sections_per_s'))}x the ideal 100/s" if w == "hold_10ms" else "")
            row(w, ps, "hand-off p50 / p99 us", f"{r1(f.get('handoff_p50_us'))} / {r1(f.get('handoff_p99_us'))}",
                f"{r2(f.get('ratio_handoff_p50_to_floor'))}x PUB+PING {pubping}")
            row(w, ps, "from release call p50 / p99 us",
                f"{r1(f.get('handoff_from_release_start_p50_us'))} / {r1(f.get('handoff_from_release_start_p99_us'))}",
                f"{r2(f.get('ratio_handoff_from_release_start_p50_to_floor'))}x PUB+PING")
            if "release_p50_us" in f:
                row(w, ps, "release call alone p50 / p99 us",
                    f"{r1(f.get('release_p50_us'))} / {r1(f.get('release_p99_us'))}",
                    f"{r2(per(f.get('release_p50_us'), f.get('floor_ping_p50_us')))}x PING")
            row(w, ps, "hand-offs / sections", r2(f.get("handoff_share")))
            row(w, ps, "fairness min/max", r2(f.get("fairness_min_max")))
            row(w, ps, "EVALSHA, SUBSCRIBE per section",
                f"{r2(f.get('evalsha_per_section'))}, {r2(f.get('subscribe_per_section'))}")
            if "wakes_per_section" in f:
                row(w, ps, "waiters woken per section (release)", r2(f.get("wakes_per_section")))
            row(w, ps, "CPU us per section client, server",
                f"{r1(f.get('client_cpu_us_per_section'))}, {r1(f.get('server_cpu_us_per_section'))}")
        elif w == "renewal_scale":
            ps = f"N={p.get('locks')}"
            row(w, ps, "scripts per period (1 s)", big(f.get("scripts_per_period")),
                f"{big(f.get('locks_per_script'))} locks per script")
            row(w, ps, "commands per period (in scripts too)", big(f.get("commands_per_period")),
                f"{r2(per(f.get('commands_per_period'), p.get('locks')))} per lock")
            row(w, ps, "client CPU ms per period", r2(f.get("client_cpu_ms_per_period")),
                f"{r2(f.get('client_cpu_us_per_lock_per_period'))} us per lock")
            row(w, ps, "server CPU ms per period", r2(f.get("server_cpu_ms_per_period")))
            row(w, ps, "client RSS bytes per held lock", r0(f.get("rss_bytes_per_lock")),
                f"RSS {r1(f.get('rss_mb_held'))} MB")
            row(w, ps, "lost, sample held", f"{f.get('lost')}, {f.get('sample_held')}/{f.get('sample')}")
            row(w, ps, "acquire all / release all ms",
                f"{r1(f.get('acquire_all_ms'))} / {r1(f.get('release_all_ms'))}")
        elif w == "waiters_scale":
            ps = f"N={p.get('waiters')}"
            row(w, ps, "subscriber connections, channels", f"{f.get('subscriber_connections')}, {f.get('channels')}")
            row(w, ps, "client RSS bytes per waiter", r0(f.get("rss_bytes_per_waiter")))
            row(w, ps, "all subscribed / released / woken ms",
                f"{r1(f.get('subscribe_all_ms'))} / {r1(f.get('release_all_ms'))} / {r1(f.get('wake_all_ms'))}")
            row(w, ps, "wake p50 / p99 us (release cb -> acquire cb)",
                f"{r1(f.get('wake_p50_us'))} / {r1(f.get('wake_p99_us'))}")
            row(w, ps, "EVALSHA, PUBLISH per waiter", f"{r2(f.get('evalsha_per_waiter'))}, {r2(f.get('publish_per_waiter'))}")
        elif w == "fair_order":
            ps = f"P={p.get('waiters')}"
            row(w, ps, "order violations", str(f.get("order_violations")))
            row(w, ps, "hand-off p50 / p99 us", f"{r1(f.get('handoff_p50_us'))} / {r1(f.get('handoff_p99_us'))}",
                f"{r2(f.get('ratio_handoff_p50_to_floor'))}x PUB+PING {pubping}")
            row(w, ps, "hand-offs/s", r0(f.get("handoffs_per_s")))
        elif w == "rwlock_mix":
            ps = f"T={p.get('threads')} {p.get('write_pct')}% w"
            row(w, ps, "sections/s (reads, writes)",
                f"{r0(f.get('sections_per_s'))} ({r0(f.get('reads_per_s'))}, {r0(f.get('writes_per_s'))})")
            row(w, ps, "read / write acquire p50 us",
                f"{r1(f.get('read_acquire_p50_us'))} / {r1(f.get('write_acquire_p50_us'))}")
            row(w, ps, "violations, most readers inside",
                f"{f.get('violations')}, {f.get('most_readers_inside')}")
        elif w == "redlock_acquire":
            ps = f"{p.get('masters')} masters {'fenced' if p.get('fenced') else 'plain'}"
            acquire = f.get("acquire_p50_us")
            row(w, ps, "iterations (T=1)", r0(f.get("iterations")))
            row(w, ps, "RedLock acquire p50 / p99 us", f"{r1(acquire)} / {r1(f.get('acquire_p99_us'))}",
                f"{r2(per(acquire, f.get('floor_ping_p50_us')))}x PING {fl}")
            row(w, ps, "one member's acquire p50 us", r1(f.get("one_lock_acquire_p50_us")),
                f"RedLock = {r2(f.get('ratio_acquire_p50_to_one_lock_acquire_p50'))}x it")
            row(w, ps, "5 members one after another p50 us", r1(f.get("five_sequential_acquire_p50_us")),
                f"RedLock = {r2(f.get('ratio_acquire_p50_to_five_sequential_p50'))}x it")
            row(w, ps, "dlock_client_ping p50 us", r1(f.get("client_ping_p50_us")),
                f"{r2(per(f.get('client_ping_p50_us'), f.get('floor_ping_p50_us')))}x PING")
        else:  # a workload this report does not know yet: its scalar figures
            ps = json.dumps({k: v for k, v in p.items() if k != "api"}, separators=(",", ":"))
            for k, v in f.items():
                if isinstance(v, (int, float)):
                    row(w, ps, k, big(v))
    return rows


# ---- 2. and 3. dlock against the others -----------------------------------------------------

COMPARED = [  # (workload, size key, sizes, modes, [(figure label, figure key)])
    ("uncontended_pair", "threads", (1, 8, 32), ("threads",),
     [("pairs/s", "pairs_per_s"), ("pair p50 us", "pair_p50_us"), ("pair p99 us", "pair_p99_us")]),
    ("contended_handoff", "workers", (2, 4, 16), ("threads", "processes"),
     [("sections/s", "sections_per_s"),
      ("hand-offs / sections", "handoff_share"),
      ("hand-off from release call p50 us", "handoff_from_release_start_p50_us"),
      ("hand-off from release call p99 us", "handoff_from_release_start_p99_us"),
      ("hand-off from release return p50 us", "handoff_p50_us"),
      ("fairness min/max", "fairness_min_max")]),
    ("hold_10ms", "workers", (4,), ("threads", "processes"),
     [("sections/s (ideal 100)", "sections_per_s"),
      ("hand-offs / sections", "handoff_share"),
      ("hand-off from release call p50 us", "handoff_from_release_start_p50_us"),
      ("release call alone p50 us", "release_p50_us"),
      ("fairness min/max", "fairness_min_max")]),
]


def index(objs):
    by = {}
    for o in objs:
        p = o.get("params", {})
        size = p.get("threads", p.get("workers"))
        by[(impl_of(o), o["workload"], size, mode_of(o))] = o
    return by


def present_impls(objs):
    have = {impl_of(o) for o in objs}
    return [k for k, _, _ in IMPLS if k in have]


def comparison_rows(objs):
    by = index(objs)
    impls = present_impls(objs)
    rows = [["workload", "params", "figure"] + [LABEL[i] for i in impls]]
    for workload, _, sizes, modes, figures in COMPARED:
        for mode in modes:
            for size in sizes:
                if ("dlock", workload, size, mode) not in by:
                    continue
                cols = [by.get((i, workload, size, mode)) for i in impls]
                if sum(c is not None for c in cols) < 2:
                    continue
                base = cols[0]["figures"] if cols[0] else {}
                for label, key in figures:
                    cells = []
                    for c in cols:
                        v = c["figures"].get(key) if c else None
                        if c is None or v is None:
                            cells.append("-")
                            continue
                        cell = big(v)
                        if c is not cols[0]:
                            ratio = per(v, base.get(key))
                            if ratio is not None and ratio > 0 and key not in ("handoff_share", "fairness_min_max"):
                                cell += f" ({r2(ratio)})"
                        cells.append(cell)
                    rows.append([workload, f"{'T' if workload == 'uncontended_pair' else 'P'}={size} {mode}", label] + cells)
    return rows


def floor_of(objs):
    ping = next((o["figures"].get("rtt_p50_us") for o in objs
                 if o["workload"] == "floor_ping" and o.get("transport") == "unix"), None)
    pub = next((o["figures"].get("delivery_p50_us") for o in objs if o["workload"] == "floor_publish"), None)
    return ping, pub


def floor_rows(objs):
    by = index(objs)
    impls = present_impls(objs)
    ping, pub = floor_of(objs)
    rows = [["figure", "floor"] + [LABEL[i] for i in impls]]
    for size in (1, 8, 32):
        cells = []
        for i in impls:
            o = by.get((i, "uncontended_pair", size, "threads"))
            f = o["figures"] if o else {}
            fp = f.get("floor_ping_p50_us") or ping  # dlock-bench's own floor beside it, else the run's
            cells.append(r2(per(f.get("pair_p50_us"), 2 * fp)) + "x" if o and fp else "-")
        rows.append([f"uncontended_pair T={size}: pair p50 / 2 PING", "1.2x target"] + cells)
    for mode, sizes in (("threads", (2, 4, 16)), ("processes", (2, 4))):
        for size in sizes:
            cells = []
            for i in impls:
                o = by.get((i, "contended_handoff", size, mode))
                f = o["figures"] if o else {}
                fl = (f["floor_ping_p50_us"] + f["floor_publish_p50_us"]) if f.get("floor_ping_p50_us") else \
                    (ping + pub if ping and pub else None)
                cells.append(r2(per(f.get("handoff_from_release_start_p50_us"), fl)) + "x" if o and fl else "-")
            rows.append([f"contended_handoff P={size} {mode}: from release call p50 / (PUB+PING)",
                         "1.5x target"] + cells)
    return rows


# ---- 4. issue 20's targets: met or missed, from the figures of this run ----------------------

PEERS = ("redis-py", "redis-py/min", "redlock", "redlock/min", "redis-semaphore", "redis-semaphore/min")


def wait_max_of(f):
    """The longest acquire wait of a contended row: a figure named *wait*max_us when the
    workload reports one; else None."""
    keys = sorted(k for k in f if "wait" in k and k.endswith("max_us"))
    return (f[keys[0]], keys[0]) if keys else (None, None)


def judged_rows(by, rows):
    """The three helpers of a targets table (target_rows, issue29_rows) that appends to rows:
    fig(impl, workload, size, mode="threads") -> that object's figures ({} when absent);
    check(id, label, value, bound, ratio, ok, fmt=big) -> a row "met" / "missed" / "no data";
    note(id, label, value) -> a row "see note"."""
    def fig(impl, workload, size, mode="threads"):
        o = by.get((impl, workload, size, mode))
        return o["figures"] if o else {}

    def check(tid, label, value, bound, ratio, ok, fmt=big):
        verdict = "no data" if value is None or ratio is None else ("met" if ok else "missed")
        rows.append([tid, label, fmt(value), bound, r2(ratio) if ratio is not None else "-", verdict])

    def note(tid, label, value):
        rows.append([tid, label, value, "-", "-", "see note"])

    return fig, check, note


def target_rows(objs):
    """[target, figure, measured, bound, ratio, verdict] per line; verdict is met, missed,
    see note (no fixed bound) or no data (the run lacks a figure)."""
    by = index(objs)
    rows = [["target", "figure", "measured", "bound", "ratio", "verdict"]]
    fig, check, note = judged_rows(by, rows)

    # 1. uncontended pair p50, 1 thread, against two PINGs measured just before it
    f = fig("dlock", "uncontended_pair", 1)
    ratio = per(f.get("pair_p50_us"), 2 * f["floor_ping_p50_us"]) if f.get("floor_ping_p50_us") else None
    check("1", f"pair p50 us, T=1 / 2x PING p50 ({r1(f.get('floor_ping_p50_us'))} us)", f.get("pair_p50_us"),
          "<= 1.25x", ratio, ratio is not None and ratio <= 1.25)

    # 2. one client, 32 threads: 4x one thread, and the best peer's best concurrent figure
    t1, t32 = fig("dlock", "uncontended_pair", 1).get("pairs_per_s"), fig("dlock", "uncontended_pair", 32).get("pairs_per_s")
    ratio = per(t32, t1)
    check("2a", f"pairs/s T=32 / T=1 ({big(t1)}), one client", t32, ">= 4x", ratio, ratio is not None and ratio >= 4)
    best, who = None, None
    for peer in PEERS:
        for size in (8, 32):
            v = fig(peer, "uncontended_pair", size).get("pairs_per_s")
            if v is not None and (best is None or v > best):
                best, who = v, f"{LABEL[peer]} T={size}"
    ratio = per(t32, best)
    check("2b", f"pairs/s T=32 / best peer ({who}: {big(best)})", t32 if best else None, ">= 1x", ratio,
          ratio is not None and ratio >= 1)

    # 3. the async face against the pipelined script ceiling, per the scripts a pair needs
    a = next((o["figures"] for o in objs if o["workload"] == "async_pairs" and o.get("client") == "dlock"), {})
    ceiling = next((o["figures"].get("scripts_per_s") for o in objs
                    if o["workload"] == "floor_script" and o.get("params", {}).get("pipeline") == 16), None)
    scripts = (a.get("evalsha_per_pair") or 0) + (a.get("eval_per_pair") or 0)
    limit = ceiling / scripts if ceiling and scripts else None
    ratio = per(a.get("pairs_per_s"), limit)
    check("3", f"async pairs/s, 256 in flight / (floor_script -P 16 {big(ceiling)} / {r2(scripts)} scripts)",
          a.get("pairs_per_s"), ">= 0.80x", ratio, ratio is not None and ratio >= 0.8)

    # 4. 8 threads with a client each against the naive lock's 8 threads (a connection each)
    own, naive = fig("dlock", "client_pair", 8).get("pairs_per_s"), fig("naive", "uncontended_pair", 8).get("pairs_per_s")
    ratio = per(own, naive)
    check("4", f"pairs/s T=8 a client each / naive T=8 ({big(naive)})", own, ">= 1x", ratio,
          ratio is not None and ratio >= 1)
    # what caps 4: the layout's own ceiling, dlock's two scripts over plain hiredis
    floor = fig("layout_floor", "uncontended_pair", 8).get("pairs_per_s")
    if floor:
        note("4'", f"layout_floor T=8 (dlock's scripts, plain hiredis) {big(floor)} pairs/s: "
             f"dlock {r2(per(own, floor))}x of it, naive {r2(per(naive, floor))}x", big(floor))

    # 5. four processes in a tight loop on one lock
    f = fig("dlock", "contended_handoff", 4, "processes")
    wait, key = wait_max_of(f)
    if key:
        check("5a", f"P=4 processes: longest wait ({key})", wait, "<= 10000 us", per(wait, 10000),
              wait is not None and wait <= 10000)
    else:
        rows.append(["5a", "P=4 processes: longest acquire wait", "-", "<= 10000 us", "-",
                     "no data (the workload reports no wait)"])
    gap = f.get("handoff_from_release_start_max_us")
    note("5a'", "P=4 processes: longest hand-off from the release call us", big(gap))
    check("5b", "P=4 processes: sections min/max per process", f.get("fairness_min_max"), ">= 0.5",
          f.get("fairness_min_max"), (f.get("fairness_min_max") or 0) >= 0.5, r2)
    check("5c", "P=4 processes: hand-offs / sections", f.get("handoff_share"), ">= 0.5",
          f.get("handoff_share"), (f.get("handoff_share") or 0) >= 0.5, r2)
    note("5d", "P=4 processes: sections/s (>= 80 % of an earlier run's)", big(f.get("sections_per_s")))
    t = fig("dlock", "contended_handoff", 4, "threads")
    if "wakes_per_section" in f:
        woken = f.get("wakes_per_section")
        check("5e", "P=4 processes: waiters woken per release (4 threads of one client: "
              f"{r2(t.get('wakes_per_section'))})", woken, "<= 1", woken,
              woken is not None and woken <= 1.0, r2)

    # 6. renewal: 100k held leases within 1,000 scripts per period (bench/renewal.c decides)
    r = next((o for o in objs if o["workload"] == "renewal_target"), None)
    if r:
        rf = r["figures"]
        n = r.get("params", {}).get("locks")
        ok = bool(rf.get("met"))
        rows.append(["6", f"scripts per period, {n} watchdog leases (client CPU "
                     f"{r2(rf.get('client_cpu_ms_per_period'))} ms per period, {rf.get('lost')} lost)",
                     big(rf.get("scripts_per_period")), f"<= {big(rf.get('target_scripts_per_period'))}",
                     r2(per(rf.get("scripts_per_period"), rf.get("target_scripts_per_period"))),
                     "met" if ok else "missed"])
    else:
        rows.append(["6", "renewal_target (dlock-bench-renewal)", "-", "<= 1000", "-", "no data"])

    # 7. the fair lock, the semaphore and the read-write lock: their figures, no fixed bound
    for o in objs:  # fair_order's size is params.waiters, which index() does not key on
        if o["workload"] == "fair_order" and o.get("client") == "dlock":
            f = o["figures"]
            note("7", f"fair_order P={o['params'].get('waiters')}: hand-offs/s, order violations",
                 f"{big(f.get('handoffs_per_s'))}, {f.get('order_violations')}")
    for size in (1, 32):
        f = fig("dlock", "semaphore_pair", size)
        if f:
            note("7", f"semaphore_pair T={size}: pairs/s", big(f.get("pairs_per_s")))
    for size in (4, 16):
        f = fig("dlock", "semaphore_contended", size)
        if f:
            note("7", f"semaphore_contended P={size}: sections/s, min/max",
                 f"{big(f.get('sections_per_s'))}, {r2(f.get('fairness_min_max'))}")
    for o in objs:
        if o["workload"] == "rwlock_mix" and o.get("client") == "dlock":
            f = o["figures"]
            note("7", f"rwlock_mix T={o['params'].get('threads')} {o['params'].get('write_pct')}% w: sections/s, violations",
                 f"{big(f.get('sections_per_s'))}, {f.get('violations')}")
    return rows


# ---- 7. issue 29's items 1, 2 and 4: met or missed, from the figures of this run -------------


def issue29_rows(objs, baseline=None):
    """[item, figure, measured, bound, ratio, verdict] per line for issue 29's items 1, 2 and 4.
    Each ratio is between two figures of this run (the naive lock beside dlock); "no worse
    than today" (the async face, the watchdog) is held against BASELINE, an earlier run's
    results, when given ("see note" without one)."""
    by = index(objs)
    rows = [["item", "figure", "measured", "bound", "ratio", "verdict"]]
    fig, check, note = judged_rows(by, rows)

    # 1. one thread, its own client, against the naive lock's one thread (its own connection)
    d, n = fig("dlock", "uncontended_pair", 1), fig("naive", "uncontended_pair", 1)
    ratio = per(d.get("pairs_per_s"), n.get("pairs_per_s"))
    check("1a", f"pairs/s T=1 / naive T=1 ({big(n.get('pairs_per_s'))})", d.get("pairs_per_s"),
          ">= 0.85x", ratio, ratio is not None and ratio >= 0.85)
    ratio = per(d.get("pair_p50_us"), n.get("pair_p50_us"))
    check("1b", f"pair p50 us T=1 / naive p50 ({r1(n.get('pair_p50_us'))} us)", d.get("pair_p50_us"),
          "<= 1.2x", ratio, ratio is not None and ratio <= 1.2)
    layout = fig("layout_floor", "uncontended_pair", 8).get("pairs_per_s")
    note("1'", f"PING p50 beside them: dlock {r1(d.get('floor_ping_p50_us'))}, naive "
         f"{r1(n.get('floor_ping_p50_us'))} us; dlock_client_ping p50 {r1(d.get('client_ping_p50_us'))} us",
         r1(d.get("client_ping_p50_us")))
    # what the client cannot take off: dlock's own scripts over plain hiredis, one thread
    lf = fig("layout_floor", "uncontended_pair", 1)
    if lf:
        note("1''", f"layout_floor T=1 (dlock's scripts over plain hiredis) {big(lf.get('pairs_per_s'))} pairs/s, "
             f"p50 {r1(lf.get('pair_p50_us'))} us: dlock {r2(per(d.get('pairs_per_s'), lf.get('pairs_per_s')))}x "
             f"its pairs/s, naive {r2(per(n.get('pairs_per_s'), lf.get('pairs_per_s')))}x",
             big(lf.get("pairs_per_s")))

    # 2. 8 threads with a client each against the naive lock's 8 threads (a connection each)
    own, naive = fig("dlock", "client_pair", 8).get("pairs_per_s"), fig("naive", "uncontended_pair", 8).get("pairs_per_s")
    ratio = per(own, naive)
    check("2", f"pairs/s T=8 a client each / naive T=8 ({big(naive)})", own, ">= 0.85x", ratio,
          ratio is not None and ratio >= 0.85)
    if layout:
        note("2'", f"layout_floor T=8 (dlock's scripts over plain hiredis) {big(layout)} pairs/s: "
             f"dlock {r2(per(own, layout))}x of it, naive {r2(per(naive, layout))}x", big(layout))

    # 4. kept
    t1, t32 = fig("dlock", "uncontended_pair", 1).get("pairs_per_s"), fig("dlock", "uncontended_pair", 32).get("pairs_per_s")
    ratio = per(t32, t1)
    check("4a", f"pairs/s T=32 / T=1 ({big(t1)}), one client", t32, ">= 4x", ratio, ratio is not None and ratio >= 4)
    for mode, size in (("processes", 4), ("threads", 4)):
        f = fig("dlock", "contended_handoff", size, mode)
        wait, key = wait_max_of(f)
        check("4b", f"P={size} {mode}: longest wait ({key or 'wait_max_us'})", wait, "<= 10000 us",
              per(wait, 10000), wait is not None and wait <= 10000)
        check("4c", f"P={size} {mode}: sections min/max per worker", f.get("fairness_min_max"), ">= 0.5",
              f.get("fairness_min_max"), (f.get("fairness_min_max") or 0) >= 0.5, r2)
        woken = f.get("wakes_per_section")
        check("4d", f"P={size} {mode}: waiters woken per release", woken, "<= 1", woken,
              woken is not None and woken <= 1.0, r2)
    # the async face: its pairs/s as a share of the pipelined script ceiling of the same run
    a = next((o["figures"] for o in objs if o["workload"] == "async_pairs" and o.get("client") == "dlock"), {})

    def async_share(among):
        af = next((o["figures"] for o in among if o["workload"] == "async_pairs" and o.get("client") == "dlock"), {})
        ceiling = next((o["figures"].get("scripts_per_s") for o in among if o["workload"] == "floor_script"
                        and o.get("params", {}).get("pipeline") == 16), None)
        scripts = (af.get("evalsha_per_pair") or 0) + (af.get("eval_per_pair") or 0)
        return per(af.get("pairs_per_s"), ceiling / scripts) if ceiling and scripts else None

    share = async_share(objs)
    r = next((o for o in objs if o["workload"] == "renewal_target"), None)
    rf = r["figures"] if r else {}
    if baseline is None:
        note("4e", f"async pairs/s {big(a.get('pairs_per_s'))} = {r2(share)}x the script ceiling "
             "(no --baseline run to hold it against)", r2(share))
        note("4f", f"watchdog, {r.get('params', {}).get('locks') if r else '?'} leases: scripts, client CPU ms "
             "per period (no --baseline run)",
             f"{big(rf.get('scripts_per_period'))}, {r2(rf.get('client_cpu_ms_per_period'))}")
    else:
        before = async_share(baseline)
        ratio = per(share, before)
        check("4e", f"async pairs/s as a share of the script ceiling, {r2(share)} / baseline's {r2(before)}",
              share, ">= 0.9x", ratio, ratio is not None and ratio >= 0.9, r2)
        b = next((o["figures"] for o in baseline if o["workload"] == "renewal_target"), {})
        ratio = per(rf.get("scripts_per_period"), b.get("scripts_per_period"))
        check("4f", f"watchdog scripts per period / baseline's ({big(b.get('scripts_per_period'))})",
              rf.get("scripts_per_period"), "<= 1x", ratio, ratio is not None and ratio <= 1.0)
        ratio = per(rf.get("client_cpu_ms_per_period"), b.get("client_cpu_ms_per_period"))
        check("4f", f"watchdog client CPU ms per period / baseline's ({r2(b.get('client_cpu_ms_per_period'))})",
              rf.get("client_cpu_ms_per_period"), "<= 1.25x", ratio, ratio is not None and ratio <= 1.25, r2)
    # no two holders at once, in any workload that can tell
    overlaps, seen = 0, []
    for o in objs:
        if o.get("client") != "dlock":
            continue
        f = o["figures"]
        for key in ("overlaps", "violations", "order_violations"):
            if key in f:
                overlaps += f[key] or 0
                seen.append(o["workload"])
    check("4g", f"overlaps in every dlock workload that tells ({len(seen)} rows of "
          f"{', '.join(sorted(set(seen))) or 'none'})", overlaps if seen else None, "= 0",
          overlaps if seen else None, overlaps == 0, lambda v: "-" if v is None else str(int(v)))
    return rows


# ---- 5. a Cluster: no starvation through redis-cluster:// (bench/cluster.sh) ---------------------


def cluster_rows(objs):
    """(figures, targets) for the cluster_contended_handoff lines of bench/cluster.sh (3 masters):
    every line's figures, then issue 30's Cluster target judged on P = 4 processes of this build
    (the median over its rounds): longest wait <= 10 ms, sections min/max per process >= 0.5.
    Lines with params.build = "baseline" (BASELINE_BUILD) are shown, never judged. None, None
    when the run has no such line."""
    lines = [o for o in objs if o.get("workload") == "cluster_contended_handoff"]
    if not lines:
        return None, None
    figures = [["build", "P", "round", "sections/s", "wait p50 / p99 / max us", "min/max",
                "hand-offs/sections", "wakes/section", "errors"]]
    for o in lines:
        p, f = o.get("params", {}), o.get("figures", {})
        figures.append([p.get("build", "this"), f"{p.get('workers')} {mode_of(o)}",
                        o.get("placement", "").split(";")[0].split("round ")[-1], r0(f.get("sections_per_s")),
                        f"{r0(f.get('wait_p50_us'))} / {r0(f.get('wait_p99_us'))} / {r0(f.get('wait_max_us'))}",
                        r2(f.get("fairness_min_max")), r2(f.get("handoff_share")),
                        r2(f.get("wakes_per_section")), str(o.get("errors"))])
    judged = [o["figures"] for o in lines if o.get("params", {}).get("build") != "baseline"
              and o.get("params", {}).get("workers") == 4 and mode_of(o) == "processes"]
    targets = [["target", "figure", "measured", "bound", "ratio", "verdict"]]

    def median(key):
        v = sorted(f[key] for f in judged if isinstance(f.get(key), (int, float)))
        return v[len(v) // 2] if v else None

    wait, fair = median("wait_max_us"), median("fairness_min_max")
    rounds = f"median of {len(judged)} round(s)"
    for tid, label, value, bound, ratio, ok, fmt in (
            ("C1", f"Cluster, 3 masters, P=4 processes: longest wait us ({rounds})", wait, "<= 10000 us",
             per(wait, 10000), wait is not None and wait <= 10000, big),
            ("C2", f"Cluster, 3 masters, P=4 processes: sections min/max per process ({rounds})", fair,
             ">= 0.5", fair, fair is not None and fair >= 0.5, r2)):
        verdict = "no data" if value is None else ("met" if ok else "missed")
        targets.append([tid, label, fmt(value), bound, r2(ratio) if ratio is not None else "-", verdict])
    return figures, targets


# ---- 6. what ?sync_replicas=auto costs (bench/sync_replicas.sh) --------------------------------

SYNC_BOUNDS = {1: 0.25, 8: 0.15}  # issue 29.5: the most auto may cost against 0, per T


def sync_replicas_rows(objs):
    """The row bench/sync_replicas.sh adds: uncontended_pair on one client against a master
    with one replica, sync_replicas=0 and auto side by side in each round. Per T: the pairs/s
    of each setting per round, the cost of auto (1 - auto/0) per round and its median, the
    WAITs per pair under auto, and the bound (issue 29.5) met or missed on the median."""
    o = next((o for o in objs if o.get("workload") == "sync_replicas"), None)
    if not o:
        return []
    rows = [["T", "pairs/s 0 (per round)", "pairs/s auto", "cost of auto", "median", "WAITs per pair",
             "bound", "verdict"]]
    for key in sorted(o.get("figures", {}), key=lambda k: int(k[1:])):
        f, t = o["figures"][key], int(key[1:])
        cost, bound = f.get("cost_auto_median"), SYNC_BOUNDS.get(t)
        verdict = "see note" if bound is None else ("no data" if cost is None else
                                                    ("met" if cost <= bound else "missed"))
        rows.append([str(t), ", ".join(r0(v) for v in f.get("pairs_per_s_0", [])),
                     ", ".join(r0(v) for v in f.get("pairs_per_s_auto", [])),
                     ", ".join(f"{c:.0%}" for c in f.get("cost_auto", [])),
                     "-" if cost is None else f"{cost:.0%}",
                     ", ".join(r2(w) for w in f.get("wait_per_pair_auto", [])),
                     "-" if bound is None else f"<= {bound:.0%}", verdict])
    return rows


# ---- the picture -----------------------------------------------------------------------------


def draw(objs, png, title):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("report.py: no gnuplot, no picture", file=sys.stderr)
        return False
    # libgd's png: a few tens of KB where pngcairo's anti-aliasing makes 100+ (it draws no
    # dashes: the min_retry variants get a lighter shade of their peer's colour instead)
    term = "png size 1500,560 font 'sans,9'"
    by = index(objs)
    impls = present_impls(objs)
    ping, pub = floor_of(objs)
    styles = {"dlock": "lw 3 lc rgb '#d62728'", "naive": "lw 2 lc rgb '#555555'",
              "redis-py": "lw 2 lc rgb '#1f5fb4'", "redis-py/min": "lw 1 lc rgb '#7fb2f0'",
              "redlock": "lw 2 lc rgb '#1a7a1a'", "redlock/min": "lw 1 lc rgb '#7ed67e'",
              "redis-semaphore": "lw 2 lc rgb '#7a3fb0'", "redis-semaphore/min": "lw 1 lc rgb '#c9a3ec'"}
    script = [f"set terminal {term}", f"set output '{png}'", "set encoding utf8"]
    blocks, panels = [], []
    for size in (2, 4, 16):
        plots = []
        for i in impls:
            o = by.get((i, "contended_handoff", size, "threads"))
            if not o:
                continue
            f = o["figures"]
            c = f.get("handoff_from_release_start_cdf_us")
            n = f.get("handoff_from_release_start_n", 0)
            if not c or not n:
                continue
            name = f"$d_{size}_{i.replace('-', '_').replace('/', '_')}"
            pts = [(c[str(q)], q / 100) for q in range(101) if c.get(str(q)) and c[str(q)] > 0]
            blocks.append(f"{name} << EOD\n" + "\n".join(f"{x} {y}" for x, y in pts) + "\nEOD")
            plots.append(f"{name} using 1:2 with steps {styles.get(i, 'lw 2')} title '{LABEL[i]} (n={n})'")
        panels.append((size, plots))
    if not any(p for _, p in panels):
        print("report.py: no hand-off distributions to draw", file=sys.stderr)
        return False
    script += blocks
    script += [f"set multiplot layout 1,3 title \"{title}\" font ',11'",
               "set logscale x", "set xrange [5:300000]", "set yrange [0:1]", "set grid",
               "set format x '10^{%L}'",
               "set xlabel 'us from the release call to the next acquire returning (log scale)'",
               "set ylabel 'fraction of hand-offs'", "set key bottom right opaque box font ',9'"]
    for size, plots in panels:
        script.append(f"set title 'contended\\_handoff, P = {size} workers on one lock'")
        script.append("unset arrow")
        if ping and pub:
            script.append(f"set arrow from {ping + pub}, graph 0 to {ping + pub}, graph 1 nohead dt 3 lc rgb 'black'")
            script.append(f"set label 1 'floor: PUB+PING' at {ping + pub}, graph 0.97 right offset -0.5,0 font ',8'")
        script.append("plot " + (", ".join(plots) if plots else "NaN notitle"))
    script.append("unset multiplot")
    r = subprocess.run([gnuplot], input="\n".join(script) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        print(f"report.py: gnuplot failed: {r.stderr.strip()}", file=sys.stderr)
        return False
    return True


def draw_throughput(objs, png, title):
    """Pairs/s against threads (uncontended_pair T = 1, 8, 32; log x) for dlock with one
    client, dlock with a client per thread, the naive lock and the peers; the async face
    (one thread, 256 in flight) and the script ceilings as horizontal lines."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("report.py: no gnuplot, no picture", file=sys.stderr)
        return False
    by = index(objs)
    series = [("dlock", "uncontended_pair", "dlock, one client", "lw 3 pt 7 lc rgb '#d62728'"),
              ("dlock", "client_pair", "dlock, a client per thread", "lw 2 pt 5 lc rgb '#ff9896'"),
              ("naive", "uncontended_pair", "naive (a connection per thread)", "lw 2 pt 7 lc rgb '#555555'"),
              ("redis-py", "uncontended_pair", "redis-py", "lw 2 pt 7 lc rgb '#1f5fb4'"),
              ("redis-py/min", "uncontended_pair", "redis-py/min", "lw 1 pt 6 lc rgb '#7fb2f0'"),
              ("redlock", "uncontended_pair", "redlock (one ioredis)", "lw 2 pt 7 lc rgb '#1a7a1a'"),
              ("redlock/min", "uncontended_pair", "redlock/min", "lw 1 pt 6 lc rgb '#7ed67e'"),
              ("redis-semaphore", "uncontended_pair", "redis-semaphore (one ioredis)", "lw 2 pt 7 lc rgb '#7a3fb0'"),
              ("redis-semaphore/min", "uncontended_pair", "redis-semaphore/min", "lw 1 pt 6 lc rgb '#c9a3ec'")]
    blocks, plots, top = [], [], 0.0
    for n, (impl, workload, label, style) in enumerate(series):
        pts = [(t, by[(impl, workload, t, "threads")]["figures"].get("pairs_per_s"))
               for t in (1, 8, 32) if (impl, workload, t, "threads") in by]
        pts = [(t, v) for t, v in pts if v]
        if not pts:
            continue
        top = max([top] + [v for _, v in pts])
        blocks.append(f"$t{n} << EOD\n" + "\n".join(f"{t} {v}" for t, v in pts) + "\nEOD")
        plots.append(f"$t{n} using 1:2 with linespoints {style} title '{label}'")
    a = next((o["figures"].get("pairs_per_s") for o in objs if o["workload"] == "async_pairs"), None)
    if a:
        top = max(top, a)
        plots.append(f"{a} with lines lw 2 lc rgb '#ff7f0e' title 'dlock async face: 1 thread, 256 in flight'")
    for o in objs:
        if o["workload"] == "floor_script" and o["figures"].get("pairs_per_s_ceiling"):
            pl = o.get("params", {}).get("pipeline")
            top = max(top, o["figures"]["pairs_per_s_ceiling"])
            plots.append(f"{o['figures']['pairs_per_s_ceiling']} with lines lw {2 if pl == 16 else 1} "
                         f"lc rgb '{'black' if pl == 16 else '#999999'}' "
                         f"title 'server ceiling: scripts/s / 2, redis-benchmark -P {pl}'")
    if not blocks:
        print("report.py: no uncontended_pair rows to draw", file=sys.stderr)
        return False
    script = ["set terminal png size 1000,600 font 'sans,9'", f"set output '{png}'", "set encoding utf8"]
    script += blocks
    script += [f"set title \"{title}\" font ',11'", "set logscale x 2", "set xrange [0.8:40]",
               "set xtics (1, 8, 32)", f"set yrange [0:{top * 1.35:.0f}]", "set grid",
               "set xlabel 'threads (uncontended\\_pair: each thread its own lock)'",
               "set ylabel 'lock pairs (acquire + release) per second'",
               "set key inside left top opaque box font ',9'",
               "plot " + ", ".join(plots)]
    r = subprocess.run([gnuplot], input="\n".join(script) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        print(f"report.py: gnuplot failed: {r.stderr.strip()}", file=sys.stderr)
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--png")
    ap.add_argument("--png-throughput")
    ap.add_argument("--elapsed")
    ap.add_argument("--load")
    ap.add_argument("--command")
    ap.add_argument("--baseline", help="an earlier run's RESULTS.json: issue 29's \"no worse than today\"")
    args = ap.parse_args()
    with open(args.results) as fh:
        objs = json.load(fh)
    out = sys.stdout
    first = next((o for o in objs if o.get("client") in ("dlock", "hiredis")), objs[0] if objs else {})
    versions = [f"dlock {first.get('dlock_version', '?')}", f"hiredis {first.get('hiredis_version', '?')}",
                f"redis {first.get('redis_version', '?')}"]
    for key, label in (("redis-py", "redis-py"), ("redlock", "redlock"), ("redis-semaphore", "redis-semaphore")):
        o = next((o for o in objs if o.get("client") == key), None)
        if o:
            versions.append(f"{label} {o.get('client_version')} ({o.get('runtime')}"
                            + (f", ioredis {o['ioredis_version']})" if o.get("ioredis_version") else ")"))
    print(", ".join(versions), file=out)
    print(f"{first.get('placement', '')}; {args.command or ''}; {args.elapsed or '?'} s in all; "
          f"load average {args.load or '?'}", file=out)
    print("", file=out)
    print("== 1. The floor and dlock (each dlock row's floor measured just before it, in brackets) ==", file=out)
    table(dlock_rows(objs), out)
    print("", file=out)
    print("== 2. dlock against the naive lock and the peers: value (ratio to dlock's) ==", file=out)
    for k, label, legend in IMPLS:
        if k in present_impls(objs):
            print(f"   {label:12} {legend}", file=out)
    table(comparison_rows(objs), out)
    print("", file=out)
    print("== 3. Latency against the floor (PING p50 {}, PUBLISH delivery p50 {} us at the start; "
          "dlock and naive: the floor beside each row) ==".format(*(r1(x) for x in floor_of(objs))), file=out)
    table(floor_rows(objs), out)
    print("", file=out)
    print("== 4. Targets (issue 20), each from figures of this run ==", file=out)
    table(target_rows(objs), out)
    figures, targets = cluster_rows(objs)
    if figures:
        print("", file=out)
        print("== 5. Cluster: contended_handoff through redis-cluster:// on 3 masters (bench/cluster.sh) ==",
              file=out)
        table(figures, out)
        print("", file=out)
        table(targets, out)
    sync_rows = sync_replicas_rows(objs)
    if sync_rows:
        print("", file=out)
        print("== 6. sync_replicas=auto against 0, a master and one replica (bench/sync_replicas.sh; "
              "issue 29.5) ==", file=out)
        table(sync_rows, out)
    print("", file=out)
    baseline = None
    if args.baseline:
        with open(args.baseline) as fh:
            baseline = json.load(fh)
    print("== 7. Issue 29, items 1, 2 and 4, each from figures of this run"
          + (f" (\"no worse\": against {args.baseline})" if baseline else "") + " ==", file=out)
    table(issue29_rows(objs, baseline), out)
    bad = [f"{impl_of(o)} {o['workload']} {json.dumps(o.get('params', {}).get('threads', o.get('params', {}).get('workers')))}: {o['errors']}"
           for o in objs if o.get("errors")]
    if bad:
        print("", file=out)
        print("ERRORS " + "; ".join(bad), file=out)
    if args.png:
        ok = draw(objs, args.png, "Hand-off latency distribution (CDF), dlock vs the naive lock and the peers")
        if not ok:
            return 1
    if args.png_throughput:
        if not draw_throughput(objs, args.png_throughput, "Throughput against threads, dlock vs the naive lock and the peers"):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
