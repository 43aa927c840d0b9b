// S5: open-loop contention (issue 18 item 4). Two OS processes; requests for one resource
// arrive at random (Poisson) at a share (`load`) of the lock's capacity for `durationMs`.
// Capacity = 1 / (the hold as measured alone on this machine + 1 ms): what a lock with the 1 ms
// hand-off of issue 18's target could serve, the same arrival rate for every contender. Reports wait (arrival → acquired)
// p50 / p99 / max, order inversions (the share of requests served before one that started
// waiting earlier, across both processes), and lock-node commands, client CPU and Redis CPU per
// success. Each run starts with `warmupMs` of the same arrivals, not measured (a fresh process's
// first seconds run every hand-off slower until V8 has optimized it: bench/fair-rates.mjs).
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { requestsOf } from './open-loop.mjs';
import { quantile } from './stats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TTL = 10_000;

function startWorker(args) {
  const child = fork(path.join(here, 's5-worker.mjs'), [JSON.stringify(args)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
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

/**
 * Order inversions: requests served (acquired) while a request that arrived earlier was still
 * waiting — it was served later, or never. Counted once per overtaking request.
 */
export function orderInversions(requests) {
  const byService = [...requests].sort((a, b) => b.servedAt - a.servedAt); // latest first
  let earliestArrivalServedLater = Infinity;
  let inversions = 0;
  let i = 0;
  while (i < byService.length) {
    // Requests served at the same instant do not overtake one another.
    let j = i;
    while (j < byService.length && byService[j].servedAt === byService[i].servedAt) j++;
    for (let k = i; k < j; k++) {
      const r = byService[k];
      if (Number.isFinite(r.servedAt) && earliestArrivalServedLater < r.arrivedAt) inversions++;
    }
    for (let k = i; k < j; k++) {
      earliestArrivalServedLater = Math.min(earliestArrivalServedLater, byService[k].arrivedAt);
    }
    i = j;
  }
  return inversions;
}

/** One S5 run of one contender at one load. */
/** The mean time (ms) `await delay(holdMs)` takes here (timers run late on a busy machine). */
export async function calibrateHold(holdMs, rounds = 40) {
  const start = performance.now();
  for (let i = 0; i < rounds; i++) await delay(holdMs);
  return (performance.now() - start) / rounds;
}

export async function runS5({
  key,
  fleetUrls,
  counters,
  idleRate,
  load,
  durationMs,
  holdMs,
  holdAloneMs,
  wait,
  tag,
  warmupMs = 3_000,
  processes = 2,
}) {
  const capacity = 1000 / (holdAloneMs + 1); // per second
  const rate = load * capacity;
  const resource = `s5:${tag}`;
  const workers = Array.from({ length: processes }, (_, p) =>
    startWorker({
      key,
      urls: fleetUrls,
      resource,
      rate: rate / processes,
      durationMs: warmupMs + durationMs,
      warmupMs,
      holdMs,
      wait,
      ttl: TTL,
      seed: 1000 + p * 7919 + Math.round(load * 100),
    }),
  );
  const kill = () => workers.forEach((w) => w.child.exitCode === null && w.child.kill('SIGKILL'));
  try {
    await Promise.all(workers.map((w) => w.next()));
    const goAt = process.hrtime.bigint() + 50_000_000n;
    workers.forEach((w) => w.child.send({ goAt: String(goAt) }));
    // Counted from the end of the warm-up: the measured part only.
    const before = delay(50 + warmupMs).then(() => counters.snapshot());
    const timeout = delay(warmupMs + durationMs + wait + 60_000).then(() => null);
    const results = await Promise.race([Promise.all(workers.map((w) => w.next())), timeout]);
    const after = await counters.snapshot();
    if (results === null) throw new Error(`S5 ${key}: no result in time`);
    const server = counters.delta(await before, after, idleRate);
    const all = requestsOf(results, goAt);
    const requests = all.filter((r) => r.arrivedAt >= warmupMs);
    const served = requests.filter((r) => Number.isFinite(r.servedAt));
    const waits = served.map((r) => r.servedAt - r.arrivedAt);
    // Mutual exclusion is checked over the whole run, warm-up included.
    const holds = all.filter((r) => Number.isFinite(r.servedAt));
    holds.sort((a, b) => a.servedAt - b.servedAt);
    let overlaps = 0;
    for (let i = 1; i < holds.length; i++)
      if (holds[i].servedAt < holds[i - 1].releasedAt) overlaps++;
    const successes = served.length;
    const clientCpuUs = results.reduce((s, r) => s + r.cpuUs, 0);
    return {
      contender: key,
      load,
      rate,
      capacity,
      requests: requests.length,
      successes,
      failures: requests.length - successes,
      failureSample: requests.find((r) => r.failed)?.failed,
      waitP50: quantile(waits, 0.5),
      waitP99: quantile(waits, 0.99),
      waitMax: waits.length ? Math.max(...waits) : NaN,
      inversions: orderInversions(requests) / Math.max(1, successes),
      overlaps,
      commandsPerSuccess: server.commands / successes,
      serverCpuUsPerSuccess: server.cpuUs / successes,
      clientCpuUsPerSuccess: clientCpuUs / successes,
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
