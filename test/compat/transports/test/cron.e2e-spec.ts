// A @Cron job every second on two instances, one firing 250 ms after the other (as if its clock
// were that far behind): with onBusy 'skip', every tick runs exactly once across them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { env } from '../src/env.js';
import { startInstances, stopInstances, type Instance } from './harness.js';

const DELAY_MS = 250;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('@Cron + @Locked(onBusy: skip) on two instances', { timeout: 120_000 }, () => {
  let instances: Instance[] = [];
  const store = new Redis(env('REDLOCK_COMPAT_STORE'));

  before(async () => {
    instances = await startInstances('cron', (name): Record<string, string> =>
      name === 'b' ? { COMPAT_CRON_DELAY_MS: String(DELAY_MS) } : {},
    );
  });

  after(async () => {
    await stopInstances(instances);
    await store.quit();
  });

  it('each tick runs exactly once across both instances, one of them 250 ms late', async () => {
    // Ticks from the first whole second with both instances up to one second before the end
    // (the last tick's late instance may still be deciding).
    const first = Math.floor(Date.now() / 1000) + 1;
    await sleep(9_000);
    const last = Math.floor(Date.now() / 1000) - 2;
    const ticks = await store.hgetall('ticks');
    const byA = await store.hgetall('ticks:a');
    const byB = await store.hgetall('ticks:b');
    const counts = Array.from({ length: last - first + 1 }, (_, i) => {
      const tick = String(first + i);
      return `${tick}: ${ticks[tick] ?? 0} (a ${byA[tick] ?? 0}, b ${byB[tick] ?? 0})`;
    });
    console.log(`ticks: ${counts.join('; ')}`);
    assert.ok(last - first >= 4, `too few ticks observed: ${counts.join('; ')}`);
    for (let tick = first; tick <= last; tick++) {
      assert.equal(Number(ticks[String(tick)] ?? 0), 1, `tick ${tick}: ${counts.join('; ')}`);
    }
  });
});
