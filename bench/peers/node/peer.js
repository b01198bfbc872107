#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// peer.js — the npm peers of dlock-bench: `redlock` (v4, with one ioredis client: Redlock
// on a single Redis) and `redis-semaphore`'s Mutex (with ioredis), through the same
// workloads as dlock-bench, printing the same JSON lines.
//
//   node peer.js --lib redlock|redis-semaphore --url unix:///path/redis.sock
//                [--duration-ms 3000] [--variant default|min_retry] [--placement TEXT]
//                [--only uncontended_pair|contended_handoff|hold_10ms]
//
// The packages are installed into this folder by bench/run.sh (npm ci), never by the
// build. Workloads: W async workers of one process (node has one thread) sharing one
// ioredis connection, as an application would share it:
//
//   uncontended_pair   T = 1, 8, 32 workers, a lock name each, loop acquire + release
//   contended_handoff  P = 2, 4, 16 workers on ONE name, loop acquire, record, release
//   hold_10ms          P = 4 workers on ONE name, 10 ms (a timer) inside
//
// measured as dlock-bench measures them (bench/contend.c; process.hrtime is
// CLOCK_MONOTONIC). Every lock has a 30 s lease and every acquire waits until it has the
// lock: for redlock that takes retryCount -1 (its default, 10 retries, gives up within
// about 2 s, which is a failure, not a wait, in these workloads).
//
// Variants, "default" being each library's own retry interval:
//   redlock          default: retryDelay 200 ms, retryJitter 100 ms; min_retry: 0 and 0
//   redis-semaphore  default: retryInterval 10 ms; min_retry: 0
// A 0 ms retry is the lowest either accepts; node runs a 0 ms setTimeout after 1 ms.
'use strict';

const path = require('path');
const fs = require('fs');

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

const lib = arg('--lib');
const url = arg('--url', process.env.DLOCK_URL || 'redis://127.0.0.1:6379');
const durationMs = Number(arg('--duration-ms', process.env.QUICK === '1' ? 1000 : 3000));
const variant = arg('--variant', 'default');
const placement = arg('--placement', 'not pinned');
const only = arg('--only', null);
const LEASE_MS = 30000;
const MAX_ERRORS = 1000;

if (!['redlock', 'redis-semaphore'].includes(lib) || !['default', 'min_retry'].includes(variant)) {
  console.error('usage: node peer.js --lib redlock|redis-semaphore [--variant default|min_retry] --url URL');
  process.exit(2);
}

const Redis = require('ioredis');
const version = (pkg) =>
  JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', pkg, 'package.json'), 'utf8')).version;

function connect() {
  if (url.startsWith('unix://')) return new Redis({ path: url.slice(7).split('?')[0], lazyConnect: false });
  return new Redis(url);
}

const nowNs = () => Number(process.hrtime.bigint());
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pctUs(sorted, q) {
  if (sorted.length === 0) return 0;
  return sorted[Math.floor(q * (sorted.length - 1) + 0.5)] / 1000;
}
const r3 = (x) => (x === null || !Number.isFinite(x) ? null : Math.round(x * 1000) / 1000);
function latency(prefix, sorted) {
  return {
    [`${prefix}_n`]: sorted.length,
    [`${prefix}_p50_us`]: r3(pctUs(sorted, 0.5)),
    [`${prefix}_p99_us`]: r3(pctUs(sorted, 0.99)),
    [`${prefix}_max_us`]: r3(pctUs(sorted, 1)),
  };
}
function cdf(sorted) {
  const out = {};
  for (let i = 0; i <= 100; i++) out[String(i)] = r3(pctUs(sorted, i / 100));
  return out;
}
const numSort = (a) => a.sort((x, y) => x - y);

