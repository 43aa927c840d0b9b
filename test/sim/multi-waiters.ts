import { LockNotAcquiredError, Redlock, type Lock } from '../../lib';
import { HealthNode } from './health-node';
import { SeededRandom } from './random';
import { VirtualClock } from './virtual-clock';

/** A broken invariant of a multi-waiters run, at a virtual instant. */
export interface MultiWaitersViolation {
  readonly kind: 'lost-wakeup' | 'overlap' | 'error' | 'hang';
  readonly at: number;
  readonly detail: string;
}

/** What one seed of {@link simulateMultiWaiters} did. */
export interface MultiWaitersResult {
  readonly seed: number;
  readonly params: string;
  readonly violations: MultiWaitersViolation[];
  /** Locks granted. */
  readonly grants: number;
  /** Grants of a waiter that had waited (failed at least one attempt first). */
  readonly handOffs: number;
  readonly trace: string[];
}

/** A waiting acquisition, as the checker sees it. */
interface Waiting {
  readonly worker: string;
  readonly keys: readonly string[];
  /** When it called acquire(). */
  readonly startedAt: number;
  /** Since when every one of its keys has been free on every node (undefined: not free now). */
  freeSince?: number;
  /**
   * The keys became free during its first attempt, before it subscribed: a release announced
   * then is missed by design (architecture.md §5.8: it costs a retry delay), so that stretch is not held
   * against it.
   */
  excused?: boolean;
}

const RESOURCES = ['a', 'b', 'c'] as const;
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Issue 16 defect 8: waiters for one resource and for several, in the same lock managers, with
 * release notifications on, over simulated nodes with pub/sub (test/sim/health-node.ts) in
 * virtual time. Every lease is released well before it ends, and polling is slow (the retry
 * delay is the ttl), so a waiter lives on its wake-ups: one that is not woken sleeps until the
 * blocking lease would have ended.
 *
 * Checked at every step: no waiter stays asleep while everything it waits for has been free on
 * every node for longer than an attempt and its announcement can take (a lost wake-up) — unless
 * it was freed during the waiter's first attempt, before the waiter subscribed, which costs a
 * retry delay by design; and no two holders share a resource.
 */
export async function simulateMultiWaiters(
  seed: number,
  options: { trace?: boolean; fairness?: 'off' | 'queue' } = {},
): Promise<MultiWaitersResult> {
  // The core's draws (jitter, owner values, ids) from the seed's own stream, apart from the run's.
  const core = new SeededRandom(seed ^ 0x68e31da4);
  return run(
    seed,
    new SeededRandom(seed),
    () => core.next(),
    options.trace === true,
    options.fairness,
  );
}

