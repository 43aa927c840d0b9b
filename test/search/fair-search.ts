import { LockNotAcquiredError, Redlock, type Lock } from '../../lib';
import { markQueued } from '../../lib/testing/queue-scripts';
import type { Suspicion } from '../../lib/core/nodes/suspicion';
import { PubSubSimNode, type SimDelivery, type SimFault, type SimOp } from '../sim/sim-node';
import { SeededRandom } from '../sim/random';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * The fair queue (architecture.md §5.11) under an exhaustive search of its message schedules
 * (§5.13), driving the library itself — lock managers, FairQueue, the scripts' TypeScript twins
 * that test/support/queue-contract.ts holds to the real scripts — over three simulated nodes in
 * virtual time.
 *
 * A scope fixes the managers, their waiters (when each arrives, how long it waits and holds) and
 * a budget B. Every command a manager sends a node and every announcement a node publishes to a
 * subscriber is a choice point: on time (the default), late (applied after the traffic of the
 * next few ms: a reorder), applied without a reply (the client times the node out), or lost
 * (a command never applied; an announcement lost with its subscriber's connection, whose drop
 * the subscriber hears, as from Redis and the adapters). The search runs every schedule with at
 * most B deviations from the default (delay-bounded search: complete for the scope, no
 * sampling): each run records its choice points, and each point after the last deviation is
 * tried with each other outcome. The code is deterministic given the choices (virtual time,
 * seeded draws), so a schedule is replayed from its deviations alone.
 *
 * Properties, checked at every step of every run:
 * - `one-holder`: no resource held by two valid locks;
 * - `idle`: no waiter, within its wait, for longer than the scope's `idleMs` with none of its
 *   resources held by a valid lock — a wait that protects nothing (a reservation nobody claims,
 *   a lost turn or wake-up). Once a reply, command or announcement was lost, a waiter may fall
 *   back to polling: one retry delay more (one handOffLease behind a reservation for a group
 *   that left), unless a reservation its group can claim sits on a node its group's lock
 *   manager has not suspected hung within a retry delay. A key that holds an owner value no
 *   valid lock holds (a release lost, an attempt that landed after its own cleanup) on a
 *   majority of nodes counts as held: that is its lease's cost, not the queue's;
 * - `starved`: every waiter whose wait covers everyone ahead of it is served;
 * - `late-grant`: no lock granted after its wait ended (plus a node timeout for the attempt
 *   in flight);
 * - `hang`: every acquisition and release settles.
 */

/** One acquisition of a scope. */
export interface FairWaiter {
  /** Which lock manager (index into the scope's `managers`). */
  readonly manager: number;
  /** When it calls acquire() (virtual ms after the start). */
  readonly at: number;
  /** How long it holds the lock once granted (ms). */
  readonly hold: number;
  /** Its `wait` (ms). */
  readonly wait: number;
  /** Its resources (default ['a']). */
  readonly resources?: readonly string[];
  readonly fencing?: boolean;
  /** It may give up (a short wait): not counted as starved, and no grant after its wait. */
  readonly mayGiveUp?: boolean;
}

/** A reverted fix the search must find. */
export type NodeMutant = 'leaveKeepsReservation';

export interface FairScope {
  readonly name: string;
  /** Each lock manager's fairness. */
  readonly managers: readonly ('queue' | 'off')[];
  readonly waiters: readonly FairWaiter[];
  /** Deviations per schedule. */
  readonly budget: number;
  /** How long a resource may stay without a holder while someone waits (ms). */
  readonly idleMs: number;
  /** A group nobody waits in, queued first on these nodes at the start (a process that died). */
  readonly deadHeadOn?: readonly number[];
  /** A reverted fix, to show the search finds it (mutants in fair-search's nodes). */
  readonly mutant?: NodeMutant;
  /**
   * Nodes that apply on-time commands sent from `fromMs` until `untilMs` `delayMs` late (a burst
   * of load on them): they place a group's start later than the other nodes do, by the extra
   * delay (TIME − age is late by the request's way there), so that a later waiter can come first
   * on them — a hand-off split between nodes in the default schedule, not only through deviations.
   */
  readonly slow?: {
    readonly nodes: readonly number[];
    readonly fromMs: number;
    readonly untilMs: number;
    readonly delayMs: number;
  };
}

