import type { Reply } from './load';

/** The outcome of one endpoint's burst. */
export interface EndpointResult {
  endpoint: string;
  /** Whether a lock protects it: then anything but an exact result is a failure. */
  locked: boolean;
  /** Whether it waits for a busy lock: then every request must succeed. */
  waits: boolean;
  initial: number;
  ok: number;
  conflict: number;
  other: number;
  final: number;
  wallMs: number;
  /** A few distinct bodies of "other" replies, to explain them. */
  otherBodies: string[];
}

/** Counts a burst's replies by outcome. */
export function tally(
  replies: Reply[],
): Pick<EndpointResult, 'ok' | 'conflict' | 'other' | 'otherBodies'> {
  const ok = replies.filter((r) => r.status >= 200 && r.status < 300).length;
  const conflict = replies.filter((r) => r.status === 409).length;
  const others = replies.filter((r) => !(r.status >= 200 && r.status < 300) && r.status !== 409);
  const otherBodies = [...new Set(others.map((r) => `${r.status} ${r.body}`.slice(0, 200)))].slice(
    0,
    3,
  );
  return { ok, conflict, other: others.length, otherBodies };
}

/**
 * Oversold or lost updates: every success took one unit, so the final stock must be exactly the
 * initial stock minus the successes, and never below 0.
 */
export function oversoldOrLost(result: EndpointResult): boolean {
  return result.final !== result.initial - result.ok || result.final < 0;
}

/**
 * What is wrong with a locked endpoint's result (empty when it is exact): no oversell or lost
 * update, every request either succeeded or found the lock busy (409), and — for the waiting
 * endpoint — every request succeeded.
 */
export function problems(result: EndpointResult, requests: number): string[] {
  if (!result.locked) return [];
  const found: string[] = [];
  if (oversoldOrLost(result)) {
    found.push(`final stock ${result.final}, expected ${result.initial - result.ok}`);
  }
  if (result.ok + result.conflict !== requests) {
    found.push(`${result.other} of ${requests} requests neither succeeded nor got 409`);
  }
  if (result.waits && result.ok !== requests)
    found.push(`${result.ok} of ${requests} succeeded, expected all`);
  if (result.ok === 0) found.push('no request succeeded');
  return found;
}

const COLUMNS: [string, number, 'left' | 'right'][] = [
  ['endpoint', 18, 'left'],
  ['2xx', 6, 'right'],
  ['409', 5, 'right'],
  ['other', 7, 'right'],
  ['final stock', 13, 'right'],
  ['  oversold/lost updates', 23, 'left'],
  ['wall time', 11, 'right'],
];

function row(cells: string[]): string {
  return cells
    .map((cell, i) => {
      const [, width, align] = COLUMNS[i];
      return align === 'left' ? cell.padEnd(width) : cell.padStart(width);
    })
    .join('')
    .trimEnd();
}

/** The results as one plain-text table. */
export function table(results: EndpointResult[]): string {
  const lines = [row(COLUMNS.map(([title]) => title))];
  for (const r of results) {
    lines.push(
      row([
        r.endpoint,
        String(r.ok),
        String(r.conflict),
        String(r.other),
        String(r.final),
        `  ${oversoldOrLost(r) ? 'yes' : 'no'}`,
        `${(r.wallMs / 1000).toFixed(1)} s`,
      ]),
    );
  }
  return lines.join('\n');
}