async function run(
  seed: number,
  rng: SeededRandom,
  random: () => number,
  tracing: boolean,
  fairness: 'off' | 'queue' | undefined,
): Promise<MultiWaitersResult> {
  const clock = new VirtualClock();
  const trace: string[] = [];
  const log = tracing
    ? (line: string) => trace.push(`t=${clock.now().toFixed(3)} ${line}`)
    : undefined;
  const violations: MultiWaitersViolation[] = [];
  const violate = (kind: MultiWaitersViolation['kind'], detail: string) => {
    violations.push({ kind, at: clock.now(), detail });
    log?.(`VIOLATION ${kind}: ${detail}`);
  };

  // Leases are readable: a waiter that listens probes (reads) where it would otherwise write.
  const nodes = [0, 1, 2].map((i) => new HealthNode(`s${i}`, clock).readLeases());
  const ttl = rng.pick([1_000, 3_000]);
  const nodeTimeout = rng.pick([10, 30, 50]);
  nodes.forEach((node) => {
    node.fault = () =>
      rng.chance(0.5)
        ? undefined
        : {
            applyDelay: rng.between(0, nodeTimeout * 0.3),
            replyDelay: rng.between(0, nodeTimeout * 0.3),
          };
  });
  const retryJitter = rng.int(0, nodeTimeout);
  const managerCount = rng.int(1, 3);
  const workersPerManager = rng.int(2, 5);
  const multiRate = rng.pick([0.2, 0.5, 0.8]);
  const horizon = ttl * rng.int(3, 8);
  const settings = {
    clock,
    random,
    logger: quiet,
    ttl,
    nodeTimeout,
    // Slow polling: a waiter that is not woken waits a ttl (or, listening, the lease's end).
    retryDelay: ttl,
    retryJitter,
    quarantine: false,
    notifications: true,
    // Undefined: the default (the fair queue: single-resource waiters queue, the others beside).
    fairness,
  } as const;
  // An attempt, its cleanup and its announcement each take at most a node timeout; a woken
  // waiter may wait for one attempt of another woken waiter first.
  const bound = retryJitter + 6 * nodeTimeout + 5;
  /** The longest a first attempt (its round and the cleanup of a failed one) can take. */
  const firstAttempt = 3 * nodeTimeout + 1;
  const params =
    `ttl=${ttl} nodeTimeout=${nodeTimeout} retryJitter=${retryJitter} managers=${managerCount} ` +
    `workers=${workersPerManager} multiRate=${multiRate} horizon=${horizon} bound=${bound}`;
  log?.(params);

  const managers = Array.from({ length: managerCount }, () => new Redlock(nodes, settings));
  const waiting = new Set<Waiting>();
  const holders: { worker: string; lock: Lock }[] = [];
  const reported = new Set<Waiting>();
  let grants = 0;
  let handOffs = 0;
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimer(resolve, ms));
  const free = (key: string) => nodes.every((node) => node.valueAt(key) === undefined);

  clock.onStep = () => {
    const now = clock.now();
    for (const w of waiting) {
      if (!w.keys.every(free)) {
        w.freeSince = undefined;
        continue;
      }
      if (w.freeSince === undefined) {
        w.freeSince = now;
        w.excused = now <= w.startedAt + firstAttempt;
      }
      if (!w.excused && now - w.freeSince > bound && !reported.has(w)) {
        reported.add(w);
        violate(
          'lost-wakeup',
          `${w.worker} waits for [${w.keys}], free on every node for ${(now - w.freeSince).toFixed(1)} ms`,
        );
      }
    }
    for (let i = 0; i < holders.length; i++) {
      for (let j = i + 1; j < holders.length; j++) {
        const [x, y] = [holders[i], holders[j]];
        const shared = x.lock.resources.find((r) => y.lock.resources.includes(r));
        if (shared !== undefined && x.lock.isValid() && y.lock.isValid()) {
          violate('overlap', `${x.worker} and ${y.worker} both hold '${shared}'`);
        }
      }
    }
  };

  const end = clock.now() + horizon;
  const worker = async (m: number, n: number) => {
    const name = `worker ${m}.${n}`;
    const manager = managers[m];
    await sleep(rng.between(0, ttl / 10));
    while (clock.now() < end) {
      const resources = rng.chance(multiRate)
        ? RESOURCES.filter(() => rng.chance(0.6)).concat(rng.pick(RESOURCES))
        : [rng.pick(RESOURCES)];
      const keys = [...new Set(resources)].sort().map((r) => `redlock:${r}`);
      const w: Waiting = { worker: name, keys, startedAt: clock.now() };
      waiting.add(w);
      let failed = 0;
      const counting = () => failed++;
      manager.on('attemptFailed', counting);
      let lock: Lock;
      try {
        lock = await manager.acquire(resources, { wait: 20 * ttl });
      } catch (error) {
        if (!(error instanceof LockNotAcquiredError)) violate('error', `${name}: ${String(error)}`);
        continue;
      } finally {
        waiting.delete(w);
        manager.off('attemptFailed', counting);
      }
      grants++;
      if (failed > 0) handOffs++;
      log?.(`${name} holds [${lock.resources}]`);
      const holder = { worker: name, lock };
      holders.push(holder);
      await sleep(rng.between(0, ttl / 4));
      holders.splice(holders.indexOf(holder), 1);
      await lock.release();
      log?.(`${name} released [${lock.resources}]`);
      await sleep(rng.between(0, ttl / 10));
    }
  };

  try {
    const workers = managers.flatMap((_, m) =>
      Array.from({ length: workersPerManager }, (_, n) => worker(m, n)),
    );
    await clock.run(Promise.all(workers), horizon * 40 + 60_000);
  } catch (error) {
    violate('hang', `the workers did not finish: ${String(error)}`);
  }
  clock.onStep = undefined;
  try {
    await clock.run(Promise.all(managers.map((m) => m.close())), 60_000);
  } catch (error) {
    violate('hang', `close() did not finish: ${String(error)}`);
  }
  for (const manager of managers) {
    (manager as unknown as { scope: { disable(): void } }).scope.disable();
  }
  return { seed, params, violations, grants, handOffs, trace };
}