export interface FairViolation {
  readonly property: 'one-holder' | 'idle' | 'starved' | 'late-grant' | 'hang' | 'error';
  readonly message: string;
  /** The schedule: `point:outcome` for each deviation. */
  readonly schedule: string;
}

export interface FairSearchResult {
  readonly runs: number;
  /** Choice points of the default schedule. */
  readonly points: number;
  readonly violations: FairViolation[];
  readonly ms: number;
}

const TTL = 1_000;
const NODE_TIMEOUT = 20;
const RETRY_DELAY = 300;
/** The default `handOffLease`: 2 × `nodeTimeout` + `retryDelay` (options.ts). */
const HAND_OFF_LEASE = 2 * NODE_TIMEOUT + RETRY_DELAY;
/** A late command or announcement arrives this long after it was sent (virtual ms). */
const LATE = 3;
const ON_TIME = 0.2;
const RESERVED = '\0r';
const QUEUE_SUFFIX = '\0q';
/** Outcomes of a command: on time, late, applied but unanswered, lost. */
const COMMAND_OUTCOMES: readonly SimFault[] = [
  { applyDelay: ON_TIME, replyDelay: ON_TIME },
  { applyDelay: LATE, replyDelay: ON_TIME },
  { applyDelay: ON_TIME, dropReply: true },
  { lose: true },
];
/**
 * Outcomes of an announcement to one subscriber: on time, late, lost. Redis loses a published
 * message only with the subscriber's connection, and the adapters report the drop (`onGap`: the
 * waiters attempt again): a lost one is heard as a gap, `LATE` after it was sent. Until stop 41
 * it was lost silently; then B = 3 ("dead group at the head", `15:1 51:3 53:2`) found a head
 * asleep until the blocking lease ended beside a reservation for its group whose announcement
 * (the only one: the other node's hand-off was lost) never came — what only a half-open subscriber
 * connection could do, and architecture.md §5.8 bounds: the blocking key's lease.
 */
const MESSAGE_OUTCOMES: readonly ReturnType<SimDelivery>[] = [
  [ON_TIME],
  [LATE],
  { gapAfter: LATE },
];
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** The choices of one run: the deviations given, the arity of every point met. */
class Chooser {
  readonly arities: number[] = [];
  constructor(
    private readonly deviations: ReadonlyMap<number, number>,
    private readonly log?: (line: string) => void,
  ) {}
  next(arity: number, label: () => string): number {
    const point = this.arities.length;
    this.arities.push(arity);
    const outcome = this.deviations.get(point) ?? 0;
    this.log?.(`#${point}${outcome === 0 ? '' : ` [${OUTCOME_NAMES[arity][outcome]}]`} ${label()}`);
    return outcome;
  }
}

const OUTCOME_NAMES: Record<number, readonly string[]> = {
  4: ['on time', 'late', 'no reply', 'lost'],
  3: ['on time', 'late', 'lost'],
};

/**
 * A sim node whose commands and announcements take the chooser's outcomes. It remembers what a
 * lost or overtaken command left that its sender cannot know of, which the idle property excuses:
 * a group whose leave did not take effect here stays queued, and a reservation for it waits for
 * nobody until that short lease ends (`reservedForDeparted`); a lost claim leaves a reservation
 * its group does not know is still up (`lostClaims`).
 */
class ChoiceNode extends PubSubSimNode {
  /** Groups whose queued attempt (a claim) this node never got. */
  readonly lostClaims = new Set<string>();
  /**
   * Groups that left, whose leave this node lost, or applied holding no reservation for them
   * (a leave that kept one is the mutant below, no excuse). A release with no next local waiter
   * is its group's leave too (HAND_OFF_SCRIPT passes on a reservation for the holder's group).
   */
  private readonly departed = new Set<string>();
  /** The group of the queued attempt being sent (set around the call that asks the chooser). */
  private claiming: string | undefined;
  /** The group a release being sent with no next local waiter leaves (as `claiming`). */
  private leaving: string | undefined;