// INFO commandstats calls, server CPU (INFO cpu) and this process's CPU, as bench_counters.
const NAMES = ['evalsha', 'eval', 'publish', 'subscribe', 'unsubscribe', 'set'];
async function counters(admin) {
  const stats = await admin.info('commandstats');
  const cpu = await admin.info('cpu');
  const calls = {};
  for (const n of NAMES) {
    const m = stats.match(new RegExp(`cmdstat_${n}:calls=(\\d+)`));
    calls[n] = m ? Number(m[1]) : 0;
  }
  const field = (f) => Number((cpu.match(new RegExp(`${f}:([0-9.]+)`)) || [0, 0])[1]);
  const u = process.cpuUsage();
  return { calls, server: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6, client: u.user + u.system };
}
function per(before, after, n, unit) {
  const out = {};
  for (const name of NAMES) out[`${name}_per_${unit}`] = n ? r3((after.calls[name] - before.calls[name]) / n) : null;
  out[`server_cpu_us_per_${unit}`] = n ? r3((after.server - before.server) / n) : null;
  out[`client_cpu_us_per_${unit}`] = n ? r3((after.client - before.client) / n) : null;
  return out;
}

// ---- the two libraries behind one interface: make(name) -> {acquire(), release()} ----

function makeImpl(client) {
  if (lib === 'redlock') {
    const Redlock = require('redlock');
    const opts = variant === 'default' ? { retryCount: -1 } : { retryCount: -1, retryDelay: 0, retryJitter: 0 };
    const redlock = new Redlock([client], opts);
    redlock.on('clientError', (err) => console.error(`peer.js: redlock clientError: ${err}`));
    return {
      version: version('redlock'),
      retryMs: variant === 'default' ? 200 : 0,
      api: `new Redlock([ioredis], ${JSON.stringify(opts)}).lock(name, 30000) + lock.unlock(); workers share one connection`,
      make(name) {
        let held = null;
        return {
          async acquire() { held = await redlock.lock(name, LEASE_MS); },
          async release() { const l = held; held = null; await l.unlock(); },
        };
      },
    };
  }
  const { Mutex } = require('redis-semaphore');
  const opts = variant === 'default' ? { lockTimeout: LEASE_MS } : { lockTimeout: LEASE_MS, retryInterval: 0 };
  return {
    version: version('redis-semaphore'),
    retryMs: variant === 'default' ? 10 : 0,
    api: `new Mutex(ioredis, name, ${JSON.stringify(opts)}).acquire() + .release(); workers share one connection`,
    make(name) {
      const m = new Mutex(client, name, opts);
      return { acquire: () => m.acquire(), release: () => m.release() };
    },
  };
}

