import { setMaxListeners } from 'node:events';
import { AcquisitionLoop } from '../acquisition/acquisition';
import type { Clock } from '../clock';
import { RedlockConfigError } from '../errors';
import { FairQueue } from '../acquisition/fair-queue';
import { Membership } from '../membership/membership';
import { fleetId, nodesWithoutMembership } from '../membership/standing';
import type { RedisNode } from '../nodes/node';
import { ReleaseNotifier } from '../acquisition/notifier';
import { assertLockTtl, type ResolvedRedlockOptions } from '../options';
import { AccessCheck } from '../nodes/permissions';
import { quorumOf } from '../quorum/quorum';
import { idSource, type RandomSource } from '../random';
import { extendRound, releaseRound, type RoundContext } from '../acquisition/rounds';
import { Suspicion } from '../nodes/suspicion';
import { HeldLocks } from './held-locks';
import type { LockObserver } from '../observability/observer';
import { ServerClocks } from '../acquisition/server-clocks';

/**
 * The parts a lock manager is made of, wired together once by {@link assembleParts}. `Redlock`
 * (the façade) keeps them and forwards its calls; each part is one concept:
 * - `membership`: which nodes may vote now (restart detection, architecture.md §5.7);
 * - `access`: whether the server lets us run what we need (ACLs);
 * - `suspicion`: nodes that stopped answering, probed before they are asked again;
 * - `round`: what one round of requests to every node needs (rounds.ts);
 * - `acquisition`: the waiting loop of attempts (acquisition.ts), and `fair`, the queue that
 *   hands the lock over in order when `fairness: 'queue'` (fair-queue.ts);
 * - `held`: the locks held now, and how they are extended and released.
 */
export interface ManagerParts {
  readonly options: Readonly<ResolvedRedlockOptions>;
  readonly clock: Clock;
  readonly observer: LockObserver;
  readonly nodes: readonly RedisNode[];
  /** The adapters this lock manager built (and so closes): not the ones passed in. */
  readonly builtNodes: readonly RedisNode[];
  readonly quorum: number;
  readonly access: AccessCheck;
  readonly membership: Membership;
  readonly suspicion: Suspicion;
  readonly round: RoundContext;
  readonly held: HeldLocks;
  readonly acquisition: AcquisitionLoop;
  readonly fair?: FairQueue;
  /** Aborted when the lock manager drains: every waiting acquisition listens to it. */
  readonly draining: AbortController;
  /** A simulation's seeded source (jitter, owner values, release ids); absent: the defaults. */
  readonly random?: RandomSource;
}

/**
 * Builds and wires the parts of a lock manager over `nodes` (adapters already built; `passedIn`
 * marks the ones the caller owns).
 * @throws RedlockConfigError when an adapter cannot do what the options ask (restart
 *   detection, fencing, the fair queue)
 */