  constructor(
    name: string,
    clock: VirtualClock,
    chooser: Chooser,
    private readonly mutant: NodeMutant | undefined,
    lostInformation: () => void,
    alias: (value: string) => string,
    /** The on-time outcome's delay for a while (FairScope.slow), if this node is slow. */
    slow?: Omit<NonNullable<FairScope['slow']>, 'nodes'>,
  ) {
    super(name, clock);
    const start = clock.now();
    this.fault = (op: SimOp, keys, value) => {
      if (op === 'ping') return undefined;
      const label = () => `${name} ${op} ${keys.map(alias).join(',')} ${alias(value)}`;
      const choice = chooser.next(COMMAND_OUTCOMES.length, label);
      const at = clock.now() - start;
      const late = choice === 0 && slow !== undefined && at >= slow.fromMs && at < slow.untilMs;
      const outcome = late
        ? { applyDelay: slow.delayMs, replyDelay: ON_TIME }
        : COMMAND_OUTCOMES[choice];
      if (outcome.lose === true) {
        if (op === 'leaveQueue') this.departed.add(value);
        else if (op === 'handOff' && this.leaving !== undefined) this.departed.add(this.leaving);
        else if (op === 'acquireQueued' && this.claiming !== undefined) {
          this.lostClaims.add(this.claiming);
        }
      }
      if (outcome.lose === true || outcome.dropReply === true) lostInformation();
      return outcome;
    };
    this.delivery = (channel, message) => {
      const label = () => `${name} announces on ${alias(channel)}: ${alias(message)}`;
      const outcome = MESSAGE_OUTCOMES[chooser.next(MESSAGE_OUTCOMES.length, label)];
      if ('gapAfter' in outcome) lostInformation();
      return outcome;
    };
  }

  /**
   * Whether `key` is reserved here for a group that left: its leave was lost (it stays queued
   * here), or a late attempt of it landed after its leave and queued it again (one lock
   * manager's commands to one node travel one connection, in order, so that reorder takes a
   * connection replaced while the old one's bytes were still on the way; the search reorders
   * freely, for safety's sake). A hand-off then reserves the key for nobody, until that lease
   * ends: issue 24 item 2's bound when the turn cannot be passed on (one handOffLease).
   */
  reservedForDeparted(key: string): boolean {
    const value = this.valueAt(key);
    return value?.startsWith(RESERVED) === true && this.departed.has(value.slice(RESERVED.length));
  }

  protected override applyLeave(
    ...[queueKey, group, pass]: Parameters<PubSubSimNode['leaveQueue']>
  ): void {
    super.applyLeave(queueKey, group, pass);
    // A leave that kept its group's reservation (the mutant below) is no excuse.
    if (this.valueAt(queueKey.slice(0, -QUEUE_SUFFIX.length)) !== RESERVED + group) {
      this.departed.add(group);
    }
  }

  override acquireQueued(
    ...args: Parameters<PubSubSimNode['acquireQueued']>
  ): ReturnType<PubSubSimNode['acquireQueued']> {
    this.claiming = args[4].group;
    try {
      return super.acquireQueued(...args);
    } finally {
      this.claiming = undefined;
    }
  }

  override handOff(
    ...args: Parameters<PubSubSimNode['handOff']>
  ): ReturnType<PubSubSimNode['handOff']> {
    this.leaving = args[3].next === undefined ? args[3].group : undefined;
    try {
      return super.handOff(...args);
    } finally {
      this.leaving = undefined;
    }
  }

  override leaveQueue(
    ...[queueKey, group, pass]: Parameters<PubSubSimNode['leaveQueue']>
  ): Promise<void> {
    // Reverts issue 24 item 2: a group's last waiter leaving does not pass its reservation on.
    return super.leaveQueue(
      queueKey,
      group,
      this.mutant === 'leaveKeepsReservation' ? undefined : pass,
    );
  }
}

