/**
 * The fault campaign (issue 9 items 1-2): real OS processes locking through the compiled library
 * against a real 5-node Redis fleet, under a seeded nemesis, checked by an independent checker
 * that reads only the histories.
 *
 *   npm run campaign                      the full run (≥ 10 000 lock cycles, < 10 min)
 *   node test/campaign/campaign.mjs --short     the CI run (≥ 1 000 cycles, ~1-2 min)
 *   options: --seed N, --out summary.json
 *
 * Phases: nine safe ones (persistent nodes; nodes restarted empty with the quarantine on; a
 * fleet mixing durable and non-durable nodes whose restarts happen while new worker processes
 * join; restarts while leases are extended past the ttl; two with fair hand-off; and issue 23's:
 * another fleet sharing a node that restarts, a shorter-ttl worker with restarts while two
 * peers are paused, durable configuration restarted without its files), each with node kills/restarts, node
 * SIGSTOPs past the ttl and (some) latency through a proxy and worker SIGSTOPs past their lease —
 * 0 violations allowed; and two controls the checker must catch
 * (nodes restarted empty without the quarantine; a worker whose lock has a quorum of one). A
 * campaign whose controls show no overlap fails: its checker would be blind.
 */
import { fork, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { check, readHistories, waitReport } from './checker.mjs';
import { startFleet, stopFleet, startProxy, Node, freePort } from './fleet.mjs';
import { seeded } from './random.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const require = createRequire(import.meta.url);
const Redis = require('ioredis');

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : args[i + 1];
};
const short = flag('--short');
const seed = Number(option('--seed', String(Date.now() % 100_000)));
const out = option('--out', undefined);
const now = () => Number(process.hrtime.bigint()) / 1e6;

const TTL = 500;
/** Every worker's maxTtl: extensions go up to 4 ttls (extendLonger). */
const MAX_TTL = 4 * TTL;
const NODE_TIMEOUT = 100;
const WORKERS = 3;
const LOOPS = 6;
const RESOURCES = 6;
// Nine safe phases since issue 23 (two with fair hand-off, three with its configurations): the
// short run gives each 8 s, so the CI run keeps about its length (each phase starts its fleet);
// the full run 60 s each (≥ 10 000 safe cycles on a loaded machine).
const SAFE_MS = short ? 8_000 : 60_000;
const CONTROL_MS = short ? 8_000 : 20_000;

