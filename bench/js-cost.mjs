// The library's own JavaScript per uncontended cycle (acquire + release of one key), without
// sockets: 5 in-memory nodes whose replies are resolved promises, so that what is measured is
// the lock manager alone (no ioredis, no system calls, no Redis). At c = 1 on loopback the
// client's CPU per cycle is mostly the socket writes (stop 46: ~260 of ~350 µs in the kernel's
// write path); this separates the library's part from them, per fairness mode.
// Usage (from the repository root, after npm run build): node bench/js-cost.mjs [cycles=40000]
import { createRequire } from 'node:module';
import path from 'node:path';
import { distDir } from './lib/adapters.mjs';
import { median } from './lib/stats.mjs';

const require = createRequire(import.meta.url);
const { Redlock } = require(path.join(distDir(), 'index.js'));
const cycles = Number(process.argv[2] ?? 40_000);

/** One node: SET NX / compare-and-delete over a Map; the fair hand-off's uncontended branch. */
function memoryNode(name) {
  const keys = new Map();
  const del = (key, value) => {
    if (keys.get(key) !== value) return false;
    keys.delete(key);
    return true;
  };
  return {
    name,
    whenReady: () => Promise.resolve(),
    acquire(names, value) {
      if (keys.has(names[0])) return Promise.resolve({ acquired: false, pttl: 100 });
      keys.set(names[0], value);
      return Promise.resolve({ acquired: true });
    },
    extend: () => Promise.resolve(true),
    release: (names, value) => Promise.resolve(del(names[0], value) ? 1 : 0),
    handOff: (key, queueKey, value) => Promise.resolve(del(key, value) ? 'released' : 'not-held'),
    acquireQueued: () => Promise.reject(new Error('uncontended: never queued')),
    leaveQueue: () => Promise.resolve(),
    subscribe: (channel, onMessage, onGap, onConfirmed) => {
      onConfirmed?.();
      return () => undefined;
    },
    listening: () => true,
  };
}

async function cpuPerCycle(fairness) {
  const nodes = [0, 1, 2, 3, 4].map((i) => memoryNode(`memory-${i}`));
  // No restart detection: in-memory nodes keep no lease horizons (both modes alike).
  const redlock = new Redlock(nodes, { fairness, quarantine: false });
  const cycle = async () => {
    const lock = await redlock.acquire('js-cost', { ttl: 1_000, wait: 100 });
    await lock.release();
  };
  for (let i = 0; i < 5_000; i++) await cycle(); // warm-up (JIT)
  const before = process.cpuUsage();
  for (let i = 0; i < cycles; i++) await cycle();
  const used = process.cpuUsage(before);
  await redlock.close();
  return (used.user + used.system) / cycles;
}

const modes = ['queue', 'off'];
const runs = Object.fromEntries(modes.map((mode) => [mode, []]));
for (let repeat = 0; repeat < 7; repeat++) {
  for (const mode of modes) runs[mode].push(await cpuPerCycle(mode));
}
for (const mode of modes) {
  const times = runs[mode];
  console.log(
    `fairness '${mode}': ${median(times).toFixed(2)} µs of client CPU per cycle (median of 7; ` +
      `${Math.min(...times).toFixed(2)}–${Math.max(...times).toFixed(2)})`,
  );
}
