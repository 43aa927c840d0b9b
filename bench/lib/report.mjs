// Medians over repeats, ratios to the floor (same repeat, same concurrency), the targets of
// issue 8 item 5, and the markdown tables.
import { median } from './stats.mjs';

const LIB = 'nestjs-redlock';
/** The same library with fair hand-off (`fairness: 'queue'`): issue 18's targets apply to both. */
const FAIR = 'nestjs-redlock-fair';
const PEERS = ['redlock-v4', 'redlock-v5', 'sesamecare', 'redis-semaphore'];

function groupBy(rows, keyOf) {
  const groups = new Map();
  for (const row of rows) {
    const k = keyOf(row);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(row);
  }
  return groups;
}

const med = (rows, field) => median(rows.map((r) => r[field]));

/** One contender's S1 runs, by `repeat:concurrency` (the key its peers' runs are paired on). */
function runsOf(rows, contender) {
  return new Map(
    rows.filter((r) => r.contender === contender).map((r) => [`${r.repeat}:${r.concurrency}`, r]),
  );
}

function summariseS1(rows) {
  const floorOf = runsOf(rows, 'floor');
  const out = [];
  for (const [, group] of groupBy(rows, (r) => `${r.contender}:${r.concurrency}`)) {
    const { contender, concurrency } = group[0];
    const ratios = group.map(
      (r) => r.cyclesPerSec / (floorOf.get(`${r.repeat}:${r.concurrency}`)?.cyclesPerSec ?? NaN),
    );
    const cpuRatios = group.map((r) => {
      const f = floorOf.get(`${r.repeat}:${r.concurrency}`);
      return f ? (r.clientCpuUs + r.serverCpuUs) / (f.clientCpuUs + f.serverCpuUs) : NaN;
    });
    out.push({
      contender,
      concurrency,
      repeats: group.length,
      cyclesPerSec: med(group, 'cyclesPerSec'),
      vsFloor: median(ratios),
      p50: med(group, 'p50'),
      p99: med(group, 'p99'),
      clientCpuUs: med(group, 'clientCpuUs'),
      serverCpuUs: med(group, 'serverCpuUs'),
      totalCpuVsFloor: median(cpuRatios),
      commands: med(group, 'commands'),
      errors: group.reduce((s, r) => s + r.errors, 0),
    });
  }
  return out;
}

function summariseS2(rows) {
  return [...groupBy(rows, (r) => r.contender).values()].map((group) => ({
    contender: group[0].contender,
    repeats: group.length,
    successes: med(group, 'successes'),
    minSuccesses: Math.min(...group.map((r) => r.successes)),
    wallMs: med(group, 'wallMs'),
    wallRatio: med(group, 'wallRatio'),
    handOffP50: med(group, 'handOffP50'),
    handOffP90: med(group, 'handOffP90'),
    handOffP99: med(group, 'handOffP99'),
    firstAcquireMs: med(group, 'firstAcquireMs'),
    slowHandOffs: med(group, 'slowHandOffs'),
    handOffSumMs: med(group, 'handOffSumMs'),
    csInSituP50: med(group, 'csInSituP50'),
    commandsByType: Object.fromEntries(
      [...new Set(group.flatMap((r) => Object.keys(r.commandsByType ?? {})))].map((name) => [
        name,
        median(group.map((r) => r.commandsByType?.[name] ?? 0)),
      ]),
    ),
    slowHandOffMs: med(group, 'slowHandOffMs'),
    commandsPerSuccess: med(group, 'commandsPerSuccess'),
    serverCpuUsPerSuccess: med(group, 'serverCpuUsPerSuccess'),
    clientCpuUsPerSuccess: med(group, 'clientCpuUsPerSuccess'),
    processSwitches: med(group, 'processSwitches'),
    overlaps: group.reduce((s, r) => s + r.overlaps, 0),
    lostUpdates: group.reduce((s, r) => s + r.lostUpdates, 0),
    failureSample: group.find((r) => r.failureSample)?.failureSample,
  }));
}

