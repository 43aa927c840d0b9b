// A fine-interleaved A/B of uncontended cycles (S1, c = 1) in one process: every contender runs
// in turn for short slices (250 ms by default) over the same 5 local nodes, alternating the order
// each round, so that they share the host's drift; reports per contender the median cycles/s,
// the median of its per-round ratio to the last contender, and client user / system CPU and
// server CPU (INFO cpu of the 5 nodes, read between slices) per cycle, and the per-round
// difference of client CPU to the last contender. Finer than `run.mjs`, whose slices last
// seconds and whose per-repeat ratios spread ±10 % on this host.
// Usage (from the repository root, after npm run build):
//   node bench/ab-slices.mjs fair=dist:queue off=dist:off v5=redlock-v5
// A spec is `name=directory:fairness` (a build of this package: `npx tsup --out-dir tmp-x
// --no-dts` for an experiment, inside the repository so that it finds node_modules) or
// `name=contender` (a key of lib/adapters.mjs). ROUNDS=40 and SLICE_MS=250 by default.
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { CONTENDERS } from './lib/adapters.mjs';
import { median } from './lib/stats.mjs';
import { startLocalFleet } from './local-fleet.mjs';

const require = createRequire(import.meta.url);
const quiet = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
const rounds = Number(process.env.ROUNDS ?? 40);
const sliceMs = Number(process.env.SLICE_MS ?? 250);
const specs = process.argv.slice(2);
if (specs.length < 2) throw new Error('usage: node bench/ab-slices.mjs name=spec name=spec …');

const fleet = await startLocalFleet(5);
const admins = fleet.urls.map((url) => new Redis(url));

/** The 5 nodes' CPU so far (µs). */
async function serverCpu() {
  const infos = await Promise.all(admins.map((a) => a.info('cpu')));
  const field = (info, name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)[1]);
  return infos.reduce(
    (t, i) => t + (field(i, 'used_cpu_sys') + field(i, 'used_cpu_user')) * 1e6,
    0,
  );
}

async function create(spec) {
  if (!spec.includes(':')) return CONTENDERS[spec].create(fleet.urls);
  const [dir, fairness] = spec.split(':');
  const { Redlock } = require(path.resolve(dir, 'index.js'));
  const redlock = new Redlock(fleet.urls, { logger: quiet, fairness });
  await redlock.ready();
  return { acquire: (r, { ttl }) => redlock.acquire(r, { ttl }), close: () => redlock.close() };
}

/** Runs `c`'s cycles for `ms`; records rate and CPU per cycle unless warming up. */
async function slice(c, ms, record) {
  let cycles = 0;
  const server0 = await serverCpu();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  while (performance.now() < t0 + ms) {
    await (await c.contender.acquire(`ab:${c.name}`, { ttl: 10_000 })).release();
    cycles++;
  }
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - t0;
  const server = (await serverCpu()) - server0;
  if (!record) return;
  c.rates.push((cycles / wall) * 1000);
  c.user.push(cpu.user / cycles);
  c.system.push(cpu.system / cycles);
  c.server.push(server / cycles);
}

const all = [];
try {
  for (const arg of specs) {
    const [name, spec] = arg.split('=');
    all.push({ name, contender: await create(spec), rates: [], user: [], system: [], server: [] });
  }
  for (const c of all) await slice(c, 1000, false);
  for (let r = 0; r < rounds; r++) {
    for (const c of r % 2 ? all : [...all].reverse()) await slice(c, sliceMs, true);
  }
  const last = all[all.length - 1];
  for (const c of all) {
    const ratio = median(c.rates.map((rate, i) => rate / last.rates[i]));
    console.log(
      `${c.name.padEnd(12)} ${median(c.rates).toFixed(0)} cycles/s, ×${last.name} ${ratio.toFixed(3)}, ` +
        `client user ${median(c.user).toFixed(1)} + system ${median(c.system).toFixed(1)} µs, ` +
        `server ${median(c.server).toFixed(1)} µs per cycle`,
    );
    if (c === last) continue;
    // Paired by round, as the ratio is: steadier than the difference of two medians.
    const d = c.user.map((u, i) => u + c.system[i] - last.user[i] - last.system[i]);
    d.sort((x, y) => x - y);
    const q = (f) => d[Math.floor(f * (d.length - 1))].toFixed(1);
    console.log(
      `${''.padEnd(12)} client CPU − ${last.name}'s, per round: median ${median(d).toFixed(1)} µs ` +
        `(quartiles ${q(0.25)} … ${q(0.75)})`,
    );
  }
} finally {
  for (const c of all) await c.contender.close();
  for (const a of admins) a.disconnect();
  fleet.stop();
}
