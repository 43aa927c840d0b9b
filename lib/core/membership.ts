import type { Clock, ClockTimer } from './clock';
import { fanOut } from './fan-out';
import { FENCE_COUNTER_KEEP_MS } from './fencing';
import type { RedlockLogger } from './logger';
import type { NodeStanding, RedisNode, ServerInfo, StandingKeys } from './node';
import { quorumOf } from './quorum';
import { admissionWait, type PeerStanding } from './quarantine';

/** What the membership needs to know of the lock manager's settings. */
export interface MembershipOptions {
  /** `false`: every node votes (no restart detection); `true`: fleet-learnt; a number: also a minimum uptime (ms). */
  readonly quarantine: boolean | number;
  /** Let a node whose server refuses `INFO` vote (it cannot be checked for restarts). */
  readonly trustUnidentifiedNodes: boolean;
  readonly driftFactor: number;
  readonly nodeTimeout: number;
  readonly keyPrefix: string;
  /** The lock manager's default ttl: horizons are recorded for at least a few of these. */
  readonly ttl: number;
}

/** Transitions the lock manager reports (events and logs). */
export interface MembershipListener {
  quarantined(node: string, remainingMs: number): void;
  rejoined(node: string): void;
}

/**
 * How often, at most, a node that cannot be decided on yet (INFO failed, peers unreachable, a
 * command timed out on a busy machine) is looked at again: the first retry comes after two node
 * timeouts, each next one waits twice as long, up to this.
 */
const RECHECK_MS = 1_000;
/** How long a standing read may take (off the lock path): at least this, or `nodeTimeout`. */
const STANDING_TIMEOUT_MS = 1_000;
/**
 * Horizons are recorded this many ttls ahead, so one record serves many leases; a restarted
 * node's quarantine is at most this many ttls.
 */
const HORIZON_TTLS = 2;

/** One node's standing as this lock manager sees it. */
class Member {
  /** The server identity the standing is about; a new one (a reconnect) starts over. */
  info?: ServerInfo;
  /** Bumped whenever `info` changes: late results of an older check are dropped. */
  epoch = 0;
  state: 'unknown' | 'checking' | 'quarantined' | 'admitted' = 'unknown';
  /** Leases whose client-side end is before this (monotonic ms) are covered by a recorded horizon. */
  coveredUntil = -Infinity;
  covering?: Promise<void>;
  /** After a failed record: not asked again before this (monotonic ms). */
  coverFailedUntil = -Infinity;
  /** Consecutive failed records / checks: the back-off grows with them. */
  coverFailures = 0;
  checkFailures = 0;
  timer?: ClockTimer;
  /** A look again while the fleet could not tell (too few peers answered). */
  retryTimer?: ClockTimer;
  /** The first decision on this identity was reached (admitted, or quarantined and waiting). */
  decided?: () => void;
  wasQuarantined = false;
  identifying = false;
}

/**
 * Which nodes may vote (DESIGN §5.7): the part of the lock manager that knows its nodes —
 * their server identity, whether one may have lost keys, and the fleet's memory of leases.
 *
 * A Redis node restarted without its data may have lost keys of locks still held. The fleet
 * remembers what a single client cannot:
 * - every node keeps a **lease horizon** (HORIZON_SCRIPT): until when, on its own clock, any
 *   lease granted on it may last. A lock manager records it, ahead of time and for a few ttls
 *   at once, before it counts a node's vote for a lease (acquisitions *and* extensions, of any
 *   ttl), so no lease outlives the horizon of the nodes that granted it;
 * - every node carries a **stamp**: the `run_id` under which a lock manager last admitted it.
 *   A node whose stamp is its own current `run_id` has kept every key since it was admitted:
 *   it votes at once, for every lock manager, including one started long after.
 * A node without that stamp (restarted, or never seen) that is not durable is admitted only once
 * the horizons of its peers have passed — read after the restart, from all of them or from
 * enough intact ones that every possible quorum of an earlier lease is met — so every lease it
 * may have lost has ended. Its fence floor is raised to its peers' highest before its stamp is
 * written, so it never issues a token below one already issued (DESIGN §5.6). A node whose
 * `INFO` could not be read does not vote until a read succeeds (retried); one whose server
 * refuses `INFO` votes only with `trustUnidentifiedNodes`.
 * What is left outside: a majority of the nodes losing their data within one horizon.
 */