function summariseFault(rows) {
  return [...groupBy(rows, (r) => r.contender).values()].map((group) => ({
    contender: group[0].contender,
    repeats: group.length,
    hung: group.reduce((s, r) => s + r.hung, 0),
    neverSettled: group.reduce((s, r) => s + r.neverSettled, 0),
    healthyP99: med(group, 'healthyP99'),
    faultP99: med(group, 'faultP99'),
    p99Ratio: med(group, 'p99Ratio'),
    throughputRatio: med(group, 'throughputRatio'),
    faultAcquisitions: med(group, 'faultAcquisitions'),
    errors: group.reduce((s, r) => s + r.errors, 0),
  }));
}

/** S5: one run per contender and load (a long open-loop run is its own average). */
function summariseS5(rows) {
  return [...rows].sort((a, b) => a.load - b.load);
}

/** Ratio of a contender's field to the floor's in the same summary. */
function vsFloor(rows, row, field) {
  const floor = rows.find((r) => r.contender === 'floor' && (r.load ?? 0) === (row.load ?? 0));
  return floor ? row[field] / floor[field] : NaN;
}

/** The targets of issue 18 item 5, for this library with fairness off and on. */
function targets18(s) {
  return [LIB, FAIR].flatMap((key) => targets18Of(s, key).map((t) => ({ contender: key, ...t })));
}

