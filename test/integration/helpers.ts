import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';
import { Redlock, type RedlockLogger, type RedlockOptions } from '../../lib';
import { startFleet, type FleetNode, type RedisFleet } from '../support/fleet';

/** Waits `ms`. */
export { delay };

/**
 * A logger that keeps every line, to assert on what was (and was not) logged: a lock manager's
 * logger, or a Nest app's (`createNestApplication({ logger })`).
 */
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
  /** Nest's LoggerService also has verbose: not recorded. */
  verbose() {}
}

/** A plain client for reading and writing test state (never a lock node's connection). */
export function rawClient(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: false });
}

export { eventually } from '../support/eventually';

/**
 * Commands `nodes` have run since their last `CONFIG RESETSTAT`, summed by name, as the servers
 * count them (`INFO commandstats`, which also counts every command a script runs). `INFO` and
 * `CONFIG` are left out: the test's own.
 */
export async function commandCounts(nodes: readonly FleetNode[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const node of nodes) {
    const info = String(await node.command('INFO', 'commandstats'));
    for (const [, name, calls] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (name === 'info' || name.startsWith('config')) continue;
      counts.set(name, (counts.get(name) ?? 0) + Number(calls));
    }
  }
  return counts;
}

/** Time `work` takes, in ms. */
export async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const start = performance.now();
  const result = await work();
  return { ms: performance.now() - start, result };
}

/**
 * Settles `work` over `items`, at most `batch` at a time: a set-up of thousands of locks, not
 * all at once (not the subject of the specs that use it).
 */
export async function inBatches<T, R>(
  items: readonly T[],
  batch: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += batch) {
    results.push(...(await Promise.all(items.slice(i, i + batch).map(work))));
  }
  return results;
}

/**
 * The fixture of a spec file that shares one fleet between its tests: the fleet is started
 * before them and stopped after them; what a test creates through `manager()` (or registers with
 * `afterTest()`) is closed after that test, last first, and the fleet is flushed.
 */
export function sharedFleet(size: number) {
  let fleet: RedisFleet | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    fleet = await startFleet(size);
  });
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
    await fleet?.flushAll();
  });
  afterAll(async () => {
    await fleet?.stop();
  });
  const started = (): RedisFleet => {
    if (fleet === undefined) throw new Error('the fleet starts in beforeAll');
    return fleet;
  };
  return {
    get fleet(): RedisFleet {
      return started();
    },
    /** A lock manager over the fleet (or `nodes`), with a quiet logger, closed after the test. */
    manager(options: RedlockOptions = {}, nodes: RedlockNodes = started().urls()): Redlock {
      const redlock = new Redlock(nodes, { logger: new RecordingLogger(), ...options });
      cleanups.push(() => redlock.close());
      return redlock;
    },
    /** Runs `cleanup` after the current test. */
    afterTest(cleanup: () => Promise<void>): void {
      cleanups.push(cleanup);
    },
  };
}

type RedlockNodes = ConstructorParameters<typeof Redlock>[0];
