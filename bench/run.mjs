// The benchmark (issue 8): this package's built dist/ against node-redlock 4 and 5β,
// redis-semaphore's RedlockMutex and @sesamecare-oss/redlock, with ratios to a minimal
// hand-written Redlock measured in the same run; contenders interleaved within each repeat,
// medians over repeats. Run from the repository root: npm run bench [-- --quick]
// Options: --quick, --repeats N, --concurrency 1,16,64, --s2-repeats N, --fault-repeats N,
// --s5-seconds N, --s5-warmup N (seconds, not measured), --s5-loads 0.7,0.95, --only s1,s2,s2-shipped,s3,s4,s5,s6,micro,
// --waiters 1000,5000,20000 (S6's K),
// --contenders a,b (keys of CONTENDERS in lib/adapters.mjs); BENCH_DIST=dir picks another build.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLocalFleet } from './local-fleet.mjs';
import {
  CONTENDERS,
  S1_CONTENDERS,
  S2_CONTENDERS,
  FAULT_CONTENDERS,
  S5_CONTENDERS,
  distDir,
} from './lib/adapters.mjs';
import { serverCounters } from './lib/stats.mjs';
import { runS1, runFault } from './lib/s1.mjs';
import { runS2, calibrateCriticalSection } from './lib/s2.mjs';
import { runS5, calibrateHold } from './lib/s5.mjs';
import { runS6, S6_CONTENDERS } from './lib/s6.mjs';
import { microOwnerValue } from './lib/micro.mjs';
import { summarise, markdown } from './lib/report.mjs';
import { chart } from './lib/chart.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const option = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
};
const quick = flag('--quick');
const config = {
  quick,
  repeats: Number(option('--repeats', quick ? 3 : 5)),
  s1DurationMs: quick ? 800 : 2500,
  s1Concurrency: option('--concurrency', '1,16,64').split(',').map(Number),
  s2Repeats: Number(option('--s2-repeats', quick ? 1 : 5)),
  faultRepeats: Number(option('--fault-repeats', quick ? 1 : 2)),
  fault: {
    concurrency: 16,
    healthyMs: quick ? 1000 : 2000,
    faultMs: quick ? 1500 : 3000,
    graceMs: 2500,
  },
  // S5: open-loop contention; hold 20 ms (capacity ≈ 1 / 21 ms), waits up to 20 s.
  s5: {
    durationMs: Number(option('--s5-seconds', quick ? 15 : 60)) * 1000,
    warmupMs: Number(option('--s5-warmup', 3)) * 1000,
    loads: option('--s5-loads', '0.7,0.95').split(',').map(Number),
    holdMs: 20,
    wait: 20_000,
  },
  only: option(
    '--only',
    quick ? 's1,s2,s3,s4,s5,s6,micro' : 's1,s2,s2-shipped,s3,s4,s5,s6,micro',
  ).split(','),
  waiters: option('--waiters', '1000,5000,20000').split(',').map(Number),
  contenders: option('--contenders', '').split(',').filter(Boolean),
};
// The base build (BENCH_BASE_DIST) runs wherever this library does, when asked for by name.
const pick = (list) =>
  config.contenders.length
    ? config.contenders.filter(
        (k) => list.includes(k) || (k === 'nestjs-redlock-base' && list.includes('nestjs-redlock')),
      )
    : list;
const log = (...args) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...args);
const rotate = (list, r) => list.map((_, i) => list[(i + r) % list.length]);

function gitCommit() {
  // A build made elsewhere (BENCH_DIST, e.g. a clean export of one commit) says what it is.
  if (process.env.BENCH_DIST) return process.env.BENCH_COMMIT ?? `build in ${distDir()}`;
  try {
    const root = path.resolve(here, '..');
    const head = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'])
      .toString()
      .trim();
    const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', 'lib'])
      .toString()
      .trim();
    return dirty ? `${head} + uncommitted lib/ changes` : head;
  } catch {
    return 'unknown';
  }
}