function targets18Of(s, key) {
  const t = [];
  const s2 = s.s2.find((r) => r.contender === key);
  if (s2) {
    t.push({
      target: 'S2 successes = 100/100 (every repeat)',
      value: `${s2.minSuccesses}/100 (min)`,
      met: s2.minSuccesses === 100,
    });
    t.push({
      target: 'S2 median hand-off ≤ 1 ms',
      value: `${s2.handOffP50.toFixed(2)} ms`,
      met: s2.handOffP50 <= 1,
    });
    t.push({
      target: 'S2 wall ÷ (successes × CS alone) ≤ 2.0',
      value: s2.wallRatio.toFixed(2),
      met: s2.wallRatio <= 2.0,
    });
    t.push({
      target: 'S2 lock-node commands per success ≤ 30 (stretch 20)',
      value: s2.commandsPerSuccess.toFixed(1),
      met: s2.commandsPerSuccess <= 30,
    });
    const client = vsFloor(s.s2, s2, 'clientCpuUsPerSuccess');
    t.push({
      target: 'S2 client CPU per success ≤ 1.5× floor',
      value: `${client.toFixed(2)}× (${s2.clientCpuUsPerSuccess.toFixed(0)} µs)`,
      met: client <= 1.5,
    });
    const server = vsFloor(s.s2, s2, 'serverCpuUsPerSuccess');
    t.push({
      target: 'S2 Redis CPU per success ≤ 1.0× floor',
      value: `${server.toFixed(2)}× (${s2.serverCpuUsPerSuccess.toFixed(0)} µs)`,
      met: server <= 1.0,
    });
  }
  for (const r of s.s5.filter((x) => x.contender === key)) {
    if (r.load <= 0.8) {
      t.push({
        target: `S5 ${Math.round(r.load * 100)}%: wait p99 ≤ 3× p50`,
        value: `${(r.waitP99 / r.waitP50).toFixed(1)}× (${r.waitP50.toFixed(1)} / ${r.waitP99.toFixed(1)} ms)`,
        met: r.waitP99 <= 3 * r.waitP50,
      });
      t.push({
        target: `S5 ${Math.round(r.load * 100)}%: order inversions ≤ 1 %`,
        value: `${(r.inversions * 100).toFixed(1)} %`,
        met: r.inversions <= 0.01,
      });
    } else {
      t.push({
        target: `S5 ${Math.round(r.load * 100)}%: no request starved (all served)`,
        value: `${r.successes}/${r.requests}, max wait ${r.waitMax.toFixed(0)} ms`,
        met: r.failures === 0,
      });
    }
  }
  const s4 = s.s4.find((x) => x.contender === key);
  if (s4) {
    t.push({
      target: 'S4 throughput ≥ 0.9× healthy',
      value: `${s4.throughputRatio.toFixed(2)}×`,
      met: s4.throughputRatio >= 0.9,
    });
    t.push({
      target: 'S4 acquire p99 ≤ 1.5× healthy',
      value: `${s4.p99Ratio.toFixed(2)}×`,
      met: s4.p99Ratio <= 1.5,
    });
  }
  const s3 = s.s3.find((x) => x.contender === key);
  if (s3) t.push({ target: 'S3 0 hung', value: String(s3.hung), met: s3.hung === 0 });
  // S1, no regression: fair hand-off against the same library with fairness off, same run.
  if (key === FAIR) {
    for (const fair of s.s1.filter((r) => r.contender === FAIR)) {
      const off = s.s1.find(
        (r) => r.contender === 'nestjs-redlock' && r.concurrency === fair.concurrency,
      );
      if (!off) continue;
      const ratio = fair.cyclesPerSec / off.cyclesPerSec;
      t.push({
        target: `S1 c${fair.concurrency} cycles/s ≥ 0.9× fairness off (noise)`,
        value: `${ratio.toFixed(2)}× (${fair.cyclesPerSec.toFixed(0)} vs ${off.cyclesPerSec.toFixed(0)}/s; ${fair.commands.toFixed(1)} vs ${off.commands.toFixed(1)} cmds)`,
        met: ratio >= 0.9,
      });
    }
    // Issue 24: the default at c = 1 at least node-redlock 5β's (medians, same run).
    const v5 = s.s1.find((r) => r.contender === 'redlock-v5' && r.concurrency === 1);
    const fair = s.s1.find((r) => r.contender === FAIR && r.concurrency === 1);
    const paired = s.fairVsV5?.find((r) => r.concurrency === 1);
    if (v5 && fair && paired) {
      const ratio = fair.cyclesPerSec / v5.cyclesPerSec;
      t.push({
        target: 'S1 c1 cycles/s ≥ node-redlock 5β (issue 24)',
        value:
          `${ratio.toFixed(2)}× (${fair.cyclesPerSec.toFixed(0)} vs ${v5.cyclesPerSec.toFixed(0)}/s); ` +
          `per repeat ${paired.median.toFixed(2)}× median, ${paired.min.toFixed(2)}–${paired.max.toFixed(2)} over ${paired.repeats}`,
        met: ratio >= 1,
      });
    }
  }
  return t;
}

