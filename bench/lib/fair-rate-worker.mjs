// fair-rates worker (one OS process of two): S5's open-loop arrivals (open-loop.mjs) for this
// library only (no peers loaded, so it runs without bench/node_modules), with the `fairness` asked.
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { openLoopWorker } from './open-loop.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { Redlock } = require(
  path.resolve(here, '..', '..', process.env.BENCH_DIST ?? 'dist', 'index.js'),
);
const args = JSON.parse(process.argv[2]);
const { urls, resource, wait, ttl, fairness } = args;
const quiet = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
const redlock = new Redlock(urls, { logger: quiet, fairness });
await redlock.ready();
for (let i = 0; i < 5; i++)
  await (await redlock.acquire(`${resource}:warm:${process.pid}`, { ttl })).release();

await openLoopWorker(() => redlock.acquire(resource, { ttl, wait }), args);
await Promise.race([redlock.close(), delay(3000)]);
process.exit(0);
