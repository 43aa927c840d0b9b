// Where one contender's commands and CPU go in S2 (the seeds' experiment: 2 processes, one
// hot key, CS ≈ 1 ms). Runs S2 `repeats` times and prints, per success (medians): lock-node
// commands by command (INFO commandstats over the 5 nodes, a script's inner commands counted
// too), the server time by command, client and Redis CPU. With --monitor, one more run with
// MONITOR on node 0 (`repeats` of them): each EVALSHA there is classified by the commands it ran inside (the
// script's path: a won or failed attempt, a hand-off, a horizon record...) and counted per
// success ×5 (node 0 stands for the 5). MONITOR slows the node: that run's figures are counts only.
// `perRepeat` lists each repeat's commands per success with how often the holder changed process.
// MONITOR_DUMP=file also writes each monitored run's lines to file.<run>.
// With BENCH_WORKER_ARGS='--cpu-prof --cpu-prof-dir=bench/results/profiles' the workers write
// CPU profiles (read them with bench/lib/cpuprofile-top.mjs); --tasks N (default 100) makes the
// runs longer so that the profile is not mostly start-up.
// Usage (from the repository root, after npm run build):
//   node bench/profile-s2.mjs nestjs-redlock-fair 3 --monitor
import fs from 'node:fs';
import Redis from 'ioredis';
import { startLocalFleet } from './local-fleet.mjs';
import { serverCounters, median } from './lib/stats.mjs';
import { runS2, calibrateCriticalSection } from './lib/s2.mjs';

const argv = process.argv.slice(2);
const tasksAt = argv.indexOf('--tasks');
const tasks = tasksAt >= 0 ? Number(argv.splice(tasksAt, 2)[1]) : 100;
const monitor = argv.includes('--monitor');
const [key = 'nestjs-redlock-fair', repeatsArg = '3'] = argv.filter((a) => !a.startsWith('--'));
const repeats = Number(repeatsArg);

const fleet = await startLocalFleet(6);
const lockUrls = fleet.urls.slice(0, 5);
const dataUrl = fleet.urls[5];
const counters = serverCounters(lockUrls);
const round = (x, d = 1) => +x.toFixed(d);
const medians = (objects) =>
  Object.fromEntries(
    [...new Set(objects.flatMap((o) => Object.keys(o)))]
      .map((name) => [name, median(objects.map((o) => o[name] ?? 0))])
      .sort((a, b) => b[1] - a[1])
      .map(([name, v]) => [name, round(v, 2)]),
  );

try {
  const idleRate = await counters.idleRate(1000);
  const csAloneMs = await calibrateCriticalSection(dataUrl);
  const runs = [];
  for (let r = 0; r < repeats; r++) {
    const run = { key, fleetUrls: lockUrls, dataUrl, counters, idleRate, wait: 20_000 };
    runs.push(await runS2({ ...run, csAloneMs, tasks, tag: `profile:${key}:${r}` }));
  }
  const out = {
    contender: key,
    tasks,
    repeats,
    successes: runs.map((x) => x.successes),
    handOffP50Ms: round(median(runs.map((x) => x.handOffP50)), 2),
    wallRatio: round(median(runs.map((x) => x.wallRatio)), 2),
    commandsPerSuccess: round(median(runs.map((x) => x.commandsPerSuccess))),
    // Per repeat, in order: commands per success and how often the holder changed process (the
    // second decides most of the first under a FIFO hand-off: bench/REPORT.md).
    perRepeat: runs.map((x) => [round(x.commandsPerSuccess), x.processSwitches]),
    clientCpuUsPerSuccess: round(median(runs.map((x) => x.clientCpuUsPerSuccess)), 0),
    serverCpuUsPerSuccess: round(median(runs.map((x) => x.serverCpuUsPerSuccess)), 0),
    byCommand: medians(runs.map((x) => x.commandsByType)),
    serverUsecByCommand: medians(runs.map((x) => x.serverUsecByType)),
  };
  if (monitor) {
    out.node0Scripts = [];
    for (let r = 0; r < repeats; r++)
      out.node0Scripts.push(await monitored(idleRate, csAloneMs, r));
  }
  console.log(JSON.stringify(out, null, 2));
} finally {
  counters.close();
  fleet.stop();
}

/** One S2 run with MONITOR on node 0: each command, scripts by the commands they ran. */
async function monitored(idleRate, csAloneMs, r) {
  const admin = new Redis(lockUrls[0]);
  const mon = await admin.monitor();
  const kinds = new Map();
  let script; // the EVALSHA whose inner commands are being read
  const close = () => {
    if (script) kinds.set(script.join(' '), (kinds.get(script.join(' ')) ?? 0) + 1);
    script = undefined;
  };
  const dump = [];
  mon.on('monitor', (time, args, source) => {
    const name = String(args[0]).toLowerCase();
    if (process.env.MONITOR_DUMP) dump.push(`${time} ${source} ${args.slice(0, 4).join(' ')}`);
    if (source === 'lua') {
      if (script) script.push(name);
      return;
    }
    close();
    if (name === 'evalsha' || name === 'eval') script = ['EVALSHA →'];
    else if (name !== 'info' && name !== 'monitor') {
      const k = name === 'subscribe' || name === 'unsubscribe' ? `${name} (connection)` : name;
      kinds.set(k, (kinds.get(k) ?? 0) + 1);
    }
  });
  let result;
  try {
    result = await runS2({
      key,
      fleetUrls: lockUrls,
      dataUrl,
      counters,
      idleRate,
      wait: 20_000,
      csAloneMs,
      tasks,
      tag: `profile-monitor:${key}:${r}`,
    });
  } finally {
    close();
    if (process.env.MONITOR_DUMP)
      fs.writeFileSync(`${process.env.MONITOR_DUMP}.${r}`, dump.join('\n'));
    mon.disconnect();
    admin.disconnect();
  }
  // Warm-up (5 cycles per worker on another resource) and connection set-up are included.
  return {
    note: 'node 0 only, ×5 per success; includes each worker’s 5 warm-up cycles',
    successes: result.successes,
    handOffP50Ms: round(result.handOffP50, 2),
    perSuccessTimes5: Object.fromEntries(
      [...kinds]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => [k, round((5 * n) / result.successes, 2)]),
    ),
  };
}