export class Membership {
  readonly keys: StandingKeys;
  private readonly members: Member[];
  private readonly quorum: number;
  private closed = false;
  /** The longest lease this lock manager has asked for (acquisitions and extensions). */
  private longestLease: number;

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly clock: Clock,
    private readonly options: MembershipOptions,
    private readonly logger: RedlockLogger,
    private readonly listener: MembershipListener,
  ) {
    const prefix = options.keyPrefix;
    // NUL cannot appear in a resource name (normalizeResources), so these are no lock's keys.
    this.keys = {
      stamp: `${prefix}\u0000redlock:stamp`,
      horizon: `${prefix}\u0000redlock:horizon`,
      floor: `${prefix}\u0000redlock:fence`,
    };
    this.members = nodes.map(() => new Member());
    this.quorum = quorumOf(nodes.length);
    this.longestLease = options.ttl;
  }

  /** Whether restarts are watched at all (`quarantine: false` turns it off). */
  get enabled(): boolean {
    return this.options.quarantine !== false;
  }

  /**
   * Which nodes may vote now, by index, for a lease of `ttl` ms starting now (none: only
   * standing is asked, as a health check does). Never a node that reports the run_id of an
   * earlier node (one server listed twice); with the quarantine on, only admitted nodes whose
   * lease horizon covers the lease.
   */
  voters(ttl?: number): boolean[] {
    const now = this.clock.now();
    return this.nodes.map((node, index) => {
      const runId = node.serverInfo?.runId;
      if (runId !== undefined) {
        for (let i = 0; i < index; i++) if (this.nodes[i].serverInfo?.runId === runId) return false;
      }
      if (!this.enabled) return true;
      const member = this.observe(index);
      const standing =
        member.state === 'admitted' ||
        (node.serverInfo === undefined &&
          node.identityError === 'refused' &&
          this.options.trustUnidentifiedNodes);
      return standing && (ttl === undefined || member.coveredUntil >= now + ttl);
    });
  }

  /**
   * Looks at every node now and resolves once each has reached a first decision (admitted,
   * quarantined, or unknown for now), or after `timeoutMs`. For `ready()`: the first lock is
   * then not refused only because the checks were still under way.
   */
  async settle(timeoutMs: number): Promise<void> {
    if (!this.enabled) return;
    const decisions = this.nodes.map((_, index) => {
      const member = this.observe(index);
      if (member.state !== 'checking') return Promise.resolve();
      return new Promise<void>((resolve) => {
        const previous = member.decided;
        member.decided = () => {
          previous?.();
          resolve();
        };
      });
    });
    let timer: ClockTimer | undefined;
    await Promise.race([
      Promise.all(decisions),
      new Promise<void>((resolve) => (timer = this.clock.setTimer(resolve, timeoutMs))),
    ]);
    this.clock.clearTimer(timer);
  }

  /**
   * Makes sure the lease horizon of the nodes covers a lease of `ttl` ms starting now:
   * records a new one (two ttls ahead) on nodes whose last record falls short. `undefined`
   * (no promise) when nothing is to be recorded or a quorum is covered already (the records
   * then run on in the background); otherwise resolves once every record sent has answered,
   * each bounded by `nodeTimeout`.
   */
  cover(ttl: number): Promise<void> | undefined {
    // Synchronous when nothing is to be recorded (the usual case): an attempt's round then
    // starts in the same turn as the call, and its validity is measured from there.
    if (!this.enabled) return undefined;
    if (ttl > this.longestLease) this.longestLease = ttl;
    const now = this.clock.now();
    // Recorded again once less than a quarter lease of slack is left, so a record usually
    // happens before an acquisition needs it, and rarely (about once per ttl per node).
    const needed = now + ttl + ttl / 4;
    const pending: Promise<void>[] = [];
    for (let i = 0; i < this.nodes.length; i++) {
      // A node that came back as another server has lost what was recorded on it.
      const member = this.observe(i);
      if (member.coveredUntil >= needed || this.nodes[i].isDown === true) continue;
      // A node whose last record failed (hung, refusing) is not asked again, nor waited for,
      // until a back-off has passed: it must not cost every attempt a node timeout.
      if (member.covering === undefined && now < member.coverFailedUntil) continue;
      member.covering ??= this.recordHorizon(i, Math.max(ttl, this.options.ttl) * HORIZON_TTLS);
      pending.push(member.covering);
    }
    if (pending.length === 0) return undefined;
    // A quorum covered already (counted as a round would: one server listed twice votes
    // once): the records run on in the background. Waiting for them would make every
    // acquisition wait out the record of a hung node (one nodeTimeout each, once its last record
    // fell short), and a node not covered yet simply does not vote (voters()).
    if (this.voters(ttl).filter(Boolean).length >= this.quorum) return undefined;
    // Otherwise every record sent is waited for (each is bounded by nodeTimeout): a round then
    // counts every node that can vote, not only the first quorum to answer.
    return Promise.all(pending).then(() => undefined);
  }

  /** Stops every timer (the lock manager is closing). */
  close(): void {
    this.closed = true;
    for (const member of this.members) {
      this.clock.clearTimer(member.timer);
      this.clock.clearTimer(member.retryTimer);
      member.decided?.();
      member.decided = undefined;
    }
  }

  /** The member for `index`, started over when its node's identity changed. */
  private observe(index: number): Member {
    const member = this.members[index];
    const node = this.nodes[index];
    const info = node.serverInfo;
    if (info !== member.info || member.state === 'unknown') {
      if (info !== member.info) {
        member.info = info;
        member.epoch++;
        // A new incarnation may have lost the horizon recorded on the old one.
        member.coveredUntil = -Infinity;
        this.clock.clearTimer(member.timer);
        this.clock.clearTimer(member.retryTimer);
        member.timer = undefined;
        member.state = 'unknown';
      }
      if (info !== undefined && member.state === 'unknown') {
        member.state = 'checking';
        void this.check(index, member.epoch);
      } else if (info === undefined && node.identityError === 'failed') {
        this.retryIdentity(index);
      }
    }
    return member;
  }

  /** Reads INFO again after a failed read, at most once per RECHECK_MS. */
  private retryIdentity(index: number): void {
    const member = this.members[index];
    const node = this.nodes[index];
    if (member.identifying || node.identify === undefined || this.closed) return;
    member.identifying = true;
    member.timer = this.clock.setTimer(() => {
      void node.identify!().then(() => {
        member.identifying = false;
        if (!this.closed) this.observe(index);
      });
    }, RECHECK_MS);
  }

  /** Decides on one identity of one node: admitted now, after a wait, or looked at again later. */
  private async check(index: number, epoch: number): Promise<void> {
    const member = this.members[index];
    const node = this.nodes[index];
    const info = member.info!;
    const current = () => !this.closed && member.epoch === epoch;
    const own = await this.readStanding([node]);
    if (!current()) return;
    const standing = own[0];
    if (standing === undefined) return this.recheck(index, epoch);
    // A lower bound: `uptime_in_seconds` is whole seconds (the true age lies within a second
    // above u - 1), plus the time since the reading when the adapter dated it.
    const since = info.readAt === undefined ? 0 : Math.max(0, this.clock.now() - info.readAt);
    const ageMs = Math.max(0, info.uptimeSeconds - 1) * 1_000 + since;
    const minUptime = typeof this.options.quarantine === 'number' ? this.options.quarantine : 0;
    if (standing.stamp === info.runId || info.durable) {
      // Kept every key since some lock manager admitted it (or keeps them across crashes).
      return this.admitAfter(index, epoch, Math.max(0, minUptime - ageMs), undefined);
    }
    const peers = this.nodes.filter((_, i) => i !== index);
    const replies = await this.readStanding(peers);
    if (!current()) return;
    const known: PeerStanding[] = [];
    peers.forEach((peer, i) => {
      const reply = replies[i];
      if (reply === undefined) return;
      const peerInfo = peer.serverInfo;
      known.push({
        ...reply,
        intact: peerInfo !== undefined && (peerInfo.durable || reply.stamp === peerInfo.runId),
      });
    });
    const wait = admissionWait(known, peers.length, this.quorum, this.options.driftFactor, {
      ageMs,
      fallbackMs: this.longestLease,
    });
    if (!wait.informed) {
      this.logger.warn(
        `Redis node ${node.name} may have restarted without its data, and too few of its peers answered to tell how long its leases may last: it waits until it has been up for the longest lease this lock manager knows of (${this.longestLease} ms)`,
      );
    }
    const floor = Math.max(standing.floor, ...known.map((peer) => peer.floor));
    this.admitAfter(index, epoch, Math.max(wait.waitMs, minUptime - ageMs), floor);
    if (wait.informed) this.watchStamp(index, epoch);
    if (!wait.informed) {
      // The peers may answer soon (slow, still connecting): an informed decision then replaces
      // the fallback, which is only the longest wait.
      this.clock.clearTimer(member.retryTimer);
      member.retryTimer = this.clock.setTimer(() => {
        if (!this.closed && member.epoch === epoch && member.state === 'quarantined') {
          void this.check(index, epoch);
        }
      }, RECHECK_MS);
    }
  }

  /**
   * While the node waits, looks at its stamp again every RECHECK_MS: another lock manager that
   * started with this one on a fresh fleet may have admitted it before any horizon existed, and
   * its stamp admits the node for every lock manager (the rule of {@link check}). Without this
   * look, this one waited out the horizons it had read between the other's first records and its
   * stamp — up to two of their ttls — failing its acquisitions as unavailable meanwhile (seen in
   * notifications.spec and stale-cleanup.spec when two lock managers start together).
   */
  private watchStamp(index: number, epoch: number): void {
    const member = this.members[index];
    const waiting = () => !this.closed && member.epoch === epoch && member.state === 'quarantined';
    this.clock.clearTimer(member.retryTimer);
    member.retryTimer = this.clock.setTimer(() => {
      if (!waiting()) return;
      void this.readStanding([this.nodes[index]]).then(([standing]) => {
        if (!waiting()) return;
        if (standing !== undefined && standing.stamp === member.info?.runId) {
          this.admitAfter(index, epoch, 0, undefined);
        } else {
          this.watchStamp(index, epoch);
        }
      });
    }, RECHECK_MS);
  }

  /** Admits the node after `waitMs` (quarantined meanwhile); with `floor`, stamps it first. */
  private admitAfter(
    index: number,
    epoch: number,
    waitMs: number,
    floor: number | undefined,
  ): void {
    const member = this.members[index];
    const node = this.nodes[index];
    this.clock.clearTimer(member.timer);
    const admit = async () => {
      if (this.closed || member.epoch !== epoch) return;
      if (floor !== undefined) {
        const stamped = await this.bounded(node, (n) =>
          n.admit!(this.keys, member.info!.runId, floor, FENCE_COUNTER_KEEP_MS),
        );
        if (this.closed || member.epoch !== epoch) return;
        if (!stamped) return this.recheck(index, epoch);
      }
      member.state = 'admitted';
      member.checkFailures = 0;
      this.decide(member);
      if (member.wasQuarantined) {
        member.wasQuarantined = false;
        this.listener.rejoined(node.name);
      }
    };
    if (waitMs <= 0) {
      void admit();
      return;
    }
    member.state = 'quarantined';
    if (!member.wasQuarantined) {
      member.wasQuarantined = true;
      this.listener.quarantined(node.name, waitMs);
    }
    // A first decision for `settle()` even when uninformed: the first lock must not wait on
    // peers that are down; a look again (below) may still shorten the wait.
    this.decide(member);
    member.timer = this.clock.setTimer(() => void admit(), waitMs);
  }

  /** Looks at the node again after a growing back-off (state: checking until then). */
  private recheck(index: number, epoch: number): void {
    const member = this.members[index];
    if (this.closed || member.epoch !== epoch) return;
    member.state = 'checking';
    this.decide(member);
    member.timer = this.clock.setTimer(() => {
      if (this.closed || member.epoch !== epoch) return;
      void this.check(index, epoch);
    }, this.backoff(member.checkFailures++));
  }

  /** Two node timeouts after the first failure, doubling with each next one, up to RECHECK_MS. */
  private backoff(failures: number): number {
    return Math.min(RECHECK_MS, 2 * this.options.nodeTimeout * 2 ** Math.min(failures, 10));
  }

  private decide(member: Member): void {
    const decided = member.decided;
    member.decided = undefined;
    decided?.();
  }

  private async recordHorizon(index: number, windowMs: number): Promise<void> {
    const member = this.members[index];
    const node = this.nodes[index];
    const epoch = member.epoch;
    const sentAt = this.clock.now();
    try {
      const recorded = await this.bounded(node, (n) =>
        n.recordHorizon!(this.keys.horizon, windowMs),
      );
      // The node applied it after it was sent: its horizon is at least its own time then plus
      // the window. A lease whose client-side end falls before this is covered, node clocks
      // running faster than ours included.
      if (recorded) member.coverFailures = 0;
      if (recorded && member.epoch === epoch) {
        const until = sentAt + windowMs / (1 + this.options.driftFactor) - 2;
        member.coveredUntil = Math.max(member.coveredUntil, until);
      } else if (!recorded && member.coverFailures++ > 0) {
        // The first failure is asked again by the next acquisition, not backed off (issue 19):
        // one record late under this process's own load (thousands of calls at once) left
        // every round sent during the back-off with no vote that counted ('unavailable').
        member.coverFailedUntil = this.clock.now() + this.backoff(member.coverFailures - 2);
      }
    } finally {
      member.covering = undefined;
    }
  }

  /**
   * Each node's standing, or `undefined` where it did not answer in time. Off the lock path, so
   * a slow node gets longer than `nodeTimeout` (up to a second): a peer that is merely slow
   * should not leave a restarted node waiting on the fallback.
   */
  private async readStanding(nodes: readonly RedisNode[]): Promise<(NodeStanding | undefined)[]> {
    const replies = await fanOut(nodes, (node) => node.readStanding!(this.keys), {
      clock: this.clock,
      timeoutMs: Math.max(this.options.nodeTimeout, STANDING_TIMEOUT_MS),
    });
    return replies.map((reply) => (reply.kind === 'ok' ? reply.value : undefined));
  }

  /** Runs one command on `node`, bounded by `nodeTimeout`; true when it answered without error. */
  private async bounded(
    node: RedisNode,
    command: (node: RedisNode) => Promise<unknown>,
  ): Promise<boolean> {
    const [reply] = await fanOut([node], command, {
      clock: this.clock,
      timeoutMs: this.options.nodeTimeout,
    });
    return reply.kind === 'ok';
  }
}

/**
 * The nodes that cannot take part in restart detection (a {@link RedisNode} adapter without
 * the membership operations), for the error that refuses them while the quarantine is on.
 */
export function nodesWithoutMembership(nodes: readonly RedisNode[]): RedisNode[] {
  return nodes.filter(
    (node) =>
      typeof node.recordHorizon !== 'function' ||
      typeof node.readStanding !== 'function' ||
      typeof node.admit !== 'function',
  );
}
