import { LockLostError, LockNotAcquiredError, Redlock, type Lock } from '../../lib';
import { SeededRandom } from './random';
import { simNodes } from './sim-node';
import { VirtualClock } from './virtual-clock';

/** A broken invariant of a reentrant-work run, at a virtual instant. */
export interface ReentrantViolation {
  readonly kind: 'overlap' | 'resolved-overlap' | 'error' | 'hang';
  readonly at: number;
  readonly detail: string;
}

/** What one seed of {@link simulateReentrantWork} did. */
export interface ReentrantWorkResult {
  readonly seed: number;
  readonly params: string;
  readonly violations: ReentrantViolation[];
  /** Routines run under a lock (outer and nested). */
  readonly routines: number;
  /** Nested routines that were still running when their outer holder ended. */
  readonly outlived: number;
  readonly trace: string[];
}

/** One routine run by `using()`: an outer holder's, or a nested (reentrant) one's. */
interface Routine {
  readonly id: number;
  readonly client: number;
  readonly nested: boolean;
  readonly lock: Lock;
  readonly start: number;
  end?: number;
  /** When its signal aborted: from then on the holder was told it no longer holds the lock. */
  toldAt?: number;
  /** How its `using()` settled. */
  outcome?: 'resolved' | 'lost' | 'failed';
}

const RESOURCES = ['a', 'b'] as const;
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Issue 16 defect 6: reentrant nested work that outlives its outer holder, over the real core in
 * virtual time. Clients loop over `using()` with `reentrant: true`; inside, a routine starts
 * nested `using()` calls on some of its resources — awaited, or started and not awaited
 * (fire-and-forget), running for up to twice the ttl, so that it often outlives the routine that
 * started it. Nodes answer after seeded delays; nothing else is faulty.
 *
 * Checked at every step: no two routines of different owners share a resource while neither was
 * told (its signal aborted) that it lost the lock. Checked at the end: a `using()` that resolved
 * never overlapped a routine of another owner that had not been told.
 */
export async function simulateReentrantWork(
  seed: number,
  options: { trace?: boolean } = {},
): Promise<ReentrantWorkResult> {
  // The core's draws (jitter, owner values, ids) from the seed's own stream, apart from the run's.
  const core = new SeededRandom(seed ^ 0x2545f491);
  return run(seed, new SeededRandom(seed), () => core.next(), options.trace === true);
}