/** One run of `scope` under the schedule `deviations`. */
export async function runOnce(
  scope: FairScope,
  deviations: ReadonlyMap<number, number>,
  trace?: string[],
): Promise<{ arities: number[]; violations: Omit<FairViolation, 'schedule'>[] }> {
  const clock = new VirtualClock();
  const start = clock.now();
  const log =
    trace === undefined
      ? undefined
      : (line: string) => trace.push(`t=${(clock.now() - start).toFixed(1)} ${line}`);
  const aliases = new Map<string, string>();
  // Owner values and ids are random: a trace names each by its order of first appearance.
  const alias = (value: string) =>
    value
      .replace(/[A-Za-z0-9_-]{12,}/g, (v) => {
        let name = aliases.get(v);
        if (name === undefined) aliases.set(v, (name = `v${aliases.size}`));
        return name;
      })
      .replace(/\0/g, '\\0');
  const chooser = new Chooser(deviations, log);
  const violations: Omit<FairViolation, 'schedule'>[] = [];
  const seen = new Set<string>();
  const violate = (property: FairViolation['property'], message: string) => {
    if (seen.has(property)) return;
    seen.add(property);
    violations.push({ property, message: `t=${(clock.now() - start).toFixed(1)}: ${message}` });
    log?.(`VIOLATION ${property}: ${message}`);
  };
  // Whether a reply, a command or an announcement was lost so far: then a waiter may fall back
  // to polling (a retry delay), unless a node holds a reservation nobody claims.
  let lost = false;
  const nodes = [0, 1, 2].map(
    (i) =>
      new ChoiceNode(
        `s${i}`,
        clock,
        chooser,
        scope.mutant,
        () => (lost = true),
        alias,
        scope.slow?.nodes.includes(i) === true ? scope.slow : undefined,
      ),
  );
  for (const i of scope.deadHeadOn ?? []) {
    nodes[i].queues.add('redlock:a\0q', 'dead', Math.floor(nodes[i].serverNow()) - 10 * TTL);
    markQueued(nodes[i].scripts, 'redlock:a', 'redlock:a\0q', 2 * TTL);
  }
  const core = new SeededRandom(7);
  const managers = scope.managers.map(
    (fairness) =>
      new Redlock(nodes, {
        clock,
        random: () => core.next(),
        logger: quiet,
        ttl: TTL,
        nodeTimeout: NODE_TIMEOUT,
        retryDelay: RETRY_DELAY,
        retryJitter: 0,
        quarantine: false,
        notifications: true,
        fairness,
      }),
  );

  interface Live {
    readonly spec: FairWaiter;
    readonly name: string;
    startedAt?: number;
    grantedAt?: number;
    done: boolean;
    lock?: Lock;
    gaveUp?: boolean;
  }
  const live: Live[] = scope.waiters.map((spec, i) => ({ spec, name: `w${i}`, done: false }));
  const resourcesOf = (w: Live) => w.spec.resources ?? ['a'];
  const idleSince = new Map<string, number>();
  /** Waiters whose idle spell met a reservation for a group that left (see the bound). */
  const behindDeparted = new Set<string>();
  /** When each lock manager (m × 3 + node) last suspected each node hung. */
  const suspectedAt = new Map<number, number>();
  /** Each group's lock manager, kept after its line closed (a reservation may outlive it). */
  const groupOwner = new Map<string, number>();

  clock.onStep = () => {
    const now = clock.now();
    const holders = live.filter((w) => w.lock !== undefined && w.lock.isValid());
    for (let i = 0; i < holders.length; i++) {
      for (let j = i + 1; j < holders.length; j++) {
        const shared = resourcesOf(holders[i]).find((r) => resourcesOf(holders[j]).includes(r));
        if (shared !== undefined)
          violate('one-holder', `${holders[i].name} and ${holders[j].name} both hold ${shared}`);
      }
    }
    managers.forEach((manager, m) => {
      nodes.forEach((node, i) => {
        if (suspects(manager, node)) suspectedAt.set(m * nodes.length + i, now);
      });
      for (const resource of ['a', 'b']) {
        const group = groupOf(manager, `redlock:${resource}`);
        if (group !== undefined) groupOwner.set(group, m);
      }
    });
    // Dead weight: an owner value no valid lock holds (its release was lost, or its attempt
    // landed after its own cleanup): nobody can take the key there before its lease ends. On a
    // majority of nodes, that is the lease's cost (architecture.md §5.1), not the queue's.
    const valid = new Set(holders.map((w) => w.lock!.value));
    const blocked = (resource: string) =>
      holders.some((w) => resourcesOf(w).includes(resource)) ||
      nodes.filter((node) => {
        const value = node.valueAt(`redlock:${resource}`);
        return value !== undefined && !value.startsWith(RESERVED) && !valid.has(value);
      }).length >
        nodes.length - 2;
    // A reservation its group can claim (not a dead group's, nor one whose claim was lost on the
    // way, nor one for a group that left: reservedForDeparted): it is to be claimed within the
    // idle bound, faults or not. Not one for the waiters outside the queues (`\0r\0p`): they
    // are no group, nobody times their claim, and after a loss they poll at the retry delay like
    // any plain waiter (docs/fair-hand-off.md, "Leaving"); the search found one whose claim's
    // reply was lost on one node while its own cleanup freed the reservation on another,
    // retrying 300 ms later. Nor one on a node that
    // the lock manager of the group it names suspected hung within the last retry delay (issue
    // 18: it sends that node nothing until a probe answers, every 250 ms, and its head finds the
    // node back at its next attempt): suspicion's documented cost, one retry delay, which B = 3
    // found (`0:2 15:2 16:3` and `0:3 8:2 12:3` in "two fair managers", `0:2 18:2 19:3` in
    // "gives up during a hand-off": 240-250 ms).
    const claimable = (resource: string) =>
      nodes.some((node, i) => {
        const key = `redlock:${resource}`;
        const value = node.valueAt(key);
        const claimant = value === undefined ? undefined : groupOwner.get(value.slice(2));
        return (
          (claimant === undefined ||
            now - (suspectedAt.get(claimant * nodes.length + i) ?? -Infinity) > RETRY_DELAY) &&
          value !== undefined &&
          value.startsWith(RESERVED) &&
          value !== `${RESERVED}dead` &&
          value !== `${RESERVED}\0p` &&
          !node.lostClaims.has(value.slice(2)) &&
          !node.reservedForDeparted(key)
        );
      });
    // Per waiter: idle while none of what it waits for is held (or dead weight).
    for (const w of live) {
      const waiting =
        w.startedAt !== undefined &&
        w.grantedAt === undefined &&
        !w.done &&
        now < w.startedAt + w.spec.wait;
      if (!waiting || resourcesOf(w).some(blocked)) {
        idleSince.delete(w.name);
        behindDeparted.delete(w.name);
        continue;
      }
      const since = idleSince.get(w.name) ?? now;
      idleSince.set(w.name, since);
      // After a loss: one retry delay more, or, where a group that left held a reservation during
      // this spell, that reservation's lease (issue 24 item 2: within one handOffLease when it
      // cannot pass it on).
      if (resourcesOf(w).some((r) => nodes.some((n) => n.reservedForDeparted(`redlock:${r}`)))) {
        behindDeparted.add(w.name);
      }
      const bound =
        !lost || resourcesOf(w).some(claimable)
          ? scope.idleMs
          : scope.idleMs + (behindDeparted.has(w.name) ? HAND_OFF_LEASE : RETRY_DELAY);
      if (now - since > bound) {
        violate(
          'idle',
          `${w.name} waited for [${resourcesOf(w).join(', ')}] ${(now - since).toFixed(1)} ms with none of it held`,
        );
      }
    }
  };

  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimer(resolve, ms));
  const work = async (w: Live) => {
    await sleep(w.spec.at);
    w.startedAt = clock.now();
    log?.(`${w.name} asks`);
    try {
      w.lock = await managers[w.spec.manager].acquire([...resourcesOf(w)], {
        wait: w.spec.wait,
        fencing: w.spec.fencing,
      });
    } catch (error) {
      w.done = true;
      w.gaveUp = true;
      log?.(`${w.name} gave up: ${String(error)}`);
      if (!(error instanceof LockNotAcquiredError)) violate('error', `${w.name}: ${String(error)}`);
      return;
    }
    w.grantedAt = clock.now();
    log?.(`${w.name} holds`);
    if (w.grantedAt > w.startedAt + w.spec.wait + NODE_TIMEOUT + 1) {
      violate(
        'late-grant',
        `${w.name} granted ${(w.grantedAt - w.startedAt).toFixed(1)} ms after it asked (wait ${w.spec.wait})`,
      );
    }
    await sleep(w.spec.hold);
    const lock = w.lock;
    w.lock = undefined;
    w.done = true;
    log?.(`${w.name} releases`);
    await lock.release();
    log?.(`${w.name} released`);
  };

  try {
    await clock.run(Promise.all(live.map(work)), 20 * TTL);
  } catch (error) {
    violate('hang', `the waiters did not finish: ${String(error)}`);
  }
  clock.onStep = undefined;
  for (const w of live) {
    if (w.gaveUp === true && w.spec.mayGiveUp !== true) {
      violate('starved', `${w.name} gave up after ${w.spec.wait} ms`);
    }
  }
  try {
    await clock.run(Promise.all(managers.map((m) => m.close())), 60_000);
  } catch (error) {
    violate('hang', `close() did not finish: ${String(error)}`);
  }
  return { arities: chooser.arities, violations };
}