const started = Date.now();
const raw = { s1: [], s2: [], s2Shipped: [], s3: [], s4: [], s5: [], s6: [], micro: null };
const fleet = await startLocalFleet(6); // 5 lock nodes + 1 data node for S2's counter
const lockUrls = fleet.urls.slice(0, 5);
const dataUrl = fleet.urls[5];
// S3/S4 fault the lock nodes only (node 0); the data node is S2's counter, not a lock node.
const lockFleet = { ...fleet, urls: lockUrls };
const counters = serverCounters(lockUrls);
try {
  const idleRate = await counters.idleRate(1000);
  log(
    `fleet up; idle server CPU ${(idleRate * 1000).toFixed(0)} µs/s over 5 nodes; dist ${distDir()}`,
  );
  if (config.only.includes('micro')) raw.micro = await microOwnerValue(distDir());

  if (config.only.includes('s1')) {
    for (let r = 0; r < config.repeats; r++) {
      for (const concurrency of config.s1Concurrency) {
        for (const key of rotate(pick(S1_CONTENDERS), r)) {
          const result = await runS1({
            key,
            urls: lockUrls,
            counters,
            idleRate,
            concurrency,
            durationMs: config.s1DurationMs,
            tag: `${key}:${r}`,
          });
          raw.s1.push({ repeat: r, ...result });
          log(
            `S1 r${r} c${concurrency} ${key}: ${result.cyclesPerSec.toFixed(0)}/s, p99 ${result.p99.toFixed(2)} ms, client ${result.clientCpuUs.toFixed(0)} µs, server ${result.serverCpuUs.toFixed(0)} µs, ${result.commands.toFixed(1)} cmds`,
          );
        }
      }
    }
  }

  if (config.only.includes('s2') || config.only.includes('s2-shipped')) {
    const csAloneMs = await calibrateCriticalSection(dataUrl);
    raw.csAloneMs = csAloneMs;
    log(`critical section alone: ${csAloneMs.toFixed(3)} ms`);
    const variants = [];
    if (config.only.includes('s2')) variants.push(['s2', 20_000, config.s2Repeats]);
    if (config.only.includes('s2-shipped')) variants.push(['s2Shipped', undefined, 1]);
    for (const [name, wait, repeats] of variants) {
      for (let r = 0; r < repeats; r++) {
        for (const key of rotate(pick(S2_CONTENDERS), r)) {
          const result = await runS2({
            key,
            fleetUrls: lockUrls,
            dataUrl,
            counters,
            idleRate,
            wait,
            csAloneMs,
            tag: `${name}:${key}:${r}`,
          });
          raw[name].push({ repeat: r, ...result });
          log(
            `${name} r${r} ${key}: ${result.successes}/100, wall ratio ${result.wallRatio.toFixed(2)}, hand-off p50 ${result.handOffP50.toFixed(2)} ms, ${result.commandsPerSuccess.toFixed(1)} cmds/success, ${result.processSwitches} process switches, overlaps ${result.overlaps}, lost ${result.lostUpdates}`,
          );
        }
      }
    }
  }

  for (const [name, mode] of [
    ['s3', 'kill'],
    ['s4', 'pause'],
  ]) {
    if (!config.only.includes(name)) continue;
    for (let r = 0; r < config.faultRepeats; r++) {
      for (const key of rotate(pick(FAULT_CONTENDERS), r)) {
        const result = await runFault({
          key,
          fleet: lockFleet,
          mode,
          ...config.fault,
          tag: `${key}:${r}`,
        });
        raw[name].push({ repeat: r, ...result });
        log(
          `${name} r${r} ${key}: hung ${result.hung}, p99 ${result.faultP99.toFixed(1)} ms vs healthy ${result.healthyP99.toFixed(1)} ms (${result.p99Ratio.toFixed(2)}×), throughput ${result.throughputRatio.toFixed(2)}× healthy, errors ${result.errors}`,
        );
      }
    }
  }

  if (config.only.includes('s5')) {
    const idle5 = await counters.idleRate(500);
    const holdAloneMs = await calibrateHold(config.s5.holdMs);
    raw.s5HoldAloneMs = holdAloneMs;
    log(
      `S5 hold alone: ${holdAloneMs.toFixed(2)} ms (capacity ${(1000 / (holdAloneMs + 1)).toFixed(1)}/s)`,
    );
    for (const load of config.s5.loads) {
      for (const key of pick(S5_CONTENDERS)) {
        const result = await runS5({
          key,
          fleetUrls: lockUrls,
          counters,
          idleRate: idle5,
          load,
          ...config.s5,
          holdAloneMs,
          tag: `${key}:${load}`,
        });
        raw.s5.push(result);
        log(
          `S5 ${Math.round(load * 100)}% ${key}: ${result.successes}/${result.requests}, wait p50 ${result.waitP50.toFixed(1)} p99 ${result.waitP99.toFixed(1)} max ${result.waitMax.toFixed(0)} ms, inversions ${(result.inversions * 100).toFixed(1)}%, ${result.commandsPerSuccess.toFixed(1)} cmds, client ${result.clientCpuUsPerSuccess.toFixed(0)} µs, redis ${result.serverCpuUsPerSuccess.toFixed(0)} µs per success, overlaps ${result.overlaps}`,
        );
      }
    }
  }

  if (config.only.includes('s6')) {
    for (const K of config.waiters) {
      for (const key of pick(S6_CONTENDERS)) {
        const result = await runS6({ key, K, urls: lockUrls });
        raw.s6.push(result);
        log(
          `S6 K=${K} ${key}: ${result.waitingCommandsPerWaiterPerSecond.toFixed(2)} cmds/waiter/s waiting, first second ${result.firstSecondCommandsPerWaiter.toFixed(1)}, all held ${result.releaseToAllHeldMs.toFixed(0)} ms after the release, failed ${result.failed}, RSS ${result.rssPerWaiterKB.toFixed(1)} KB/waiter`,
        );
      }
    }
  }
} finally {
  counters.close();
  fleet.stop();
}

const meta = {
  date: new Date().toISOString(),
  commit: gitCommit(),
  node: process.version,
  cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}`,
  loadAverageAtEnd: os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' '),
  redis: execFileSync('redis-server', ['--version']).toString().trim(),
  durationS: Math.round((Date.now() - started) / 1000),
  config,
  labels: Object.fromEntries(Object.entries(CONTENDERS).map(([k, v]) => [k, v.label])),
};
const summary = summarise(raw, meta);
const outDir = path.join(here, 'results');
fs.mkdirSync(outDir, { recursive: true });
const stamp = meta.date.replace(/[:.]/g, '-');
const md = markdown(summary, meta);
fs.writeFileSync(
  path.join(outDir, `bench-${stamp}.json`),
  JSON.stringify({ meta, summary, raw }, null, 2),
);
fs.writeFileSync(path.join(outDir, 'latest.json'), JSON.stringify({ meta, summary, raw }, null, 2));
fs.writeFileSync(path.join(outDir, `bench-${stamp}.md`), md);
fs.writeFileSync(path.join(outDir, 'latest.md'), md);
fs.writeFileSync(path.join(outDir, 'latest.svg'), chart(summary, meta));
console.log(md);
log(
  `done in ${meta.durationS} s; results in ${path.relative(process.cwd(), outDir)}/latest.{md,json,svg}`,
);