function targets(s) {
  const t = [];
  const s2 = s.s2.find((r) => r.contender === LIB);
  if (s2) {
    t.push({
      target: 'S2 successes = 100/100 (every repeat)',
      value: `${s2.minSuccesses}/100 (min)`,
      met: s2.minSuccesses === 100,
    });
    t.push({
      target: 'S2 wall ÷ (successes × CS alone) ≤ 2.0',
      value: s2.wallRatio.toFixed(2),
      met: s2.wallRatio <= 2.0,
    });
    t.push({
      target: 'S2 median hand-off ≤ 1 ms',
      value: `${s2.handOffP50.toFixed(2)} ms`,
      met: s2.handOffP50 <= 1,
    });
    t.push({
      target: 'S2 lock-node commands per success ≤ 30',
      value: s2.commandsPerSuccess.toFixed(1),
      met: s2.commandsPerSuccess <= 30,
    });
  }
  const s1 = (c, k = LIB) => s.s1.find((r) => r.contender === k && r.concurrency === c);
  if (s1(1))
    t.push({
      target: 'S1 concurrency 1 ≥ 1.0× floor cycles/s',
      value: `${s1(1).vsFloor.toFixed(2)}×`,
      met: s1(1).vsFloor >= 1.0,
    });
  if (s1(64))
    t.push({
      target: 'S1 concurrency 64 ≥ 1.5× floor cycles/s',
      value: `${s1(64).vsFloor.toFixed(2)}×`,
      met: s1(64).vsFloor >= 1.5,
    });
  for (const c of [1, 16, 64]) {
    if (!s1(c)) continue;
    const peers = PEERS.map((p) => s1(c, p)).filter(Boolean);
    const best = Math.min(...peers.map((p) => p.serverCpuUs));
    t.push({
      target: `S1 c${c} server CPU/cycle < every peer's`,
      value: `${s1(c).serverCpuUs.toFixed(1)} µs vs best peer ${best.toFixed(1)} µs`,
      met: s1(c).serverCpuUs < best,
    });
  }
  for (const [name, label] of [
    ['s3', 'S3 (node killed)'],
    ['s4', 'S4 (node SIGSTOPped)'],
  ]) {
    const r = s[name].find((x) => x.contender === LIB);
    if (!r) continue;
    t.push({ target: `${label}: 0 hung operations`, value: String(r.hung), met: r.hung === 0 });
    t.push({
      target: `${label}: p99 ≤ 1.5× healthy`,
      value: `${r.p99Ratio.toFixed(2)}× (${r.faultP99.toFixed(1)} vs ${r.healthyP99.toFixed(1)} ms)`,
      met: r.p99Ratio <= 1.5,
    });
  }
  for (const r of s.s6 ?? []) {
    if ((r.contender ?? r.key) !== LIB || (r.K !== 5000 && r.K !== 20000)) continue;
    const at = `S6 K=${r.K}`;
    t.push({ target: `${at}: 0 failures`, value: String(r.failed), met: r.failed === 0 });
    t.push({
      target: `${at}: ≤ 0.1 cmds/waiter/s while waiting`,
      value: f(r.waitingCommandsPerWaiterPerSecond, 2),
      met: r.waitingCommandsPerWaiterPerSecond <= 0.1,
    });
    if (r.K === 5000) {
      t.push({
        target: `${at}: all hold ≤ 1 s after the release`,
        value: `${f(r.releaseToAllHeldMs, 0)} ms`,
        met: r.releaseToAllHeldMs <= 1000,
      });
    }
    t.push({
      target: `${at}: RSS ≤ 20 KB/waiter`,
      value: `${f(r.rssPerWaiterKB, 1)} KB`,
      met: r.rssPerWaiterKB <= 20,
    });
    t.push({
      target: `${at}: first second ≤ 10 cmds/waiter`,
      value: f(r.firstSecondCommandsPerWaiter, 1),
      met: r.firstSecondCommandsPerWaiter <= 10,
    });
  }
  return t;
}

/**
 * Per-repeat ratios of `key`'s S1 cycles/s to `peer`'s (same repeat, same concurrency), by
 * concurrency: their median, min and max. Contenders run interleaved within a repeat, so a
 * repeat's ratio shares its machine's noise; the spread says how far one run's verdict can move.
 */
function pairedS1(rows, key, peer) {
  const peerOf = runsOf(rows, peer);
  const out = [];
  for (const [, group] of groupBy(
    rows.filter((r) => r.contender === key),
    (r) => r.concurrency,
  )) {
    const ratios = group
      .map(
        (r) => r.cyclesPerSec / (peerOf.get(`${r.repeat}:${r.concurrency}`)?.cyclesPerSec ?? NaN),
      )
      .filter(Number.isFinite);
    if (ratios.length === 0) continue;
    out.push({
      concurrency: group[0].concurrency,
      median: median(ratios),
      min: Math.min(...ratios),
      max: Math.max(...ratios),
      repeats: ratios.length,
    });
  }
  return out;
}

