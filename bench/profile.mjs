// Where one contender's uncontended cycle goes: server command executions per cycle by command
// (INFO commandstats deltas over the 5 nodes) and, run under `node --cpu-prof`, a CPU profile
// of the client. Usage (from the repository root, after npm run build):
//   node --cpu-prof --cpu-prof-dir=bench/results/profiles bench/profile.mjs nestjs-redlock 64 5000
//   node bench/lib/cpuprofile-top.mjs bench/results/profiles/<file>.cpuprofile
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { startLocalFleet } from './local-fleet.mjs';
import { CONTENDERS } from './lib/adapters.mjs';

const [key = 'nestjs-redlock', concurrencyArg = '64', durationArg = '5000'] = process.argv.slice(2);
const concurrency = Number(concurrencyArg);
const durationMs = Number(durationArg);
const fleet = await startLocalFleet(5);
const admins = fleet.urls.map((url) => new Redis(url));

async function commandStats() {
  const totals = {};
  const usec = {};
  for (const info of await Promise.all(admins.map((a) => a.info('commandstats')))) {
    for (const [, name, calls, us] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      totals[name] = (totals[name] ?? 0) + Number(calls);
      usec[name] = (usec[name] ?? 0) + Number(us);
    }
  }
  const cpu = await Promise.all(admins.map((a) => a.info('cpu')));
  const serverCpuUs = cpu.reduce((sum, info) => {
    const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)[1]);
    return sum + (field('used_cpu_sys') + field('used_cpu_user')) * 1e6;
  }, 0);
  return { totals, usec, serverCpuUs };
}

try {
  const contender = await CONTENDERS[key].create(fleet.urls);
  for (let i = 0; i < 200; i++) await (await contender.acquire('warm', { ttl: 10_000 })).release();
  const before = await commandStats();
  const cpu0 = process.cpuUsage();
  const end = performance.now() + durationMs;
  let cycles = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (performance.now() < end) {
        await (await contender.acquire(`p:${w}`, { ttl: 10_000 })).release();
        cycles++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const after = await commandStats();
  await contender.close();
  const perCycle = Object.fromEntries(
    Object.keys(after.totals)
      .map((name) => [name, (after.totals[name] - (before.totals[name] ?? 0)) / cycles])
      .filter(([name, v]) => v > 0.001 && name !== 'info'),
  );
  // Time the server spent executing each command (commandstats usec: the command itself, a
  // script's inner commands counted in the script's and again on their own), per cycle.
  const usecPerCycle = Object.fromEntries(
    Object.keys(perCycle).map((name) => [
      name,
      +((after.usec[name] - (before.usec[name] ?? 0)) / cycles).toFixed(2),
    ]),
  );
  const total = Object.values(perCycle).reduce((a, b) => a + b, 0);
  console.log(
    JSON.stringify({
      contender: key,
      concurrency,
      cycles,
      cyclesPerSec: Math.round(cycles / (durationMs / 1000)),
      clientCpuUsPerCycle: +((cpu.user + cpu.system) / cycles).toFixed(1),
      commandsPerCycle: +total.toFixed(2),
      byCommand: Object.fromEntries(Object.entries(perCycle).map(([k, v]) => [k, +v.toFixed(2)])),
      serverCpuUsPerCycle: +((after.serverCpuUs - before.serverCpuUs) / cycles).toFixed(1),
      serverExecUsPerCycleByCommand: usecPerCycle,
    }),
  );
} finally {
  admins.forEach((a) => a.disconnect());
  fleet.stop();
}