async function run(
  seed: number,
  rng: SeededRandom,
  random: () => number,
  tracing: boolean,
): Promise<ReentrantWorkResult> {
  const clock = new VirtualClock();
  const trace: string[] = [];
  const log = tracing
    ? (line: string) => trace.push(`t=${clock.now().toFixed(3)} ${line}`)
    : undefined;
  const violations: ReentrantViolation[] = [];
  const violate = (kind: ReentrantViolation['kind'], detail: string) => {
    violations.push({ kind, at: clock.now(), detail });
    log?.(`VIOLATION ${kind}: ${detail}`);
  };

  const nodeCount = rng.pick([3, 5]);
  const nodes = simNodes(nodeCount, clock);
  const ttl = rng.pick([100, 300, 1_000]);
  const nodeTimeout = Math.max(2, Math.floor(ttl * rng.between(0.05, 0.2)));
  nodes.forEach((node) => {
    node.fault = () =>
      rng.chance(0.5)
        ? undefined
        : {
            applyDelay: rng.between(0, nodeTimeout * 0.3),
            replyDelay: rng.between(0, nodeTimeout * 0.3),
          };
  });
  const clientCount = rng.int(2, 3);
  const horizon = ttl * rng.int(4, 10);
  const nestedRate = rng.pick([0.3, 0.6, 0.9]);
  const settings = {
    clock,
    random,
    logger: quiet,
    ttl,
    nodeTimeout,
    retryDelay: rng.int(Math.floor(ttl / 20), Math.floor(ttl / 4)),
    retryJitter: rng.int(0, Math.floor(ttl / 5)),
    reentrant: true,
    // Restarts are not modelled here: nothing to quarantine.
    quarantine: false,
    notifications: false,
  } as const;
  const params =
    `nodes=${nodeCount} clients=${clientCount} ttl=${ttl} nodeTimeout=${nodeTimeout} ` +
    `retryDelay=${settings.retryDelay} retryJitter=${settings.retryJitter} ` +
    `nestedRate=${nestedRate} horizon=${horizon}`;
  log?.(params);

  const managers = Array.from({ length: clientCount }, () => new Redlock(nodes, settings));
  const routines: Routine[] = [];
  const running = new Set<Routine>();
  const floating: Promise<unknown>[] = [];
  const reported = new Set<string>();
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimer(resolve, ms));

  const shares = (x: Routine, y: Routine) =>
    x.lock.resources.find((r) => y.lock.resources.includes(r));
  clock.onStep = () => {
    const live = [...running].filter((r) => r.toldAt === undefined);
    for (let i = 0; i < live.length; i++) {
      for (let j = i + 1; j < live.length; j++) {
        const [x, y] = [live[i], live[j]];
        const shared = shares(x, y);
        if (shared === undefined || x.lock.value === y.lock.value) continue;
        const key = `${x.id}/${y.id}`;
        if (reported.has(key)) continue;
        reported.add(key);
        violate(
          'overlap',
          `routines #${x.id} (client ${x.client}${x.nested ? ', nested' : ''}) and #${y.id} ` +
            `(client ${y.client}${y.nested ? ', nested' : ''}) both run under '${shared}', neither told`,
        );
      }
    }
  };

  /** Runs `work` as a routine under `lock`, recording its interval and when it was told. */
  const routine = async (
    client: number,
    lock: Lock,
    nested: boolean,
    work: () => Promise<void>,
  ) => {
    const r: Routine = { id: routines.length, client, nested, lock, start: clock.now() };
    routines.push(r);
    running.add(r);
    const told = () => (r.toldAt ??= clock.now());
    if (lock.signal.aborted) told();
    else lock.signal.addEventListener('abort', told, { once: true });
    log?.(`client ${client} runs #${r.id}${nested ? ' (nested)' : ''} under [${lock.resources}]`);
    try {
      await work();
    } finally {
      r.end = clock.now();
      running.delete(r);
      log?.(`client ${client} ends #${r.id} (told: ${r.toldAt !== undefined})`);
    }
    return r;
  };

  /** A careful holder's work: a few steps, stopping once told the lock is gone. */
  const work = async (lock: Lock, total: number) => {
    const steps = rng.int(1, 4);
    for (let s = 0; s < steps; s++) {
      await sleep(total / steps);
      if (lock.signal.aborted) return;
    }
  };

  /** A nested using() on some of `outer`'s resources; settles with its outcome, never rejects. */
  const nestedUsing = (client: number, manager: Redlock, outer: Lock): Promise<void> => {
    const resources = outer.resources.filter(() => rng.chance(0.7));
    if (resources.length === 0) resources.push(outer.resources[0]);
    let r: Routine | undefined;
    return manager
      .using(resources, async (lock) => {
        r = await routine(client, lock, true, () => work(lock, rng.between(0, 2 * ttl)));
      })
      .then(
        () => {
          if (r) r.outcome = 'resolved';
        },
        (error: unknown) => {
          if (r) r.outcome = error instanceof LockLostError ? 'lost' : 'failed';
          if (!(error instanceof LockLostError)) violate('error', `nested: ${String(error)}`);
        },
      );
  };

  const end = clock.now() + horizon;
  const loop = async (client: number) => {
    const manager = managers[client];
    while (clock.now() < end) {
      const resources = RESOURCES.filter(() => rng.chance(0.6));
      if (resources.length === 0) resources.push(rng.pick(RESOURCES));
      let r: Routine | undefined;
      try {
        await manager.using(resources, { wait: rng.pick([0, ttl, 3 * ttl]) }, async (lock) => {
          r = await routine(client, lock, false, async () => {
            const steps = rng.int(1, 3);
            for (let s = 0; s < steps; s++) {
              if (rng.chance(nestedRate)) {
                const nested = nestedUsing(client, manager, lock);
                // Awaited, or left running (fire-and-forget): it may outlive this routine.
                if (rng.chance(0.5)) await nested;
                else floating.push(nested);
              }
              await sleep(rng.between(0, ttl / 2));
              if (lock.signal.aborted) return;
            }
          });
        });
        if (r) r.outcome = 'resolved';
      } catch (error) {
        if (r) r.outcome = error instanceof LockLostError ? 'lost' : 'failed';
        if (!(error instanceof LockNotAcquiredError) && !(error instanceof LockLostError)) {
          violate('error', `client ${client}: ${String(error)}`);
        }
      }
      await sleep(rng.between(0, ttl / 3));
    }
  };

  try {
    await clock.run(Promise.all(managers.map((_, c) => loop(c))), horizon * 20 + 60_000);
    await clock.run(Promise.all(floating), 60_000);
  } catch (error) {
    violate('hang', `the clients did not finish: ${String(error)}`);
  }
  clock.onStep = undefined;

  // Nested routines still running when the outer routine of their lock had ended.
  const outerEnd = new Map<string, number>();
  for (const r of routines) if (!r.nested && r.end !== undefined) outerEnd.set(r.lock.value, r.end);
  const outlived = routines.filter(
    (r) => r.nested && (r.end ?? Infinity) > (outerEnd.get(r.lock.value) ?? Infinity),
  ).length;

  // A using() that resolved vouched for its whole run: nobody else may have held the lock then.
  for (const x of routines) {
    if (x.outcome !== 'resolved') continue;
    for (const y of routines) {
      if (y === x || y.lock.value === x.lock.value || shares(x, y) === undefined) continue;
      const yUntil = Math.min(y.end ?? Infinity, y.toldAt ?? Infinity);
      if (x.start < yUntil && y.start < (x.end ?? Infinity)) {
        violate(
          'resolved-overlap',
          `routine #${x.id} (client ${x.client}${x.nested ? ', nested' : ''}) resolved, but ran ` +
            `[${x.start.toFixed(1)}, ${x.end?.toFixed(1)}] beside #${y.id} (client ${y.client}) ` +
            `[${y.start.toFixed(1)}, ${yUntil.toFixed(1)}]`,
        );
      }
    }
  }
  try {
    await clock.run(Promise.all(managers.map((m) => m.close())), 60_000);
  } catch (error) {
    violate('hang', `close() did not finish: ${String(error)}`);
  }
  // See simulation.ts: a scope left enabled slows every later seed.
  for (const manager of managers) {
    (manager as unknown as { scope: { disable(): void } }).scope.disable();
  }
  return { seed, params, violations, routines: routines.length, outlived, trace };
}
