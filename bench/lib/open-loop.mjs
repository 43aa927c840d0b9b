// The open-loop arrivals of S5 and of fair-rates.mjs, written once (both ran the same loop in
// their own worker): a worker process (one of two) waits for the parent's start time, then
// requests arrive at random (a Poisson process of `rate` per second) for `durationMs` — an
// arrival never waits for an earlier request — each acquiring the one resource, holding it for
// `holdMs` (a timer: the service time) and releasing it. Times are process.hrtime.bigint():
// CLOCK_MONOTONIC, shared by both processes. No peer is imported here: fair-rates.mjs runs
// without bench/node_modules.
import process from 'node:process';
import { setTimeout as delay } from 'node:timers/promises';
import { setTimeout } from 'node:timers';

/** mulberry32: a small seeded generator, so both runs of a contender see comparable arrivals. */
function random(a) {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Runs one worker's arrivals and reports them to the parent (`process.send`): `acquire(resource)`
 * resolves with a handle to release, or rejects when not acquired. Tells the parent it is ready,
 * waits for `{ goAt }`, and sends `{ cpuUs, requests }` (times as decimal strings of hrtime ns);
 * `cpuUs` counts from `warmupMs` after the start (the unmeasured warm-up: s5.mjs).
 */
export async function openLoopWorker(acquire, { rate, durationMs, holdMs, seed, warmupMs = 0 }) {
  const next = random(seed);
  process.send({ ready: true });
  const { goAt } = await new Promise((resolve) => process.once('message', resolve));
  const start = BigInt(goAt);
  while (process.hrtime.bigint() < start) await delay(0);

  const requests = [];
  const inflight = [];
  let cpu0 = process.cpuUsage();
  setTimeout(() => (cpu0 = process.cpuUsage()), warmupMs);
  let at = 0; // ms after start of the next arrival
  for (;;) {
    at += -Math.log(1 - next()) * (1000 / rate);
    if (at >= durationMs) break;
    const due = start + BigInt(Math.round(at * 1e6));
    const ahead = Number(due - process.hrtime.bigint()) / 1e6;
    if (ahead > 1) await delay(ahead - 0.5);
    const request = { arrivedAt: process.hrtime.bigint() };
    requests.push(request);
    inflight.push(
      (async () => {
        let handle;
        try {
          handle = await acquire();
        } catch (error) {
          request.failed = String(error?.message ?? error).slice(0, 120);
          return;
        }
        request.acquiredAt = process.hrtime.bigint();
        await delay(holdMs);
        request.releasedAt = process.hrtime.bigint();
        await handle.release().catch(() => undefined);
      })(),
    );
  }
  await Promise.all(inflight);
  const cpu = process.cpuUsage(cpu0);
  process.send({
    cpuUs: cpu.user + cpu.system,
    requests: requests.map((r) => ({
      arrivedAt: String(r.arrivedAt),
      acquiredAt: r.acquiredAt === undefined ? null : String(r.acquiredAt),
      releasedAt: r.releasedAt === undefined ? null : String(r.releasedAt),
      failed: r.failed,
    })),
  });
}

/**
 * The parent's side: the workers' requests on one time line, in ms after `goAt` (not served:
 * `servedAt` / `releasedAt` Infinity).
 */
export function requestsOf(results, goAt) {
  const ms = (t) => Number(BigInt(t) - goAt) / 1e6;
  return results.flatMap((r) =>
    r.requests.map((q) => ({
      arrivedAt: ms(q.arrivedAt),
      servedAt: q.acquiredAt === null ? Infinity : ms(q.acquiredAt),
      releasedAt: q.releasedAt === null ? Infinity : ms(q.releasedAt),
      failed: q.failed,
    })),
  );
}