const PHASES = [
  {
    name: 'safe: persistent nodes (appendfsync always)',
    safe: true,
    aof: true,
    quarantine: true,
    nemesis: ['kill', 'kill', 'pauseNode', 'latency', 'pauseWorker'],
    ms: SAFE_MS,
  },
  {
    name: 'safe: nodes restarted empty, quarantine on',
    safe: true,
    aof: false,
    quarantine: true,
    nemesis: ['kill', 'kill', 'pauseNode', 'latency', 'pauseWorker'],
    ms: SAFE_MS,
  },
  {
    // Issue 16 defects 1 and 4: durable peers and lock managers that never saw the restart.
    name: 'safe: mixed durability (nodes 0-1 durable), restarts while new workers join',
    safe: true,
    aof: [true, true, false, false, false],
    quarantine: true,
    nemesis: ['kill', 'kill', 'kill', 'pauseNode', 'pauseWorker'],
    joiners: 3,
    ms: SAFE_MS,
  },
  {
    // Issue 16 defect 2: restarts while leases are lengthened past the ttl.
    name: 'safe: restarts during extensions past the ttl',
    safe: true,
    aof: false,
    quarantine: true,
    extendLonger: true,
    nemesis: ['kill', 'kill', 'kill', 'pauseNode'],
    ms: SAFE_MS,
  },
  {
    // Issue 18: fair hand-off (fairness: 'queue', no fencing: a fenced lock never queues) on two
    // hot resources, with the queue nemesis (queues deleted on a node, dead groups put at their
    // head) besides the node faults. The queue decides who tries next, the quorum who holds.
    name: 'safe: fair hand-off (every worker fairness queue), queue nemesis',
    safe: true,
    aof: false,
    quarantine: true,
    fair: 'all',
    resources: 2,
    nemesis: ['kill', 'pauseNode', 'latency', 'pauseWorker', 'dropQueues', 'deadHead', 'deadHead'],
    ms: SAFE_MS,
  },
  {
    name: 'safe: fair and unfair workers on the same keys (workers 0 and 2 fair)',
    safe: true,
    aof: false,
    quarantine: true,
    fair: 'half',
    resources: 2,
    nemesis: ['kill', 'pauseNode', 'latency', 'pauseWorker', 'dropQueues', 'deadHead'],
    ms: SAFE_MS,
  },
  {
    // Issue 23 finding 1: another fleet (nodes 4, 5 and 6) shares node 4 with the default key
    // prefix, locking its own resources; node 4 restarts empty like the others.
    name: 'safe: another fleet shares node 4 (its own workers and resources), node 4 restarts too',
    safe: true,
    aof: false,
    quarantine: true,
    otherFleet: true,
    nemesis: ['kill', 'killShared', 'killShared', 'pauseNode', 'pauseWorker'],
    ms: SAFE_MS,
  },
  {
    // Issue 23 findings 2 and 6: a worker with a shorter ttl on the same resources, and restarts
    // while two other nodes are paused (a partition during admission), with workers joining.
    name: 'safe: a shorter-ttl worker, restarts while two peers are paused, workers joining',
    safe: true,
    aof: false,
    quarantine: true,
    shortTtlWorker: true,
    joiners: 2,
    nemesis: ['kill', 'killWhilePaused', 'killWhilePaused', 'pauseWorker'],
    ms: SAFE_MS,
  },
  {
    // Issue 23 finding 3: appendfsync always, but a restart loses the files (no volume).
    name: 'safe: durable configuration, restarts without the files',
    safe: true,
    aof: true,
    quarantine: true,
    nemesis: ['wipe', 'wipe', 'kill', 'pauseNode', 'pauseWorker'],
    ms: SAFE_MS,
  },
  {
    name: 'control: nodes restarted empty, quarantine off',
    safe: false,
    aof: false,
    quarantine: false,
    // Every section long, on a longer lease: a restarted majority reconnects within ~0.1-0.5 s
    // (kill, start, ioredis backoff, script load), so a holder must still believe it holds by
    // then. With 0-15 ms sections on a 500 ms lease the control caught nothing on a busy machine.
    allLong: true,
    ttl: 3_000,
    nemesis: ['killMajority'],
    ms: CONTROL_MS,
  },
  {
    name: 'control: one worker locks with a quorum of one',
    safe: false,
    aof: false,
    quarantine: true,
    broken: true,
    nemesis: [],
    ms: CONTROL_MS,
  },
];

/** Compiles lib/ with tsc into a gitignored folder: workers run the real code, without ts-jest. */
function build() {
  // One per campaign process: two campaigns at once (a full run beside npm test) must not
  // delete each other's build.
  const outDir = join(root, '.redis-fleet', `campaign-build-${process.pid}`);
  process.on('exit', () => rmSync(outDir, { recursive: true, force: true }));
  rmSync(outDir, { recursive: true, force: true });
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(
    process.execPath,
    [
      tsc,
      '-p',
      join(root, 'tsconfig.build.json'),
      '--outDir',
      outDir,
      '--declaration',
      'false',
      '--declarationMap',
      'false',
      '--sourceMap',
      'false',
      '--incremental',
      'false',
    ],
    { stdio: 'inherit' },
  );
  return outDir;
}