/** The internal parts the properties read (lib/core/manager/parts.ts). */
const partsOf = (manager: Redlock) =>
  (
    manager as unknown as {
      parts: { suspicion: Suspicion; fair?: { lines: Map<string, { group: string }> } };
    }
  ).parts;

/** Whether `manager` suspects `node` hung now (lib/core/nodes/suspicion.ts). */
function suspects(manager: Redlock, node: ChoiceNode): boolean {
  return partsOf(manager).suspicion.isSuspected(node);
}

/** The group `manager` queues its waiters for `key` in now (fair-queue.ts), if it has any. */
function groupOf(manager: Redlock, key: string): string | undefined {
  return partsOf(manager).fair?.lines.get(key)?.group;
}

const describeSchedule = (deviations: ReadonlyMap<number, number>) =>
  deviations.size === 0
    ? 'default'
    : [...deviations].map(([point, outcome]) => `${point}:${outcome}`).join(' ');

/** How many violating schedules a search reports per property. */
const REPORTED = 5;

/**
 * Every schedule of `scope` with at most `scope.budget` deviations (or `budget`), depth-first;
 * up to five violating schedules per property are reported.
 * `stopAtFirst`: return at the first violation (a mutant found).
 */
export async function searchFair(
  scope: FairScope,
  options: { budget?: number; stopAtFirst?: boolean } = {},
): Promise<FairSearchResult> {
  const started = Date.now();
  const budget = options.budget ?? scope.budget;
  const violations: FairViolation[] = [];
  const found = new Map<string, number>();
  let runs = 0;
  let points = 0;
  const visit = async (
    deviations: ReadonlyMap<number, number>,
    from: number,
    left: number,
  ): Promise<boolean> => {
    const result = await runOnce(scope, deviations);
    runs++;
    if (deviations.size === 0) points = result.arities.length;
    for (const v of result.violations) {
      // Up to REPORTED schedules per property: a property's first finding must not hide others.
      const seen = found.get(v.property) ?? 0;
      if (seen >= REPORTED) continue;
      found.set(v.property, seen + 1);
      violations.push({ ...v, schedule: describeSchedule(deviations) });
      if (options.stopAtFirst === true) return true;
    }
    if (left === 0) return false;
    for (let point = from; point < result.arities.length; point++) {
      for (let outcome = 1; outcome < result.arities[point]; outcome++) {
        const next = new Map(deviations).set(point, outcome);
        if (await visit(next, point + 1, left - 1)) return true;
      }
    }
    return false;
  };
  await visit(new Map(), 0, budget);
  return { runs, points, violations, ms: Date.now() - started };
}
