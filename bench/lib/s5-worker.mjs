// S5 worker (one OS process of two): the open-loop arrivals of open-loop.mjs for one contender.
import process from 'node:process';
import { setTimeout as delay } from 'node:timers/promises';
import { CONTENDERS } from './adapters.mjs';
import { openLoopWorker } from './open-loop.mjs';

const args = JSON.parse(process.argv[2]);
const { key, urls, resource, wait, ttl } = args;
const contender = await CONTENDERS[key].create(urls, { wait });
for (let i = 0; i < 5; i++)
  await (await contender.acquire(`${resource}:warm:${process.pid}`, { ttl })).release();

await openLoopWorker(() => contender.acquire(resource, { ttl }), args);
await Promise.race([contender.close(), delay(3000)]);
process.exit(0);
