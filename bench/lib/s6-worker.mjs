// S6's worker (issue 19), one contender and one K per process, so that its RSS is its own:
// a lock manager holds K distinct locks (ttl 30 s); a second one in the same process waits for
// each of them (wait 20 s); after `holdMs` the first releases them all. Prints one JSON line.
// Run with --expose-gc. argv: contender K urls(comma-separated) holdMs
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { CONTENDERS } from './adapters.mjs';
import { serverCounters } from './stats.mjs';

const [key, kText, urlText, holdText] = process.argv.slice(2);
const K = Number(kText);
const urls = urlText.split(',');
const holdMs = Number(holdText ?? 3000);
const TTL = 30_000;
const WAIT = 20_000;

async function inBatches(items, batch, work) {
  const out = [];
  for (let i = 0; i < items.length; i += batch) {
    out.push(...(await Promise.all(items.slice(i, i + batch).map(work))));
  }
  return out;
}

const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await delay(50);
  }
  return process.memoryUsage().rss;
};

const counters = serverCounters(urls);
const contender = CONTENDERS[key];
const holder = await contender.create(urls, {});
const waiter = await contender.create(urls, { wait: WAIT });
const resources = Array.from({ length: K }, (_, i) => `s6:${process.pid}:${i}`);
const beforeHeld = await settle();
const held = await inBatches(resources, 500, (r) => holder.acquire(r, { ttl: TTL }));
const rssBase = await settle();

const c0 = await counters.snapshot();
let failed = 0;
let unavailable = 0;
const errors = {};
const got = new Array(K);
let lastAt = 0;
const waiting = resources.map((r, i) =>
  waiter.acquire(r, { ttl: TTL }).then(
    (lock) => {
      got[i] = lock;
      lastAt = performance.now();
    },
    (error) => {
      failed++;
      if (error?.reason === 'unavailable') unavailable++;
      const name = `${error?.name ?? 'Error'}${error?.reason ? `:${error.reason}` : ''}`;
      errors[name] = (errors[name] ?? 0) + 1;
      lastAt = performance.now();
    },
  ),
);
const startedAt = performance.now();
await delay(1000 - (performance.now() - startedAt));
const c1 = await counters.snapshot();
await delay(holdMs - 300 - (performance.now() - startedAt));
globalThis.gc?.();
const rssWaiting = process.memoryUsage().rss;
await delay(holdMs - (performance.now() - startedAt));
const c2 = await counters.snapshot();
const releasedAt = performance.now();
await inBatches(held, 1000, (lock) => lock.release().catch(() => undefined));
await Promise.all(waiting);
const settledMs = lastAt - releasedAt;
await inBatches(got.filter(Boolean), 1000, (lock) => lock.release().catch(() => undefined));
const first = counters.delta(c0, c1);
const waitingDelta = counters.delta(c1, c2);
const waitingSeconds = (c2.at - c1.at) / 1000;
const result = {
  key,
  K,
  firstSecondCommandsPerWaiter: first.commands / K,
  firstSecondByCommand: first.byCommand,
  waitingCommandsPerWaiterPerSecond: waitingDelta.commands / K / waitingSeconds,
  waitingByCommand: waitingDelta.byCommand,
  releaseToAllHeldMs: settledMs,
  failed,
  unavailable,
  errors,
  rssPerWaiterKB: (rssWaiting - rssBase) / K / 1024,
  rssPerHeldLockKB: (rssBase - beforeHeld) / K / 1024,
  rssWaitingMB: rssWaiting / 2 ** 20,
};
counters.close();
await holder.close();
await waiter.close();
console.log(JSON.stringify(result));
process.exit(0);