/** Medians and targets from the raw runs. */
export function summarise(raw) {
  const s = {
    s1: summariseS1(raw.s1),
    s2: summariseS2(raw.s2),
    s2Shipped: summariseS2(raw.s2Shipped),
    s3: summariseFault(raw.s3),
    s4: summariseFault(raw.s4),
    s5: summariseS5(raw.s5 ?? []),
    s5HoldAloneMs: raw.s5HoldAloneMs,
    s6: raw.s6 ?? [],
    micro: raw.micro,
    csAloneMs: raw.csAloneMs,
    fairVsV5: pairedS1(raw.s1, FAIR, 'redlock-v5'),
  };
  s.targets = targets(s);
  s.targets18 = targets18(s);
  return s;
}

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const table = (head, rows) =>
  [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');

/** The markdown report of one run. */
export function markdown(s, meta) {
  const label = (k) => meta.labels[k] ?? k;
  const parts = [
    `# nestjs-redlock benchmark — ${meta.date}`,
    '',
    `Commit ${meta.commit}; Node ${meta.node}; ${meta.redis}; ${meta.cpus}; load average at the end ${meta.loadAverageAtEnd} (shared machine: other work was running). ${meta.config.quick ? 'Quick mode. ' : ''}5 local redis-server nodes on loopback; medians of ${meta.config.repeats} repeats (S1) / ${meta.config.s2Repeats} (S2), contenders interleaved within each repeat; ${meta.durationS} s in all.`,
  ];
  if (s.s1.length) {
    parts.push(
      '',
      `## S1 — uncontended acquire → release (${meta.config.s1DurationMs} ms per run)`,
      '',
    );
    parts.push(
      'CPU and commands are per cycle; server CPU is summed over the 5 nodes, idle CPU taken out; "× floor" compares cycles/s with the minimal Redlock in the same repeat.',
      '',
    );
    const rows = [...s.s1].sort((a, b) => a.concurrency - b.concurrency);
    parts.push(
      table(
        [
          'conc.',
          'contender',
          'cycles/s',
          '× floor',
          'acquire p50 ms',
          'acquire p99 ms',
          'client CPU µs',
          'server CPU µs',
          'total CPU × floor',
          'commands',
        ],
        rows.map((r) => [
          r.concurrency,
          label(r.contender),
          f(r.cyclesPerSec, 0),
          f(r.vsFloor, 2),
          f(r.p50, 2),
          f(r.p99, 2),
          f(r.clientCpuUs, 0),
          f(r.serverCpuUs, 0),
          f(r.totalCpuVsFloor, 2),
          f(r.commands, 1) + (r.errors ? ` (${r.errors} errors)` : ''),
        ]),
      ),
    );
  }
  for (const [name, title] of [
    [
      's2',
      "S2 — seeds' experiment: 100 tasks over 2 processes, one resource, CS ≈ 1 ms, wait ≈ 20 s",
    ],
    ['s2Shipped', "S2 with each library's shipped retry settings (no wait given)"],
  ]) {
    if (!s[name].length) continue;
    parts.push('', `## ${title}`, '');
    if (name === 's2')
      parts.push(
        `Critical section alone (GET, 1 ms timer, SET on a separate data node): ${f(s.csAloneMs, 2)} ms. Hand-off = one holder's release → the next holder's acquire, process.hrtime (CLOCK_MONOTONIC, shared by both processes). Overlaps (negative hand-offs) and lost counter updates would show a broken mutual exclusion.`,
        '',
      );
    parts.push(
      table(
        [
          'contender',
          'successes',
          'wall ms',
          'wall ÷ (succ. × CS)',
          'hand-off p50 ms',
          'p90 ms',
          'p99 ms',
          'first holder after ms',
          'hand-offs > 20 ms (ms in them)',
          'lock-node cmds/success (× floor)',
          'holder changed process',
          'client CPU µs/success (× floor)',
          'Redis CPU µs/success (× floor)',
          'overlaps',
          'lost updates',
        ],
        s[name].map((r) => [
          label(r.contender),
          `${r.successes} (min ${r.minSuccesses})`,
          f(r.wallMs, 0),
          f(r.wallRatio, 2),
          f(r.handOffP50, 2),
          f(r.handOffP90, 1),
          f(r.handOffP99, 1),
          f(r.firstAcquireMs, 1),
          `${f(r.slowHandOffs, 0)} (${f(r.slowHandOffMs, 0)})`,
          `${f(r.commandsPerSuccess, 1)} (${f(vsFloor(s[name], r, 'commandsPerSuccess'), 2)})`,
          f(r.processSwitches, 0),
          `${f(r.clientCpuUsPerSuccess, 0)} (${f(vsFloor(s[name], r, 'clientCpuUsPerSuccess'), 2)})`,
          `${f(r.serverCpuUsPerSuccess, 0)} (${f(vsFloor(s[name], r, 'serverCpuUsPerSuccess'), 2)})`,
          r.overlaps,
          r.lostUpdates,
        ]),
      ),
    );
    const withBreakdown = s[name].filter((r) => Number.isFinite(r.csInSituP50));
    if (withBreakdown.length) {
      parts.push(
        '',
        'Where the wall time goes (medians): wall ≈ time to the first holder + Σ holds + Σ hand-offs.',
        '',
        table(
          ['contender', 'first holder ms', 'hold p50 ms (CS in situ)', 'Σ hand-offs ms', 'wall ms'],
          withBreakdown.map((r) => [
            label(r.contender),
            f(r.firstAcquireMs, 1),
            f(r.csInSituP50, 2),
            f(r.handOffSumMs, 0),
            f(r.wallMs, 0),
          ]),
        ),
        '',
        'Lock-node commands per success by command (INFO commandstats, medians; commands run inside scripts counted too):',
        '',
        table(
          ['contender', 'by command'],
          withBreakdown.map((r) => [
            label(r.contender),
            Object.entries(r.commandsByType)
              .sort((a, b) => b[1] - a[1])
              .map(([name, n]) => `${name} ${f(n, 1)}`)
              .join(', '),
          ]),
        ),
      );
    }
  }
  for (const [name, title] of [
    ['s3', 'S3 — node 0 SIGKILLed during S1 (concurrency 16)'],
    ['s4', 'S4 — node 0 SIGSTOPped during S1 (concurrency 16)'],
  ]) {
    if (!s[name].length) continue;
    parts.push('', `## ${title}`, '');
    parts.push(
      'Hung = an acquire or release that took over 1 s or never settled; p99 of the acquisitions started during the fault (pending ones counted with their time so far) against those before it, same run.',
      '',
    );
    parts.push(
      table(
        [
          'contender',
          'hung ops',
          'never settled',
          'healthy p99 ms',
          'fault p99 ms',
          'p99 × healthy',
          'throughput × healthy',
          'acquisitions during fault',
          'errors',
        ],
        s[name].map((r) => [
          label(r.contender),
          r.hung,
          r.neverSettled,
          f(r.healthyP99, 2),
          f(r.faultP99, 1),
          f(r.p99Ratio, 2),
          f(r.throughputRatio, 2),
          f(r.faultAcquisitions, 0),
          r.errors,
        ]),
      ),
    );
  }
  if (s.s5.length) {
    const c = meta.config.s5;
    parts.push(
      '',
      `## S5 — open-loop contention: 2 processes, Poisson arrivals on one resource, hold ${c.holdMs} ms (${f(s.s5HoldAloneMs, 2)} ms measured alone; capacity 1 / (that + 1 ms) = ${f(s.s5[0]?.capacity, 1)}/s), ${c.durationMs / 1000} s per run after ${(c.warmupMs ?? 0) / 1000} s of unmeasured warm-up, wait ≤ ${c.wait / 1000} s`,
      '',
      'Wait = arrival → acquired. Inversions = share of served requests that were served while a request that arrived earlier (in either process) was still waiting. Commands, client CPU (both processes) and Redis CPU (5 nodes, INFO cpu, idle taken out) per success; "× floor" against the minimal Redlock at the same load. Overlaps (a holder acquiring before the previous one released) would show a broken mutual exclusion.',
      '',
      table(
        [
          'load',
          'contender',
          'served / arrived',
          'wait p50 ms',
          'p99 ms',
          'max ms',
          'inversions',
          'cmds/success (× floor)',
          'client CPU µs/success (× floor)',
          'Redis CPU µs/success (× floor)',
          'overlaps',
        ],
        s.s5.map((r) => [
          `${Math.round(r.load * 100)} %`,
          label(r.contender),
          `${r.successes} / ${r.requests}`,
          f(r.waitP50, 1),
          f(r.waitP99, 1),
          f(r.waitMax, 0),
          `${f(r.inversions * 100, 1)} %`,
          `${f(r.commandsPerSuccess, 1)} (${f(vsFloor(s.s5, r, 'commandsPerSuccess'), 2)})`,
          `${f(r.clientCpuUsPerSuccess, 0)} (${f(vsFloor(s.s5, r, 'clientCpuUsPerSuccess'), 2)})`,
          `${f(r.serverCpuUsPerSuccess, 0)} (${f(vsFloor(s.s5, r, 'serverCpuUsPerSuccess'), 2)})`,
          r.overlaps,
        ]),
      ),
    );
  }
  if (s.s6.length) {
    parts.push('', '## S6 — K waiters in one process on distinct busy keys (issue 19)', '');
    parts.push(
      'A lock manager holds K distinct locks (ttl 30 s); a second one in the same process waits for each (wait 20 s); after 3 s the first releases them all. One child process per contender and K (its own RSS). Commands: every command the 5 lock nodes processed (INFO, commands run inside scripts included), per waiter; "while waiting" is from 1 s to 3 s after the calls.',
      '',
    );
    parts.push(
      table(
        [
          'K',
          'contender',
          'cmds/waiter/s while waiting',
          'first-second cmds/waiter',
          'release → all held ms',
          'failed',
          'of which unavailable',
          'RSS KB/waiter',
          'RSS KB/held lock',
          'RSS while waiting MB',
        ],
        s.s6.map((r) => [
          r.K,
          label(r.contender ?? r.key),
          f(r.waitingCommandsPerWaiterPerSecond, 2),
          f(r.firstSecondCommandsPerWaiter, 1),
          r.failed === r.K ? '–' : f(r.releaseToAllHeldMs, 0),
          r.failed,
          r.unavailable,
          f(r.rssPerWaiterKB, 1),
          f(r.rssPerHeldLockKB, 1),
          f(r.rssWaitingMB, 0),
        ]),
      ),
    );
  }
  if (s.micro) {
    parts.push('', '## Owner value cost (µs per value, 200 000 calls)', '');
    parts.push(
      table(
        ['method', 'wall µs', 'CPU µs'],
        Object.entries(s.micro).map(([k, v]) => [k, f(v.wallUs, 3), f(v.cpuUs, 3)]),
      ),
    );
  }
  if (s.targets.length) {
    parts.push('', '## Targets (issue 8 item 5; S6: issue 19 item 5)', '');
    parts.push(
      table(
        ['target', 'measured', 'met'],
        s.targets.map((t) => [t.target, t.value, t.met ? 'met' : '**missed**']),
      ),
    );
  }
  if (s.targets18?.length) {
    parts.push('', '## Targets (issue 18 item 5)', '');
    parts.push(
      table(
        ['contender', 'target', 'measured', 'met'],
        s.targets18.map((t) => [
          label(t.contender),
          t.target,
          t.value,
          t.met ? 'met' : '**missed**',
        ]),
      ),
    );
  }
  return parts.join('\n') + '\n';
}
