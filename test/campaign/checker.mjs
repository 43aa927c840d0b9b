/**
 * The campaign's independent checker. It reads only histories — the workers' JSONL lines, the
 * nemesis log (for the pauses it inflicted on worker processes) and the witness's final
 * counters — and knows nothing of the implementation. It reports:
 * - overlaps: two holders of one resource whose believed-held intervals intersect (must be 0);
 * - tokens: fencing tokens not strictly increasing in holder order, per resource (must be 0);
 * - witness: an intruder the external witness saw while the holder was still valid, and lost
 *   updates of its read-modify-write counter (committed increments the counter does not show);
 * - hung: operations that returned later than their wait budget allows (wait + a few node
 *   timeouts + slack for a loaded machine + the time their process was SIGSTOPped);
 * - counts by outcome, and lock cycles (grants).
 */
import { readFileSync } from 'node:fs';

/** The history lines of every file, parsed. */
export function readHistories(files) {
  const records = [];
  for (const file of files) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) if (line.trim() !== '') records.push(JSON.parse(line));
  }
  return records;
}

/**
 * @param records worker history lines
 * @param options { nodeTimeout, slackMs, pauses: [{ target: 'worker', id, from, to }],
 *   finalCounts: { resource: number } }
 */
export function check(records, { nodeTimeout, slackMs = 2_500, pauses = [], finalCounts = {} }) {
  const outcomes = {};
  for (const r of records) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;

  // Holders: a grant with a non-empty believed interval. A grant first seen after its validity
  // had already run out (the process was paused between the grant and its first look) was never
  // believed held, and acted on nothing.
  const holds = records.filter(
    (r) => r.from !== undefined && r.until !== undefined && r.until > r.from,
  );
  const byResource = new Map();
  for (const h of holds) {
    for (const res of h.res) {
      if (!byResource.has(res)) byResource.set(res, []);
      byResource.get(res).push(h);
    }
  }

  const overlaps = [];
  const tokenViolations = [];
  for (const [res, list] of byResource) {
    list.sort((a, b) => a.from - b.from);
    let latest; // the holder whose belief reaches furthest so far
    let maxToken = -Infinity;
    let maxTokenHolder;
    for (const h of list) {
      if (latest !== undefined && h.from < latest.until) {
        overlaps.push({
          resource: res,
          first: `${latest.p}.${latest.l}.${latest.n}`,
          second: `${h.p}.${h.l}.${h.n}`,
          overlapMs: Math.min(latest.until, h.until) - h.from,
        });
      }
      if (latest === undefined || h.until > latest.until) latest = h;
      if (h.token !== undefined && h.token !== null) {
        if (h.token <= maxToken) {
          tokenViolations.push({
            resource: res,
            holder: `${h.p}.${h.l}.${h.n}`,
            token: h.token,
            after: maxToken,
            afterHolder: maxTokenHolder,
          });
        }
        if (h.token > maxToken) {
          maxToken = h.token;
          maxTokenHolder = `${h.p}.${h.l}.${h.n}`;
        }
      }
    }
  }

  const intruders = records.filter((r) => r.intruder === 'while-valid').length;
  const committed = {};
  for (const r of records) {
    if (r.committed) for (const res of r.res) committed[res] = (committed[res] ?? 0) + 1;
  }
  let lostUpdates = 0;
  for (const [res, n] of Object.entries(committed)) {
    lostUpdates += Math.max(0, n - (finalCounts[res] ?? 0));
  }

  const pausedDuring = (process, from, to) =>
    pauses
      .filter((p) => p.target === 'worker' && p.id === process)
      .reduce((sum, p) => sum + Math.max(0, Math.min(to, p.to) - Math.max(from, p.from)), 0);
  const hung = [];
  for (const r of records) {
    const acquired = r.ok ?? r.done;
    const bound = (r.wait ?? 0) + 4 * nodeTimeout + slackMs;
    const took = acquired - r.invoke - pausedDuring(r.p, r.invoke, acquired);
    if (took > bound) hung.push({ holder: `${r.p}.${r.l}.${r.n}`, what: r.op, took, bound });
    if (r.releasing !== undefined) {
      const release = r.done - r.releasing - pausedDuring(r.p, r.releasing, r.done);
      if (release > nodeTimeout + slackMs) {
        hung.push({ holder: `${r.p}.${r.l}.${r.n}`, what: 'release', took: release });
      }
    }
  }

  return {
    operations: records.length,
    cycles: holds.length,
    outcomes,
    overlaps: overlaps.length,
    overlapSamples: overlaps.slice(0, 3),
    tokenViolations: tokenViolations.length,
    tokenSamples: tokenViolations.slice(0, 3),
    witnessIntruders: intruders,
    lostUpdates,
    committed: Object.values(committed).reduce((a, b) => a + b, 0),
    hung: hung.length,
    hungSamples: hung.slice(0, 3),
  };
}

// CLI: node checker.mjs <nodeTimeout> <history.jsonl>...
if (import.meta.url === `file://${process.argv[1]}`) {
  const [nodeTimeout, ...files] = process.argv.slice(2);
  console.log(
    JSON.stringify(check(readHistories(files), { nodeTimeout: Number(nodeTimeout) }), null, 2),
  );
}

/**
 * Issue 24 item 4: how the waiters of a fair phase fared, per kind (`queued` in a fair queue,
 * `plain` outside one: fenced, several resources, a worker with fairness off): how many waited,
 * the share overtaken (a wait on a shared resource that started later was granted first), the
 * share starved (gave up as held) and the longest wait (ms).
 */
export function waitReport(records) {
  const waits = records.filter((r) => r.kind !== undefined);
  const report = {};
  for (const kind of ['queued', 'plain']) {
    const mine = waits.filter((r) => r.kind === kind);
    let overtaken = 0;
    let starved = 0;
    let maxWaitMs = 0;
    for (const w of mine) {
      if (w.outcome === 'held') starved++;
      if (w.ok !== undefined) maxWaitMs = Math.max(maxWaitMs, w.ok - w.invoke);
      const until = w.ok ?? (w.outcome === 'held' ? w.done : undefined);
      if (until === undefined) continue;
      if (
        waits.some(
          (o) =>
            o !== w &&
            o.invoke > w.invoke &&
            o.ok !== undefined &&
            o.ok < until &&
            o.res.some((res) => w.res.includes(res)),
        )
      )
        overtaken++;
    }
    report[kind] = {
      waits: mine.length,
      overtakenPct: mine.length ? (100 * overtaken) / mine.length : 0,
      starvedPct: mine.length ? (100 * starved) / mine.length : 0,
      maxWaitMs: Math.round(maxWaitMs),
    };
  }
  return report;
}
