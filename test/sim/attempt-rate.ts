import {
  LockNotAcquiredError,
  Redlock,
  type AcquireReply,
  type AcquiredEvent,
  type QueueTicket,
  type RedisNode,
} from '../../lib';
import { SeededRandom } from './random';
import { PubSubSimNode, type SimFault } from './sim-node';
import { VirtualClock } from './virtual-clock';

/** How a lock manager of the run waits (acquisition.ts WaitingStrategy). */
export type RateStrategy = 'notify' | 'poll' | 'fair';

/** One acquire() call of the run, and what bounds its attempts. */
export interface RateCall {
  readonly manager: number;
  readonly strategy: RateStrategy;
  readonly start: number;
  readonly end: number;
  readonly attempts: number;
  readonly acquired: boolean;
  /** The most attempts the call may make (see {@link simulateAttemptRate}). */
  readonly bound: number;
}

/** What one seed of {@link simulateAttemptRate} did. */
export interface RateResult {
  readonly seed: number;
  readonly params: string;
  readonly violations: string[];
  readonly calls: RateCall[];
  readonly trace: string[];
}

/** One node's command of one owner, as the bound counts it (`manager` -1: a foreign owner). */
interface KeyEvent {
  readonly at: number;
  readonly manager: number;
  /** A lease written (granted, swapped, reserved), lengthened, or a key deleted (announced). */
  readonly kind: 'write' | 'extend' | 'delete';
}

const KEY = 'redlock:r';
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
/** Steps of one seed beyond which it counts as a livelock (a storm in no virtual time). */
const MAX_STEPS = 200_000;

/**
 * A {@link PubSubSimNode} that also answers lease reads (a listening waiter's probe) and, like
 * Redis, reports a key without expiry as `-1` (`put` with an infinite ttl): the shape in which no
 * wait can be computed from the replies.
 */
class RateNode extends PubSubSimNode {
  override async acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
  ): Promise<AcquireReply> {
    return noExpiry(await super.acquire(keys, value, ttl, fenceKeys));
  }

  override async acquireQueued(
    key: string,
    queueKey: string,
    value: string,
    ttl: number,
    ticket: QueueTicket,
  ): Promise<AcquireReply> {
    return noExpiry(await super.acquireQueued(key, queueKey, value, ttl, ticket));
  }

  /** PTTL, after the delays `fault` gives any command (as it gives a ping's). */
  lease(key: string): Promise<number> {
    const fault: SimFault = this.fault?.('ping', [key], '') ?? {};
    return new Promise<number>((resolve, reject) => {
      if (fault.lose === true) return;
      this.clock.setTimer(() => {
        if (fault.error !== undefined) return reject(fault.error);
        const pttl = this.pttlOf(key);
        this.clock.setTimer(() => resolve(pttl === Infinity ? -1 : pttl), fault.replyDelay ?? 0);
      }, fault.applyDelay ?? 0);
    });
  }
}

function noExpiry(reply: AcquireReply): AcquireReply {
  return !reply.acquired && reply.pttl === Infinity ? { acquired: false, pttl: -1 } : reply;
}

