#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""report.py — the tables and the picture of one benchmark run (bench/run.sh calls it).

    bench/report.py RESULTS.json [--png OUT.png] [--elapsed S] [--load TEXT] [--command TEXT]

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
and with --png draws the hand-off latency distributions (CDF, from the release call to
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
        elif w == "uncontended_pair" or w == "semaphore_pair":
            ps = f"T={p.get('threads')}"
            row(w, ps, "pairs/s", r0(f.get("pairs_per_s")))
            row(w, ps, "pair p50 / p99 us", f"{r1(f.get('pair_p50_us'))} / {r1(f.get('pair_p99_us'))}",
                f"{r2(f.get('ratio_pair_p50_to_2x_ping_p50'))}x 2 PING {fl}")
            if "client_ping_p50_us" in f:
                row(w, ps, "dlock_client_ping p50 us", r1(f.get("client_ping_p50_us")),
                    f"{r2(per(f.get('client_ping_p50_us'), f.get('floor_ping_p50_us')))}x PING")
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--png")
    ap.add_argument("--elapsed")
    ap.add_argument("--load")
    ap.add_argument("--command")
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
    bad = [f"{impl_of(o)} {o['workload']} {json.dumps(o.get('params', {}).get('threads', o.get('params', {}).get('workers')))}: {o['errors']}"
           for o in objs if o.get("errors")]
    if bad:
        print("", file=out)
        print("ERRORS " + "; ".join(bad), file=out)
    if args.png:
        ok = draw(objs, args.png, "Hand-off latency distribution (CDF), dlock vs the naive lock and the peers")
        if not ok:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
