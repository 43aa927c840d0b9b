// S2 worker (one OS process of two): `tasks` concurrent acquisitions of one resource, each
// holding it for the critical section (read a counter on a separate data node, ~1 ms of work,
// write it back). Times are process.hrtime.bigint(): CLOCK_MONOTONIC, shared by both processes.
import process from 'node:process';
import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';
import { CONTENDERS } from './adapters.mjs';
import { criticalSection } from './cs.mjs';

const { key, urls, dataUrl, resource, counter, tasks, wait, ttl } = JSON.parse(process.argv[2]);
const contender = await CONTENDERS[key].create(urls, { wait: wait ?? undefined });
const data = new Redis(dataUrl);
data.on('error', () => {});
// Warm the connections and code paths on another resource.
for (let i = 0; i < 5; i++)
  await (await contender.acquire(`${resource}:warm:${process.pid}`, { ttl })).release();

process.send({ ready: true });
const { goAt } = await new Promise((resolve) => process.once('message', resolve));
const target = BigInt(goAt);
while (process.hrtime.bigint() < target) await delay(0);

const holds = [];
const failures = [];
const cpu0 = process.cpuUsage();
await Promise.all(
  Array.from({ length: tasks }, async () => {
    const t0 = process.hrtime.bigint();
    let handle;
    try {
      handle = await contender.acquire(resource, { ttl });
    } catch (error) {
      failures.push({
        after: Number(process.hrtime.bigint() - t0) / 1e6,
        error: String(error?.message ?? error).slice(0, 120),
      });
      return;
    }
    const acquiredAt = process.hrtime.bigint();
    await criticalSection(data, counter);
    const releasedAt = process.hrtime.bigint();
    await handle.release().catch(() => undefined);
    holds.push({
      acquiredAt: String(acquiredAt),
      releasedAt: String(releasedAt),
      doneAt: String(process.hrtime.bigint()),
    });
  }),
);
const cpu = process.cpuUsage(cpu0);
// Client CPU of the run (the critical section's data commands included: the same for everyone).
process.send({ holds, failures, cpuUs: cpu.user + cpu.system });
await Promise.race([contender.close(), delay(3000)]);
data.disconnect();
process.exit(0);