export function assembleParts(
  nodes: readonly RedisNode[],
  passedIn: readonly boolean[],
  options: Readonly<ResolvedRedlockOptions>,
  clock: Clock,
  observer: LockObserver,
  random: RandomSource | undefined,
): ManagerParts {
  const logger = observer.logger;
  const draining = new AbortController();
  // Every waiting acquisition listens to it; hundreds of waiters are normal, not a leak.
  setMaxListeners(0, draining.signal);
  const quorum = quorumOf(nodes.length);
  const access = new AccessCheck(nodes, clock, options, logger);
  const membership = new Membership(
    nodes,
    clock,
    {
      quarantine: options.quarantine,
      trustUnidentifiedNodes: options.trustUnidentifiedNodes,
      driftFactor: options.driftFactor,
      nodeTimeout: options.nodeTimeout,
      keyPrefix: options.keyPrefix,
      ttl: options.ttl,
      maxTtl: options.maxTtl,
      fencing: options.fencing,
      fleet: fleetId(
        options.keyPrefix,
        nodes.map((node) => node.name),
      ),
    },
    logger,
    {
      quarantined: (node, remainingMs) => observer.quarantined(node, remainingMs),
      rejoined: (node) => observer.rejoined(node),
    },
  );
  const unable = membership.enabled ? nodesWithoutMembership(nodes)[0] : undefined;
  if (unable !== undefined) {
    throw new RedlockConfigError(
      'quarantine',
      options.quarantine,
      `needs nodes that can record lease horizons and report on themselves; ${unable.name} cannot (pass quarantine: false to use it without restart detection)`,
    );
  }
  for (const node of nodes) node.onHealth?.((state) => observer.nodeHealth(node.name, state));
  if (options.fencing) assertCanFence(nodes);
  // A hung node keeps its connection open, so no connection event reports it: the suspicion,
  // which sees every request's answer, does (a warning line and a `nodeSlow` event).
  const suspicion = new Suspicion(nodes, clock, options.nodeTimeout, (node) => {
    observer.nodeHealth(node.name, 'slow');
    logger?.warn(`Redis node ${node.name} did not answer a command in time (hung or overloaded)`);
  });
  const round: RoundContext = {
    nodes,
    quorum,
    nodeTimeout: options.nodeTimeout,
    driftFactor: options.driftFactor,
    clock,
    voters: (ttl, fenced) => membership.voters(ttl, fenced),
    // Every release is announced, also with notifications off here: other lock managers of
    // the same resources may rely on it (their waiters stop polling while they listen), and
    // a PUBLISH nobody listens to costs the server well under a microsecond.
    notify: true,
    suspicion,
    // A simulation's seeded source names releases too: a run replays from its seed alone.
    releaseId: random === undefined ? undefined : idSource(random),
    serverClocks: options.fairness === 'queue' ? new ServerClocks(clock) : undefined,
  };
  let fair: FairQueue | undefined;
  const held = new HeldLocks(
    clock,
    {
      release: (lock, notSent) =>
        fair?.owns(lock)
          ? fair.release(lock, notSent)
          : releaseRound(round, nodes, lock.keys, lock.value, notSent),
      extend: async (lock, ttl) => {
        assertLockTtl(ttl, options.nodeTimeout, 'ttl', options.maxTtl);
        // A longer lease needs a horizon that covers it before any node's "yes" counts.
        const covering = membership.cover(ttl);
        if (covering !== undefined) await covering;
        const result = await observer.extend(lock, ttl, () =>
          extendRound(round, lock.keys, lock.value, ttl),
        );
        if (!result.extended) return { lost: result.lost };
        observer.extended(lock, result.deadline);
        return { deadline: result.deadline };
      },
      ended: (lock) => fair?.ended(lock),
    },
    observer,
  );
  const notifier = options.notifications ? new ReleaseNotifier(nodes) : undefined;
  const hold = held.add.bind(held);
  const cover = (ttl: number) => membership.cover(ttl);
  const acquisition = new AcquisitionLoop({
    nodes,
    quorum,
    clock,
    round,
    nodeTimeout: options.nodeTimeout,
    cover,
    quorumAt: () => membership.quorumAt(),
    notifier,
    draining: draining.signal,
    observer,
    hold,
    random,
  });
  if (options.fairness === 'queue' && notifier !== undefined) {
    const cannotQueue = nodes.find((node) => !canQueue(node));
    if (cannotQueue !== undefined) {
      throw new RedlockConfigError(
        'fairness',
        options.fairness,
        `needs nodes that can queue waiters and announce releases (pub/sub); ${cannotQueue.name} cannot`,
      );
    }
    fair = new FairQueue({
      clock,
      round,
      notifier,
      loop: acquisition,
      leaseMs: options.handOffLease,
      retryJitter: options.retryJitter,
      cover,
      hold,
      acquired: (call, lock) => observer.acquired(call.names, 0, call.startedAt, lock),
      random,
    });
  }
  const builtNodes = nodes.filter((_, i) => !passedIn[i]);
  return {
    options,
    clock,
    observer,
    nodes,
    builtNodes,
    quorum,
    access,
    membership,
    suspicion,
    round,
    held,
    acquisition,
    fair,
    draining,
    random,
  };
}

/**
 * Fencing needs phase 2 on every node: refused up front when an adapter cannot do it.
 * @throws RedlockConfigError naming the first node that cannot fence
 */
export function assertCanFence(nodes: readonly RedisNode[]): void {
  const unable = nodes.find((node) => typeof node.fence !== 'function');
  if (unable !== undefined) {
    throw new RedlockConfigError(
      'fencing',
      true,
      `needs nodes that can fence; ${unable.name} cannot`,
    );
  }
}

/**
 * Whether a node can serve the fair queue: its acquire and hand-off scripts, and release
 * notifications — a group that is handed the lock is told so, nobody polls for a reservation.
 * Without them (the node-redis adapter has no subscriber connection) a reservation for another
 * lock manager's group went unheard until its lease ran out, again and again: 30 using() calls
 * over two node-redis managers stalled their whole wait in 3 of 12 runs.
 */
export function canQueue(node: RedisNode): boolean {
  return (
    node.acquireQueued !== undefined && node.handOff !== undefined && node.subscribe !== undefined
  );
}
