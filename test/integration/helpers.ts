import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';
import type { RedlockLogger } from '../../lib';

/** Waits `ms`. */
export { delay };

/** A logger that keeps every line, to assert on what was (and was not) logged. */
export class RecordingLogger implements RedlockLogger {
  readonly lines: string[] = [];
  log(message: string) {
    this.lines.push(`log ${message}`);
  }
  warn(message: string) {
    this.lines.push(`warn ${message}`);
  }
  error(message: string) {
    this.lines.push(`error ${message}`);
  }
  debug(message: string) {
    this.lines.push(`debug ${message}`);
  }
}

/** A plain client for reading and writing test state (never a lock node's connection). */
export function rawClient(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: false });
}

/** Polls `check` until it returns true or `timeoutMs` passes; returns the last result. */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 5_000,
): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > until) return false;
    await delay(20);
  }
}

/** Time `work` takes, in ms. */
export async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const start = performance.now();
  const result = await work();
  return { ms: performance.now() - start, result };
}
