// fair-rates worker (one OS process of two): as s5-worker.mjs, for this library only (no peers
// loaded, so it runs without bench/node_modules): Poisson arrivals at `rate`/s for `durationMs`,
// open loop, each acquiring one resource, holding it `holdMs` and releasing it.
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { Redlock } = require(
  path.resolve(here, '..', '..', process.env.BENCH_DIST ?? 'dist', 'index.js'),
);
const { urls, resource, rate, durationMs, holdMs, wait, ttl, seed, fairness } = JSON.parse(
  process.argv[2],
);
const quiet = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
const redlock = new Redlock(urls, { logger: quiet, fairness });
await redlock.ready();
for (let i = 0; i < 5; i++)
  await (await redlock.acquire(`${resource}:warm:${process.pid}`, { ttl })).release();

function random(a) {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const next = random(seed);
process.send({ ready: true });
const { goAt } = await new Promise((resolve) => process.once('message', resolve));
const start = BigInt(goAt);
while (process.hrtime.bigint() < start) await delay(0);
const requests = [];
const inflight = [];
const cpu0 = process.cpuUsage();
let at = 0;
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
        handle = await redlock.acquire(resource, { ttl, wait });
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
await Promise.race([redlock.close(), delay(3000)]);
process.exit(0);
