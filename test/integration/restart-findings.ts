import { runInThisContext } from 'node:vm';
import {
  LockNotAcquiredError,
  Redlock,
  type Lock,
  type LockOptions,
  type RedlockOptions,
} from '../../lib';
import type { FleetNode } from '../support/fleet';
import { delay, RecordingLogger } from './helpers';

/**
 * Shared by the restart-findings-*.spec.ts files (issue 23, Deliver item 6): black-box tests of
 * the restart rule on real redis-server processes, one per finding of the issue's "Why". They
 * use only public behaviour — the constructor, acquire/tryAcquire/extend/release, the errors'
 * `reason` and `retryAfterMs`, the events, log lines — and assert invariants: at most one holder
 * (a second lock taken while the first one's `remainingMs()` is above 0), tokens that strictly
 * increase, and the liveness bounds of the issue.
 */

/**
 * The options of a lock manager, with the new rule's `maxTtl` (the longest lease any client of the
 * fleet uses, the same on every client). Typed apart so that these files compile against a core
 * that does not know the option yet (0cce7fe ignores it, as it ignores every unknown key).
 */
export type ManagerOptions = RedlockOptions & { maxTtl?: number };

/** Per-call options, for the same reason. */
export type CallOptions = LockOptions;

/** A lock manager and the lines it logged. */
export interface Managed {
  readonly redlock: Redlock;
  readonly logger: RecordingLogger;
}

/**
 * Lock managers created by a test, each with its own recording logger, closed after the test
 * (last first). Call at the top of a `describe`.
 */
export function managers() {
  const open: Redlock[] = [];
  afterEach(async () => {
    while (open.length > 0) await open.pop()!.close();
  });
  return {
    create(urls: readonly string[], options: ManagerOptions = {}): Managed {
      const logger = new RecordingLogger();
      const redlock = new Redlock([...urls], { nodeTimeout: 200, logger, ...options });
      open.push(redlock);
      return { redlock, logger };
    },
  };
}

/** The name a lock manager gives a node in its logs and events (`host:port`). */
export function nodeName(node: FleetNode): string {
  return `${node.host}:${node.port}`;
}

/** A key of another owner on `node`: a lock taken next will not land there. */
export async function occupy(node: FleetNode, resource: string): Promise<void> {
  await node.command('SET', `redlock:${resource}`, 'another-owner', 'PX', 60_000);
}

/** Removes the key {@link occupy} wrote. */
export async function vacate(node: FleetNode, resource: string): Promise<void> {
  await node.command('DEL', `redlock:${resource}`);
}

/** The lock, or the reason it was refused (`held`, `unavailable`); other errors are thrown. */
export async function attempt(
  take: () => Promise<Lock | null>,
): Promise<Lock | 'held' | 'unavailable'> {
  try {
    return (await take()) ?? 'held';
  } catch (error) {
    if (error instanceof LockNotAcquiredError) return error.reason;
    throw error;
  }
}

/**
 * Tries `take` every `everyMs` while `first` is valid (at most `forMs`) and returns every overlap:
 * a lock obtained while `first.remainingMs()` was still above 0 — two holders. Each second lock
 * is released at once, so one overlap does not hide the next attempt's answer.
 */
export async function secondHolders(
  first: Lock,
  take: () => Promise<Lock | null>,
  { forMs, everyMs = 250 }: { forMs: number; everyMs?: number },
): Promise<string[]> {
  const overlaps: string[] = [];
  const start = performance.now();
  while (first.remainingMs() > 0 && performance.now() - start < forMs) {
    const outcome = await attempt(take);
    if (typeof outcome !== 'string') {
      const left = first.remainingMs();
      if (left > 0) {
        overlaps.push(
          `a second holder got the lock ${Math.round(performance.now() - start)} ms in, while the first lock had ${Math.round(left)} ms left`,
        );
      }
      await outcome.release();
    }
    await delay(everyMs);
  }
  return overlaps;
}

/** The median and the largest of `values`. */
export function spread(values: readonly number[]): { median: number; max: number } {
  const sorted = [...values].sort((x, y) => x - y);
  return {
    median: sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)],
    max: sorted.length === 0 ? NaN : sorted[sorted.length - 1],
  };
}

/** The lines of `logger` that name `node`. */
export function linesNaming(logger: RecordingLogger, node: FleetNode): string[] {
  return logger.lines.filter((line) => line.includes(nodeName(node)));
}

/**
 * Lines logged more than once, numbers aside (a line repeated every second with a new count is
 * one line repeated): each with how often it came.
 */
export function repeatedLines(lines: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const line of lines) {
    const shape = line.replace(/\d+/g, '#');
    counts.set(shape, (counts.get(shape) ?? 0) + 1);
  }
  return [...counts].filter(([, n]) => n > 1).map(([shape, n]) => `${n}× ${shape}`);
}

/**
 * Collects the process's warnings (`TimeoutOverflowWarning`…) until `stop()`. Jest gives each test
 * file its own `process` object, which Node's own warnings (emitted on the real process by its
 * timers) never reach: the listener goes on the real one, read in the main context.
 */
export function collectWarnings(): { readonly warnings: string[]; stop(): void } {
  const real = runInThisContext('process') as NodeJS.Process;
  const warnings: string[] = [];
  const listener = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  real.on('warning', listener);
  return { warnings, stop: () => real.off('warning', listener) };
}
