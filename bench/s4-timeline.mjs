// Throughput per 100 ms around a SIGSTOP of node 0 (S4's setting: 16 workers, ttl 10 s), to see
// whether what is left of S4's drop sits in the first nodeTimeout (before the node is suspected)
// or lasts. Usage (after npm run build): node bench/s4-timeline.mjs [contender]; with
// BENCH_BASE_DIST=<another build> the contender nestjs-redlock-base is that build.
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
import { startLocalFleet } from './local-fleet.mjs';
import { CONTENDERS } from './lib/adapters.mjs';
const key = process.argv[2] ?? 'nestjs-redlock';
const fleet = await startLocalFleet(5);
try {
  const c = await CONTENDERS[key].create(fleet.urls);
  for (let i = 0; i < 200; i++) await (await c.acquire('warm', { ttl: 10_000 })).release();
  const buckets = new Array(40).fill(0);
  const start = performance.now();
  const end = start + 4000;
  setTimeout(() => fleet.pause(0), 1500);
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      while (performance.now() < end) {
        const h = await c.acquire(`tl:${w}`, { ttl: 10_000 });
        await h.release();
        buckets[Math.floor((performance.now() - start) / 100)]++;
      }
    }),
  );
  const healthy = buckets.slice(5, 15).reduce((a, b) => a + b, 0) / 10;
  console.log(key, 'cycles per 100 ms, pause at 1500 ms; healthy mean', healthy.toFixed(0));
  console.log(
    buckets
      .slice(10, 40)
      .map((b, i) => `${1000 + i * 100}:${(b / healthy).toFixed(2)}`)
      .join(' '),
  );
  const after = buckets.slice(20, 40).reduce((a, b) => a + b, 0) / 20;
  console.log(
    'mean 500-2500 ms after the pause:',
    (after / healthy).toFixed(2),
    '× healthy; first 300 ms:',
    (buckets.slice(15, 18).reduce((a, b) => a + b, 0) / 3 / healthy).toFixed(2),
  );
  fleet.resume(0);
  await Promise.race([c.close(), new Promise((r) => setTimeout(r, 3000))]);
} finally {
  fleet.stop();
}