/**
 * Issue 24: the attempts of one waiting acquisition stay within a bound set by its retry delay
 * and by what other owners did to its key meanwhile — whatever the replies. The storm it catches:
 * a waiter woken by the announcement of its own failed attempt's cleanup attempted again at once
 * (2 118 attempts in a 1 s wait on real nodes; here, thousands of attempts in no virtual time).
 *
 * The world of a seed: 3 or 5 simulated nodes with pub/sub and lease reads, one resource; up to
 * N − quorum nodes down from the start or going down and coming back; a foreign owner writing the
 * key on some nodes — with a short lease, a long one, or none (Redis `-1`: no wait can be computed)
 * — and releasing it on some of them later, or never; commands answered at once, promptly, after
 * a delay, or after the node timeout (a write that landed, its reply late); 1 to 4 lock managers, each
 * waiting by notifications, by polling or in a fair queue, each running one acquire() at a time
 * (so its events are that call's), holding what it gets for a while.
 *
 * The bound of a call lasting T ms (retryDelay d, N nodes). Every attempt but the first follows a
 * sleep, and a sleep ends
 * - when its delay runs out: at least d (the jitter only adds), so at most ⌈T / d⌉ of these —
 *   unless the delay was cut to a blocking lease's end (earliestExpiry, or retryAfterMs when it
 *   listens): at most once per lease that blocked it, i.e. per lease alive on a node when the call
 *   started (N) or written or lengthened by another owner since;
 * - when a release announcement wakes it: only one by another owner (or a reservation, the fair
 *   hand-off's), on a node where its attempt met the key held — each such deletion wakes it at
 *   most once (the fair queue's turn and unclaimed timers: once per reservation);
 * - when its subscription is confirmed (issue 19: one try closes the gap before it listened):
 *   at most once per node's confirmation, N per subscription;
 * - when a subscriber connection drops, or the subscription is confirmed again (a node down and
 *   back): once per such change;
 * - at once, twice at most per call: the try that closes the gap when its subscription was
 *   confirmed during its first attempt, and a fair waiter's join of the queue after its plain
 *   first attempt met a holder.
 * So: attempts ≤ 3 + ⌈T / d⌉ + 2N + (writes, extensions and deletions of the key by other owners
 * during the call, per node) + (node changes during the call). Its own cleanups are not in it:
 * counting them would make any storm fit. Counted with a margin of three node timeouts around
 * the call (a command applies before its reply is read).
 *
 * Deterministic: every draw, the core's too (the lock managers' `random`), comes from the seed.
 */