async function main() {
  const client = connect();
  const admin = connect();
  const impl = makeImpl(client);
  const server = await admin.info('server');
  const redisVersion = (server.match(/redis_version:(\S+)/) || [0, ''])[1];
  const tag = `${process.pid}-${Math.floor(Date.now() / 1000)}`;

  function emit(workload, params, figures, errors) {
    const obj = {
      workload,
      transport: url.startsWith('unix://') ? 'unix' : 'tcp',
      client: lib,
      client_version: impl.version,
      ioredis_version: version('ioredis'),
      runtime: `node ${process.versions.node}`,
      redis_version: redisVersion,
      placement,
      params: Object.assign(params, { variant, retry_ms: impl.retryMs, duration_ms: durationMs, lease_ms: LEASE_MS, api: impl.api }),
      figures,
      errors,
    };
    process.stdout.write(JSON.stringify(obj) + '\n');
  }

  function report(err, what) {
    console.error(`peer.js: ${lib} ${what}: ${err && err.message ? err.message : err}`);
  }

  async function pairs(threads) {
    let go;
    const gate = new Promise((r) => (go = r));
    let deadline = 0;
    const lat = [];
    let errors = 0;
    let end = 0;
    const ready = [];
    const workers = [];
    for (let i = 0; i < threads; i++) {
      const lk = impl.make(`dlock-bench:${tag}:${lib}:pair:${threads}:${i}`);
      let readyRes;
      ready.push(new Promise((r) => (readyRes = r)));
      workers.push((async () => {
        for (let k = 0; k < 20; k++) {
          try { await lk.acquire(); await lk.release(); } catch (e) { errors++; report(e, 'warm-up'); }
        }
        readyRes();
        await gate;
        let t = nowNs();
        let mine = 0;
        while (t < deadline && mine < MAX_ERRORS) {
          let ok = true;
          try { await lk.acquire(); await lk.release(); } catch (e) { ok = false; mine++; errors++; report(e, 'pair'); }
          const e = nowNs();
          if (ok) lat.push(e - t);
          t = e;
        }
        if (t > end) end = t;
      })());
    }
    await Promise.all(ready);
    const before = await counters(admin);
    const start = nowNs();
    deadline = start + durationMs * 1e6;
    end = start;
    go();
    await Promise.all(workers);
    const after = await counters(admin);
    numSort(lat);
    const seconds = (end - start) / 1e9;
    emit('uncontended_pair', { threads, clients: 1, connections: 1 },
      Object.assign({ pairs: lat.length, pairs_per_s: seconds > 0 ? r3(lat.length / seconds) : 0 },
        latency('pair', lat), per(before, after, lat.length, 'pair')), errors);
  }

  async function contend(workload, workers, holdMs) {
    const name = `dlock-bench:${tag}:${lib}:${workload}:${workers}`;
    let go;
    const gate = new Promise((r) => (go = r));
    let deadline = 0;
    const log = [];
    const counts = new Array(workers).fill(0);
    let errors = 0;
    const ready = [];
    const tasks = [];
    for (let w = 0; w < workers; w++) {
      const lk = impl.make(name);
      let readyRes;
      ready.push(new Promise((r) => (readyRes = r)));
      tasks.push((async () => {
        try { await lk.acquire(); await lk.release(); } catch (e) { errors++; report(e, 'warm-up'); }
        readyRes();
        await gate;
        let mine = 0;
        while (nowNs() < deadline && mine < MAX_ERRORS) {
          try { await lk.acquire(); } catch (e) { mine++; errors++; report(e, 'acquire'); continue; }
          const entry = [w, nowNs(), 0, 0];
          log.push(entry); // inside the lock: the lock orders the log
          if (holdMs) await sleep(holdMs);
          entry[2] = nowNs();
          try { await lk.release(); } catch (e) { mine++; errors++; report(e, 'release'); }
          entry[3] = nowNs();
          counts[w]++;
        }
      })());
    }
    await Promise.all(ready);
    const before = await counters(admin);
    const start = nowNs();
    deadline = start + durationMs * 1e6;
    go();
    await Promise.all(tasks);
    const after = await counters(admin);

    const handoff = [];
    const fromStart = [];
    let end = start;
    log.forEach((s, i) => {
      if (s[3] > end) end = s[3];
      if (i && s[0] !== log[i - 1][0]) {
        handoff.push(s[1] - log[i - 1][3]);
        fromStart.push(s[1] - log[i - 1][2]);
      }
    });
    numSort(handoff);
    numSort(fromStart);
    const seconds = (end - start) / 1e9;
    const perS = seconds > 0 ? log.length / seconds : 0;
    const lo = Math.min(...counts);
    const hi = Math.max(...counts);
    const f = { sections: log.length, sections_per_s: r3(perS) };
    if (holdMs) f.ratio_to_ideal_sections_per_s = r3((perS * holdMs) / 1000);
    f.handoffs = handoff.length;
    f.handoff_share = log.length > 1 ? r3(handoff.length / (log.length - 1)) : null;
    Object.assign(f, latency('handoff', handoff), {
      min_sections_per_worker: lo,
      max_sections_per_worker: hi,
      fairness_min_max: hi ? r3(lo / hi) : null,
    }, latency('handoff_from_release_start', fromStart), latency('release', numSort(log.map((s) => s[3] - s[2]))),
    per(before, after, log.length, 'section'));
    f.handoff_cdf_us = cdf(handoff);
    f.handoff_from_release_start_cdf_us = cdf(fromStart);
    emit(workload, { workers, mode: 'async workers', clients: 1, connections: 1, hold_us: holdMs * 1000 }, f, errors);
  }

  if (!only || only === 'uncontended_pair') for (const t of [1, 8, 32]) await pairs(t);
  if (!only || only === 'contended_handoff') for (const p of [2, 4, 16]) await contend('contended_handoff', p, 0);
  if (!only || only === 'hold_10ms') await contend('hold_10ms', 4, 10);
  client.disconnect();
  admin.disconnect();
}

main().catch((e) => {
  console.error(`peer.js: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