async function runPhase(phase, index, buildDir, workDir, rng) {
  const log = join(workDir, `phase${index}-nemesis.jsonl`);
  const fleet = await startFleet(5, { aof: phase.aof });
  const witnessNode = new Node(
    await freePort(),
    mkdtempSync(join(tmpdir(), 'redlock-witness-')),
    false,
  );
  await witnessNode.start();
  const proxy = await startProxy(fleet[1].port);
  const urls = fleet.map((n, i) => (i === 1 ? proxy.url : n.url));
  const faults = {};
  const pauses = [];
  const note = (entry) => {
    faults[entry.action] = (faults[entry.action] ?? 0) + 1;
    appendFileSync(log, `${JSON.stringify({ t: now(), ...entry })}\n`);
  };

  const histories = [];
  const workers = [];
  const started = now();
  const spawnWorker = (w, durationMs, own = {}) => {
    const history = join(workDir, `phase${index}-worker${w}.jsonl`);
    histories.push(history);
    const config = {
      id: w,
      build: buildDir,
      nodes: own.nodes ?? urls,
      resourceName: own.resourceName,
      maxTtl: Math.max(MAX_TTL, phase.ttl ?? TTL),
      broken: phase.broken === true && w === 0,
      allLong: phase.allLong === true,
      quarantine: phase.quarantine,
      extendLonger: phase.extendLonger === true,
      fair: phase.fair === 'all' || (phase.fair === 'half' && w % 2 === 0),
      // A worker with half the ttl on the same resources (issue 23 finding 2).
      ttl: phase.shortTtlWorker && w === WORKERS - 1 ? TTL / 2 : (phase.ttl ?? TTL),
      // A ttl is at least 4 node timeouts.
      nodeTimeout: phase.shortTtlWorker && w === WORKERS - 1 ? NODE_TIMEOUT / 2 : NODE_TIMEOUT,
      loops: LOOPS,
      resources: phase.resources ?? RESOURCES,
      durationMs,
      witness: witnessNode.url,
      history,
      seed: rng.int(1, 1e9),
    };
    const child = fork(join(here, 'worker.mjs'), [], {
      env: { ...process.env, CAMPAIGN_WORKER: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    workers.push({
      child,
      exited: new Promise((resolveExit) => child.once('exit', (code) => resolveExit(code))),
    });
  };
  for (let w = 0; w < WORKERS; w++) spawnWorker(w, phase.ms);
  // Another fleet sharing node 4: its own two nodes, its own workers and resources (s0, s1, …).
  const otherNodes = phase.otherFleet ? await startFleet(2, { aof: false }) : [];
  if (phase.otherFleet) {
    const other = [fleet[4].url, ...otherNodes.map((n) => n.url)];
    for (let w = 0; w < 2; w++) {
      spawnWorker(100 + w, phase.ms, { nodes: other, resourceName: 's' });
    }
  }
  // Workers that join later: new lock managers that never saw the restarts before them.
  const joining = [];
  for (let j = 0; j < (phase.joiners ?? 0); j++) {
    const at = rng.between(0.2, 0.7) * phase.ms;
    joining.push(
      sleep(at).then(() => spawnWorker(WORKERS + j, Math.max(1_000, phase.ms - (now() - started)))),
    );
  }

  // The nemesis: one action at a time, at seeded moments, each logged with its times.
  const anchor = 4; // never restarted: a fleet restarted whole is outside the quarantine's promise
  const end = now() + phase.ms;
  const nemesis = (async () => {
    if (phase.nemesis.length === 0) return;
    await sleep(rng.between(300, 800));
    while (now() < end - 1_000) {
      const action = rng.pick(phase.nemesis);
      if (action === 'kill') {
        const i = rng.int(0, anchor - 1);
        const persistent = Array.isArray(phase.aof) ? phase.aof[i] : phase.aof;
        note({ action, node: i, persistent });
        await fleet[i].kill();
        await sleep(rng.between(0, 300));
        await fleet[i].start();
      } else if (action === 'killShared') {
        // The node both fleets use.
        note({ action, node: 4, persistent: false });
        await fleet[4].kill();
        await sleep(rng.between(0, 300));
        await fleet[4].start();
      } else if (action === 'wipe') {
        const i = rng.int(0, anchor - 1);
        note({ action, node: i });
        await fleet[i].wipe();
      } else if (action === 'killWhilePaused') {
        // A restart while two of its peers are paused: too few answer to bound its leases.
        const i = rng.int(0, anchor - 1);
        const others = [0, 1, 2, 3, 4].filter((n) => n !== i).sort(() => rng.next() - 0.5);
        const paused = others.slice(0, 2);
        const ms = rng.between(1.2, 2) * TTL;
        note({ action, node: i, paused, ms });
        for (const n of paused) fleet[n].pause();
        await fleet[i].kill();
        await sleep(rng.between(0, 200));
        await fleet[i].start();
        await sleep(ms);
        for (const n of paused) fleet[n].resume();
      } else if (action === 'killMajority') {
        const chosen = [0, 1, 2, 3, 4].sort(() => rng.next() - 0.5).slice(0, 3);
        note({ action, nodes: chosen });
        await Promise.all(chosen.map((i) => fleet[i].kill()));
        await Promise.all(chosen.map((i) => fleet[i].start()));
      } else if (action === 'pauseNode') {
        const i = rng.int(0, 4);
        const ms = rng.between(1.2, 2) * TTL;
        note({ action, node: i, ms });
        fleet[i].pause();
        await sleep(ms);
        fleet[i].resume();
      } else if (action === 'latency') {
        const delay = rng.between(5, NODE_TIMEOUT * 1.5);
        const ms = rng.between(500, 2_000);
        note({ action, node: 1, delay, ms });
        proxy.setDelay(delay);
        await sleep(ms);
        proxy.setDelay(0);
      } else if (action === 'dropQueues' || action === 'deadHead') {
        // The queue nemesis (issue 18), on one node: its queues lost (as by a restart), or a
        // group that died while queued put first (the next release reserves the key for it).
        const i = rng.int(0, 4);
        note({ action, node: i });
        const admin = new Redis(fleet[i].url, { maxRetriesPerRequest: 1, lazyConnect: false });
        admin.on('error', () => undefined);
        try {
          for (let r = 0; r < (phase.resources ?? RESOURCES); r++) {
            const queue = `redlock:r${r}\0q`;
            if (action === 'dropQueues') await admin.del(queue);
            else {
              // With the queue's mark, as the dead group's own script left it (issue 24 item 3).
              await admin.zadd(queue, 0, `dead${rng.int(1, 1e9)}`);
              await admin.pexpire(queue, 2 * TTL);
              await admin.set(`redlock:r${r}\0w`, '1', 'PX', 2 * TTL);
            }
          }
        } catch {
          // The node may be down or paused: nothing to nemesise there now.
        } finally {
          admin.disconnect();
        }
      } else if (action === 'pauseWorker') {
        const w = rng.int(0, WORKERS - 1);
        const ms = rng.between(1.2, 2) * TTL;
        const pid = workers[w].child.pid;
        if (workers[w].child.exitCode === null && pid !== undefined) {
          const from = now();
          process.kill(pid, 'SIGSTOP');
          await sleep(ms);
          process.kill(pid, 'SIGCONT');
          pauses.push({ target: 'worker', id: w, from, to: now() });
          note({ action, worker: w, ms });
        }
      }
      await sleep(rng.between(200, 900));
    }
  })();

  await nemesis;
  await Promise.all(joining);
  // Workers stop at their deadline, close their lock manager and exit; one that does not is hung.
  const hungWorkers = [];
  await Promise.all(
    workers.map(async ({ child, exited }, w) => {
      const code = await Promise.race([exited, sleep(phase.ms + 30_000).then(() => 'hung')]);
      if (code === 'hung') {
        hungWorkers.push(w);
        child.kill('SIGKILL');
      } else if (code !== 0) hungWorkers.push(w);
    }),
  );

  const witness = new Redis(witnessNode.url);
  const finalCounts = {};
  for (let r = 0; r < RESOURCES; r++) {
    finalCounts[`r${r}`] = Number((await witness.hget(`w:r${r}`, 'count')) ?? 0);
    if (phase.otherFleet) {
      finalCounts[`s${r}`] = Number((await witness.hget(`w:s${r}`, 'count')) ?? 0);
    }
  }
  await witness.quit();
  await proxy.close();
  await stopFleet([...fleet, ...otherNodes, witnessNode]);

  const records = readHistories(histories);
  const report = check(records, {
    nodeTimeout: NODE_TIMEOUT,
    pauses,
    finalCounts,
  });
  // Fair phases: how queued and plain waiters fared (issue 24 item 4).
  const waits = phase.fair ? waitReport(records) : undefined;
  return {
    name: phase.name,
    safe: phase.safe,
    faults,
    hungWorkers: hungWorkers.length,
    ...report,
    ...(waits ? { waits } : {}),
  };
}

async function main() {
  const started = now();
  const rng = seeded(seed);
  console.log(`campaign ${short ? '(short)' : '(full)'} seed=${seed}`);
  const buildDir = build();
  const workDir = mkdtempSync(join(tmpdir(), 'redlock-campaign-history-'));
  const phases = [];
  const queue = [...PHASES];
  const minimum = short ? 1_000 : 10_000;
  let extraSafe = 0;
  for (let i = 0; i < queue.length; i++) {
    const result = await runPhase(queue[i], i, buildDir, workDir, rng);
    phases.push(result);
    // A loaded machine runs fewer cycles in the same time: after the last safe phase, safe
    // phases are repeated (at most 3 more) until the run has its minimum of safe cycles.
    const safeCycles = phases.filter((p) => p.safe).reduce((sum, p) => sum + p.cycles, 0);
    const lastSafe = queue[i].safe && !(queue[i + 1]?.safe ?? false);
    if (lastSafe && safeCycles < minimum && extraSafe < 3) {
      queue.splice(i + 1, 0, PHASES[extraSafe % 2]);
      extraSafe++;
    }
    console.log(
      `${result.name}: ${result.cycles} cycles, ${result.operations} operations, faults ${JSON.stringify(result.faults)}, ` +
        `overlaps ${result.overlaps}, token violations ${result.tokenViolations}, witness intruders ${result.witnessIntruders}, ` +
        `lost updates ${result.lostUpdates}, hung ${result.hung + result.hungWorkers}, outcomes ${JSON.stringify(result.outcomes)}`,
    );
    if (result.waits !== undefined) {
      for (const [kind, w] of Object.entries(result.waits)) {
        console.log(
          `  ${kind} waiters: ${w.waits}, overtaken ${w.overtakenPct.toFixed(1)} %, starved (gave up as held) ${w.starvedPct.toFixed(1)} %, max wait ${w.maxWaitMs} ms`,
        );
      }
    }
    if (result.overlapSamples.length > 0)
      console.log(`  e.g. ${JSON.stringify(result.overlapSamples[0])}`);
    if (result.tokenSamples.length > 0)
      console.log(`  e.g. ${JSON.stringify(result.tokenSamples[0])}`);
    if (result.hungSamples.length > 0)
      console.log(`  e.g. ${JSON.stringify(result.hungSamples[0])}`);
  }
  const safe = phases.filter((p) => p.safe);
  const controls = phases.filter((p) => !p.safe);
  const violations = (p) =>
    p.overlaps + p.tokenViolations + p.witnessIntruders + p.lostUpdates + p.hung + p.hungWorkers;
  const summary = {
    seed,
    short,
    seconds: Math.round((now() - started) / 1_000),
    safeCycles: safe.reduce((s, p) => s + p.cycles, 0),
    totalCycles: phases.reduce((s, p) => s + p.cycles, 0),
    faults: phases.reduce((all, p) => {
      for (const [k, v] of Object.entries(p.faults)) all[k] = (all[k] ?? 0) + v;
      return all;
    }, {}),
    safeViolations: safe.reduce((s, p) => s + violations(p), 0),
    controlOverlaps: controls.map((p) => ({
      name: p.name,
      overlaps: p.overlaps,
      tokens: p.tokenViolations,
    })),
    historyDir: workDir,
    phases,
  };
  const failures = [];
  if (summary.safeViolations > 0)
    failures.push(`${summary.safeViolations} violations in safe phases`);
  for (const c of controls)
    if (c.overlaps === 0)
      failures.push(`control "${c.name}" showed no overlap: the checker is blind`);
  if (summary.safeCycles < minimum)
    failures.push(`only ${summary.safeCycles} lock cycles in safe phases (< ${minimum})`);
  summary.failures = failures;
  if (out) writeFileSync(out, JSON.stringify(summary, null, 2));
  console.log(
    `campaign: ${summary.safeCycles} lock cycles in safe phases (${summary.totalCycles} in all) in ${summary.seconds} s, ` +
      `faults ${JSON.stringify(summary.faults)}, violations in safe phases ${summary.safeViolations}, ` +
      `controls ${controls.map((c) => `${c.name}: ${c.overlaps} overlaps`).join('; ')}; histories in ${workDir}`,
  );
  if (failures.length > 0) {
    console.log(`CAMPAIGN FAILED (seed ${seed}): ${failures.join('; ')}`);
    process.exitCode = 1;
  } else {
    console.log('CAMPAIGN PASSED');
    if (!flag('--keep')) rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