export async function simulateAttemptRate(
  seed: number,
  options: { trace?: boolean } = {},
): Promise<RateResult> {
  const rng = new SeededRandom(seed);
  const core = new SeededRandom(seed ^ 0x7f4a7c15);
  const random = () => core.next();
  const clock = new VirtualClock();
  const trace: string[] = [];
  const log = options.trace
    ? (line: string) => trace.push(`t=${clock.now().toFixed(3)} ${line}`)
    : undefined;
  const violations: string[] = [];

  const nodeCount = rng.pick([3, 3, 5]);
  const quorum = Math.floor(nodeCount / 2) + 1;
  const ttl = rng.pick([200, 1_000, 3_000]);
  const nodeTimeout = Math.max(2, Math.floor(ttl * rng.between(0.02, 0.1)));
  const retryDelay = rng.int(Math.max(1, Math.floor(ttl / 20)), Math.floor(ttl / 4));
  const retryJitter = rng.int(0, Math.floor(ttl / 5));
  const slowRate = rng.pick([0, 0, 0.05, 0.2]);
  const horizon = ttl * rng.int(5, 15);
  const managerCount = rng.pick([1, 1, 2, 3, 4]);
  const strategies = Array.from({ length: managerCount }, () =>
    rng.pick(['notify', 'notify', 'poll', 'fair'] as const),
  );
  const nodes = Array.from({ length: nodeCount }, (_, i) => new RateNode(`s${i}`, clock));

  // Node changes: down from the start, or down and back during the run (at most N − quorum at
  // once: a quorum stays reachable, so calls wait rather than fail at once).
  const down = nodes.map(() => false);
  const changes: number[] = [];
  const downAtStart = rng.int(0, nodeCount - quorum);
  const outages: { node: number; from: number; to: number }[] = [];
  for (let i = 0; i < nodeCount - quorum; i++) {
    if (i < downAtStart)
      outages.push({ node: i, from: 0, to: rng.chance(0.5) ? Infinity : rng.between(0, horizon) });
    else if (rng.chance(0.5)) {
      const from = rng.between(0, horizon);
      outages.push({ node: i, from, to: from + rng.between(0, 3 * ttl) });
    }
  }
  const setDown = (i: number, isDown: boolean) => {
    if (down[i] === isDown) return;
    down[i] = isDown;
    nodes[i].isDown = isDown;
    changes.push(clock.now());
    log?.(`${nodes[i].name} ${isDown ? 'down' : 'back'}`);
    // Down: its subscriber connection drops (every waiter hears of the gap); its data stays.
    if (isDown) nodes[i].crash(false);
  };
  for (const outage of outages) {
    if (outage.from === 0) setDown(outage.node, true);
    else clock.setTimer(() => setDown(outage.node, true), outage.from);
    if (outage.to !== Infinity) clock.setTimer(() => setDown(outage.node, false), outage.to);
  }
  nodes.forEach((node, i) => {
    node.fault = (): SimFault | undefined => {
      if (down[i]) return { error: new Error(`${node.name}: ECONNREFUSED`) };
      if (rng.chance(slowRate)) {
        // The command lands; its reply comes after the node timeout (a timeout, a late cleanup).
        return { replyDelay: rng.between(nodeTimeout, 2 * nodeTimeout) };
      }
      // Applied on arrival, in the order sent (one connection per client and node, as over
      // TCP: a cleanup never lands before the write it removes); the round trip is in the
      // reply. Mostly prompt, as on a LAN (far shorter than the retry delay: the storm this
      // catches ran at one attempt per round trip), now and then later.
      if (rng.chance(0.5)) return undefined;
      const upTo = rng.chance(0.8) ? nodeTimeout * 0.02 : nodeTimeout * 0.3;
      return { replyDelay: rng.between(0, upTo) };
    };
  });

  // What each owner did to the key, per node (manager -1: the foreign owner).
  const events: KeyEvent[] = [];
  const record = (manager: number, kind: KeyEvent['kind']) =>
    events.push({ at: clock.now(), manager, kind });

  // The foreign owner: writes the key on some nodes — a short lease, a long one, or none — and
  // releases it (announced) on some of them later, or never.
  const episodes = rng.int(0, 3);
  for (let e = 0; e < episodes; e++) {
    const value = `foreign${e}`;
    const on = rng.shuffle(nodes.map((_, i) => i)).slice(0, rng.int(1, nodeCount));
    const lease = rng.pick([ttl / 2, 5 * ttl, Infinity]);
    const at = rng.between(0, horizon * 0.8);
    const releaseOn = on.filter(() => rng.chance(0.6));
    const releaseAt = at + rng.between(0, 3 * ttl);
    clock.setTimer(() => {
      log?.(`foreign ${value} on [${on}] lease ${lease}`);
      for (const i of on) {
        if (nodes[i].valueAt(KEY) !== undefined) continue;
        nodes[i].put(KEY, value, lease);
        record(-1, 'write');
      }
    }, at);
    clock.setTimer(() => {
      log?.(`foreign ${value} released on [${releaseOn}]`);
      for (const i of releaseOn) {
        nodes[i].release([KEY], value, `${value}-release`).then(
          (deleted) => {
            if (deleted > 0) record(-1, 'delete');
          },
          () => undefined,
        );
      }
    }, releaseAt);
  }

  // Each lock manager sees the nodes through its own proxies: every command that changed the
  // key is recorded as its own.
  const view = (manager: number): RedisNode[] =>
    nodes.map(
      (node) =>
        new Proxy(node, {
          get(target, property) {
            const value: unknown = Reflect.get(target, property, target);
            if (typeof value !== 'function') return value;
            const call = (value as (...args: unknown[]) => unknown).bind(target);
            const counted =
              (kind: (reply: unknown) => KeyEvent['kind'] | undefined) =>
              (...args: unknown[]) => {
                const reply = call(...args) as Promise<unknown>;
                reply.then(
                  (result) => {
                    const k = kind(result);
                    if (k !== undefined) record(manager, k);
                  },
                  () => undefined,
                );
                return reply;
              };
            switch (property) {
              case 'acquire':
              case 'acquireQueued':
                return counted((r) => ((r as AcquireReply).acquired ? 'write' : undefined));
              case 'extend':
                return counted((r) => (r === true ? 'extend' : undefined));
              case 'release':
                return counted((r) => ((r as number) > 0 ? 'delete' : undefined));
              case 'handOff':
                return counted((r) =>
                  r === 'released'
                    ? 'delete'
                    : r === 'swapped' || r === 'reserved'
                      ? 'write'
                      : undefined,
                );
              default:
                return call;
            }
          },
        }),
    );

  const managers = strategies.map(
    (strategy, m) =>
      new Redlock(view(m), {
        clock,
        random,
        logger: quiet,
        telemetry: false,
        ttl,
        nodeTimeout,
        retryDelay,
        retryJitter,
        quarantine: false,
        notifications: strategy !== 'poll',
        fairness: strategy === 'fair' ? 'queue' : 'off',
      }),
  );
  const params =
    `nodes=${nodeCount} ttl=${ttl} nodeTimeout=${nodeTimeout} retryDelay=${retryDelay} ` +
    `retryJitter=${retryJitter} slowRate=${slowRate} horizon=${horizon} ` +
    `managers=[${strategies.join(',')}] outages=${JSON.stringify(outages)} episodes=${episodes}`;
  log?.(params);

  const calls: RateCall[] = [];
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimer(resolve, ms));
  const end = clock.now() + horizon;
  const loop = async (m: number) => {
    const manager = managers[m];
    // One call at a time: the manager's events are the current call's.
    const seen: { failed: number; granted?: AcquiredEvent } = { failed: 0 };
    manager.on('attemptFailed', () => seen.failed++);
    manager.on('acquired', (event) => (seen.granted = event));
    await sleep(rng.between(0, ttl));
    while (clock.now() < end) {
      seen.failed = 0;
      seen.granted = undefined;
      const start = clock.now();
      const wait = rng.between(ttl / 2, 3 * ttl);
      let lock;
      try {
        lock = await manager.acquire('r', { wait });
      } catch (error) {
        if (!(error instanceof LockNotAcquiredError))
          violations.push(`manager ${m}: ${String(error)}`);
      }
      // (Set by the listener meanwhile: not the `undefined` assigned above.)
      const granted = seen.granted as AcquiredEvent | undefined;
      const attempts = lock !== undefined ? (granted?.attempts ?? seen.failed + 1) : seen.failed;
      const call = {
        manager: m,
        strategy: strategies[m],
        start,
        end: clock.now(),
        attempts,
        acquired: lock !== undefined,
      };
      calls.push({ ...call, bound: boundOf(call) });
      log?.(
        `manager ${m} (${strategies[m]}): ${lock ? 'got' : 'gave up'} after ${attempts} attempts in ${(call.end - start).toFixed(1)} ms`,
      );
      if (lock !== undefined) {
        await sleep(rng.between(0, ttl / 2));
        await lock.release();
      }
      await sleep(rng.between(0, ttl / 2));
    }
  };
  const slack = 3 * nodeTimeout;
  const boundOf = (call: Omit<RateCall, 'bound'>): number => {
    const from = call.start - slack;
    const to = call.end + slack;
    const others = events.filter((e) => e.manager !== call.manager && e.at >= from && e.at <= to);
    const changed = changes.filter((at) => at >= from && at <= to).length;
    const delays = Math.ceil((call.end - call.start) / retryDelay);
    return 3 + delays + 2 * nodeCount + others.length + changed;
  };

  let steps = 0;
  clock.onStep = () => {
    if (++steps > MAX_STEPS) throw new Error(`more than ${MAX_STEPS} steps: a storm in no time`);
  };
  try {
    await clock.run(Promise.all(managers.map((_, m) => loop(m))), horizon * 20 + 60_000);
  } catch (error) {
    violations.push(`the run did not finish: ${String(error)}`);
  }
  clock.onStep = undefined;
  try {
    await clock.run(Promise.all(managers.map((m) => m.close())), 60_000);
  } catch (error) {
    violations.push(`close() did not finish: ${String(error)}`);
  }
  for (const manager of managers) {
    (manager as unknown as { scope: { disable(): void } }).scope.disable();
  }
  for (const call of calls) {
    if (call.attempts > call.bound) {
      violations.push(
        `manager ${call.manager} (${call.strategy}): ${call.attempts} attempts in ` +
          `${(call.end - call.start).toFixed(1)} ms (t=${call.start.toFixed(1)}), bound ${call.bound}`,
      );
    }
  }
  return { seed, params, violations, calls, trace };
}
