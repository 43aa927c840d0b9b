// S2: the seeds' experiment. 100 tasks over 2 OS processes contend for one resource, each
// holding it for a ~1 ms critical section, with wait ≈ 20 s (or the library's shipped retry
// settings). Successes, wall ÷ (successes × critical section alone), hand-off between
// successive holders, lock-node commands per success, and a lost-update check.
import { fork } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';
import { median, quantile } from './stats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TTL = 10_000;

/** Mean duration (ms) of the critical section alone, no lock, on the data node. */
export async function calibrateCriticalSection(dataUrl, rounds = 100) {
  const { criticalSection } = await import('./cs.mjs');
  const data = new Redis(dataUrl);
  try {
    for (let i = 0; i < 10; i++) await criticalSection(data, 'cs:calibrate');
    const start = performance.now();
    for (let i = 0; i < rounds; i++) await criticalSection(data, 'cs:calibrate');
    return (performance.now() - start) / rounds;
  } finally {
    data.disconnect();
  }
}

function startWorker(args) {
  // BENCH_WORKER_ARGS: extra node flags for the workers (e.g. --cpu-prof, bench/profile-s2.mjs).
  const extra = (process.env.BENCH_WORKER_ARGS ?? '').split(' ').filter(Boolean);
  const child = fork(path.join(here, 's2-worker.mjs'), [JSON.stringify(args)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...(extra.length ? { execArgv: [...process.execArgv, ...extra] } : {}),
  });
  const messages = [];
  const waiters = [];
  child.on('message', (m) => (waiters.length ? waiters.shift()(m) : messages.push(m)));
  return {
    child,
    next: () =>
      messages.length ? Promise.resolve(messages.shift()) : new Promise((r) => waiters.push(r)),
  };
}

/** One S2 run of one contender. */
export async function runS2({
  key,
  fleetUrls,
  dataUrl,
  counters,
  idleRate,
  wait,
  csAloneMs,
  tag,
  processes = 2,
  tasks = 100,
}) {
  const resource = `s2:${tag}`;
  const counter = `counter:${tag}`;
  const workers = Array.from({ length: processes }, () =>
    startWorker({
      key,
      urls: fleetUrls,
      dataUrl,
      resource,
      counter,
      tasks: tasks / processes,
      wait: wait ?? null,
      ttl: TTL,
    }),
  );
  const kill = () => workers.forEach((w) => w.child.exitCode === null && w.child.kill('SIGKILL'));
  try {
    await Promise.all(workers.map((w) => w.next()));
    const before = await counters.snapshot();
    const goAt = process.hrtime.bigint() + 50_000_000n;
    workers.forEach((w) => w.child.send({ goAt: String(goAt) }));
    const timeout = delay(120_000).then(() => null);
    const results = await Promise.race([Promise.all(workers.map((w) => w.next())), timeout]);
    const after = await counters.snapshot();
    if (results === null) throw new Error(`S2 ${key}: no result in 120 s`);
    const server = counters.delta(before, after, idleRate);
    const holds = results
      .flatMap((result, w) =>
        result.holds.map((h) => ({
          a: BigInt(h.acquiredAt),
          r: BigInt(h.releasedAt),
          d: BigInt(h.doneAt),
          w, // the worker (process) that held it
        })),
      )
      .sort((x, y) => (x.a < y.a ? -1 : x.a > y.a ? 1 : 0));
    const failures = results.flatMap((r) => r.failures);
    const handOffs = [];
    let overlaps = 0;
    // How often the lock went to the other process: under a FIFO hand-off, how finely the two
    // processes' starts interleave decides it, and each such hand-off costs more than one
    // within a process (bench/REPORT.md, "S2's commands follow the process switches").
    let processSwitches = 0;
    for (let i = 1; i < holds.length; i++) {
      const gap = Number(holds[i].a - holds[i - 1].r) / 1e6;
      if (gap < 0) overlaps++;
      if (holds[i].w !== holds[i - 1].w) processSwitches++;
      handOffs.push(gap);
    }
    const end = holds.reduce((m, h) => (h.d > m ? h.d : m), goAt);
    const wallMs = Number(end - goAt) / 1e6;
    const data = new Redis(dataUrl);
    const count = Number(await data.get(counter));
    data.disconnect();
    const successes = holds.length;
    return {
      contender: key,
      wait: wait ?? 'default',
      successes,
      failures: failures.length,
      failureSample: failures[0]?.error,
      wallMs,
      wallRatio: wallMs / (successes * csAloneMs),
      handOffP50: median(handOffs),
      handOffP90: quantile(handOffs, 0.9),
      handOffP99: quantile(handOffs, 0.99),
      // Where the wall time goes: before the first holder, and in hand-offs over 20 ms.
      firstAcquireMs: holds.length ? Number(holds[0].a - goAt) / 1e6 : NaN,
      handOffSumMs: handOffs.reduce((a, b) => a + b, 0),
      csInSituP50: median(holds.map((h) => Number(h.r - h.a) / 1e6)),
      slowHandOffs: handOffs.filter((g) => g > 20).length,
      slowHandOffMs: handOffs.filter((g) => g > 20).reduce((a, b) => a + b, 0),
      overlaps,
      processSwitches,
      lostUpdates: successes - count,
      commandsPerSuccess: server.commands / successes,
      commandsByType: Object.fromEntries(
        Object.entries(server.byCommand).map(([name, calls]) => [name, calls / successes]),
      ),
      serverUsecByType: Object.fromEntries(
        Object.entries(server.usecByCommand).map(([name, us]) => [name, us / successes]),
      ),
      serverCpuUsPerSuccess: server.cpuUs / successes,
      clientCpuUsPerSuccess: results.reduce((s, r) => s + (r.cpuUs ?? NaN), 0) / successes,
    };
  } finally {
    await Promise.race([
      Promise.all(
        workers.map((w) =>
          w.child.exitCode === null ? new Promise((r) => w.child.once('exit', r)) : null,
        ),
      ),
      delay(5000),
    ]);
    kill();
  }
}
