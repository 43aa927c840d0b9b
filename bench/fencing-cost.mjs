// The cost of `fencing: true` on an uncontended acquire → release cycle, against fencing off,
// in one run on 5 local nodes (issue 7). Run: npm run build && node bench/fencing-cost.mjs
import { performance } from 'node:perf_hooks';
import { Redlock } from '../dist/index.js';
import { startLocalFleet } from './local-fleet.mjs';

const CYCLES = Number(process.env.CYCLES ?? 2000);
const fleet = await startLocalFleet(5);
const quiet = { log() {}, warn() {}, error() {} };
try {
  const results = {};
  // Interleaved rounds so that machine noise hits both alike.
  for (let round = 0; round < 3; round++) {
    for (const fencing of [false, true]) {
      const redlock = new Redlock(fleet.urls, { fencing, logger: quiet });
      await redlock.ready();
      for (let i = 0; i < 200; i++) await (await redlock.acquire(`warm${i}`)).release();
      const start = performance.now();
      for (let i = 0; i < CYCLES; i++) await (await redlock.acquire(`r${i % 64}`)).release();
      const perCycle = (performance.now() - start) / CYCLES;
      (results[fencing ? 'on' : 'off'] ??= []).push(perCycle);
      await redlock.close();
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const off = median(results.off);
  const on = median(results.on);
  console.log(`uncontended acquire→release, 5 nodes, ${CYCLES} cycles × 3 rounds (median)`);
  console.log(`fencing off: ${(off * 1000).toFixed(0)} µs/cycle`);
  console.log(`fencing on:  ${(on * 1000).toFixed(0)} µs/cycle  (${(on / off).toFixed(2)}× off)`);
} finally {
  fleet.stop();
}
