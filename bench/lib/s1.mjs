// S1: uncontended acquire → release cycles at a given concurrency (each worker its own
// resource), and S3/S4: the same with one node killed or SIGSTOPped part-way through.
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { CONTENDERS } from './adapters.mjs';
import { quantile } from './stats.mjs';

const TTL = 10_000;
/** An acquire or release that has not settled after this long counts as hung (S3/S4). */
export const HUNG_MS = 1000;

function withTimeout(promise, ms) {
  return Promise.race([promise, delay(ms).then(() => 'timeout')]);
}

async function warmUp(contender, concurrency, prefix) {
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; i < 20; i++)
        await (await contender.acquire(`${prefix}:${w}`, { ttl: TTL })).release();
    }),
  );
}

/**
 * The warm-up of a fault run, retried while the fleet does not take locks yet. After an earlier
 * run killed and restarted node 0, a lock manager created now (this library's) finds every node
 * of a fleet younger than `maxTtl` possibly restarted, and votes only once the leases filed under
 * node 0's old run_id have ended (the restart rule, lib/core/quorum/quarantine.ts rule 2: a node
 * up for less than maxTtl cannot prove it did not restart): up to two default ttls. A fleet up
 * for longer lets the other nodes vote at once. Waited out here, before the measured window.
 */
async function settledWarmUp(contender, concurrency, prefix) {
  const giveUpAt = performance.now() + 60_000;
  for (;;) {
    try {
      return await warmUp(contender, concurrency, prefix);
    } catch (error) {
      if (error?.reason !== 'unavailable' || performance.now() > giveUpAt) throw error;
      await delay(Math.min(error.retryAfterMs ?? 1_000, 5_000));
    }
  }
}

/**
 * Runs S1 for one contender: resolves with cycles/s, acquire p50/p99 (ms), client CPU µs per
 * cycle (this process: the bench loop's own share is the same for every contender), server CPU
 * µs per cycle and server command executions per cycle (summed over the nodes).
 */
export async function runS1({ key, urls, counters, idleRate, concurrency, durationMs, tag }) {
  const contender = await CONTENDERS[key].create(urls);
  try {
    await warmUp(contender, concurrency, `warm:${tag}`);
    globalThis.gc?.();
    const latencies = [];
    let cycles = 0;
    let errors = 0;
    const before = await counters.snapshot();
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    const end = start + durationMs;
    await Promise.all(
      Array.from({ length: concurrency }, async (_, w) => {
        const resource = `s1:${tag}:${w}`;
        while (performance.now() < end) {
          const t = performance.now();
          try {
            const handle = await contender.acquire(resource, { ttl: TTL });
            latencies.push(performance.now() - t);
            await handle.release();
            cycles++;
          } catch {
            errors++;
          }
        }
      }),
    );
    const wall = performance.now() - start;
    const cpu = process.cpuUsage(cpu0);
    const after = await counters.snapshot();
    const server = counters.delta(before, after, idleRate);
    return {
      contender: key,
      concurrency,
      cycles,
      errors,
      cyclesPerSec: (cycles / wall) * 1000,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      clientCpuUs: (cpu.user + cpu.system) / cycles,
      serverCpuUs: server.cpuUs / cycles,
      commands: server.commands / cycles,
    };
  } finally {
    await withTimeout(contender.close(), 3000);
  }
}

/**
 * S3 (`mode: 'kill'`) / S4 (`mode: 'pause'`): S1 at `concurrency` on a healthy fleet for
 * `healthyMs`, then node 0 is killed or SIGSTOPped for `faultMs`. Hung = an acquire or release
 * that took longer than HUNG_MS or had not settled `graceMs` after the fault window. p99 of the
 * acquisitions started during the fault against those started before it, same run.
 */
export async function runFault({
  key,
  fleet,
  mode,
  concurrency,
  healthyMs,
  faultMs,
  graceMs,
  tag,
}) {
  const contender = await CONTENDERS[key].create(fleet.urls);
  const healthy = [];
  const faulty = [];
  const pending = new Set();
  let hungSettled = 0;
  let cycles = 0;
  let errors = 0;
  let faultAt = Infinity;
  let healthyCycles = 0;
  let faultCycles = 0;
  let end = Infinity;
  try {
    await settledWarmUp(contender, concurrency, `warm:${tag}`);
    const start = performance.now();
    end = start + healthyMs + faultMs;
    const op = async (kind, fn) => {
      const entry = { kind, start: performance.now() };
      pending.add(entry);
      try {
        return await fn();
      } finally {
        pending.delete(entry);
        if (performance.now() - entry.start > HUNG_MS) hungSettled++;
      }
    };
    const workers = Promise.all(
      Array.from({ length: concurrency }, async (_, w) => {
        const resource = `${mode}:${tag}:${w}`;
        while (performance.now() < end) {
          const t = performance.now();
          try {
            const handle = await op('acquire', () => contender.acquire(resource, { ttl: TTL }));
            (t >= faultAt ? faulty : healthy).push(performance.now() - t);
            await op('release', () => handle.release());
            cycles++;
            // Throughput in each window: cycles that ended in it, per ms of it.
            const done = performance.now();
            if (done < faultAt) healthyCycles++;
            else if (done < end) faultCycles++;
          } catch {
            errors++;
          }
        }
      }),
    );
    await delay(healthyMs);
    faultAt = performance.now();
    const healthyWindowMs = faultAt - start;
    if (mode === 'kill') fleet.kill(0);
    else fleet.pause(0);
    await withTimeout(workers, faultMs + graceMs);
    const now = performance.now();
    const stillPending = pending.size;
    // An acquisition still pending counts in the fault p99 with its time so far (a lower bound).
    for (const e of pending)
      if (e.kind === 'acquire' && e.start >= faultAt) faulty.push(now - e.start);
    const healthyP99 = quantile(healthy, 0.99);
    const faultP99 = quantile(faulty, 0.99);
    const faultAcquisitions = faulty.length;
    const cyclesInWindow = cycles;
    if (mode === 'kill') await fleet.restart(0);
    else fleet.resume(0);
    const drained = await withTimeout(workers, 15_000);
    return {
      contender: key,
      mode,
      concurrency,
      cycles: cyclesInWindow,
      errors,
      hung: hungSettled + (drained === 'timeout' ? pending.size : 0),
      stillPendingAtEnd: stillPending,
      neverSettled: drained === 'timeout' ? pending.size : 0,
      healthyP99,
      faultP99,
      faultAcquisitions,
      p99Ratio: faultP99 / healthyP99,
      throughputRatio: faultCycles / (end - faultAt) / (healthyCycles / healthyWindowMs),
    };
  } finally {
    await withTimeout(contender.close(), 3000);
  }
}
