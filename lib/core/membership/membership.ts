import type { Clock, ClockTimer } from '../clock';
import { fanOut } from '../nodes/fan-out';
import { FENCE_COUNTER_KEEP_MS } from '../quorum/fencing';
import type { RedlockLogger } from '../observability/logger';
import type { NodeStanding, RedisNode, StandingKeys } from '../nodes/node';
import { quorumOf } from '../quorum/quorum';
import {
  admission,
  floorRestore,
  type Admission,
  type NodeFacts,
  type RestartRule,
} from '../quorum/quarantine';
import { LeaseHorizons } from './horizons';
import {
  Member,
  RECHECK_MS,
  STANDING_TIMEOUT_MS,
  type MembershipListener,
  type MembershipOptions,
} from './member';
import { nodeFacts, quarantineLine, standingKeys, votes } from './standing';

export type { MembershipListener, MembershipOptions } from './member';

/** Neither waiting out a quarantine nor unidentified (module-level: quorumAt runs every attempt). */
const isFree = (m: Member): boolean => m.state !== 'waiting' && m.state !== 'unknown';

/**
 * Which nodes may vote (architecture.md §5.7): the part of the lock manager that knows its nodes — their
 * server identity, whether one may have lost keys, its lease horizon and its fence floor.
 *
 * Restart detection reads facts only, each node's about itself (quarantine.ts has the rule and
 * why it holds): a **survey** reads, from every node in one script call each, its `run_id`,
 * uptime, marker, lease horizon and fence floor. A node that is not settled (restarted within
 * `maxTtl`, data not proven to survive) waits until the horizons its peers report have passed,
 * or, when too few answered, until it is settled. Nothing another lock manager concluded is read:
 * managers of other resources, with other ttls, or of another fleet sharing a node cannot make a
 * node vote sooner. The only record kept for others is the fence record (one per fleet, written
 * after the floor was raised to the highest of enough peers): the knowledge it stands for does not
 * depend on who wrote it.
 */
export class Membership {
  readonly keys: StandingKeys;
  private readonly members: Member[];
  /** Records lease horizons on the nodes (horizons.ts). */
  private readonly horizons: LeaseHorizons;
  private readonly quorum: number;
  private readonly rule: RestartRule;
  private closed = false;
  /** Fence floors are wanted (a fenced acquisition was asked for, or fencing is the default). */
  private fencing: boolean;
  /** The survey under way, and whether another must follow it (something changed meanwhile). */
  private surveying?: Promise<void>;
  private surveyAgain = false;
  private recheckTimer?: ClockTimer;
  /** A survey has looked at fence floors (so `fences()` has nothing to wait for). */
  private floorsSurveyed = false;
  /**
   * Bumped whenever any node's identity changes: a horizon record sent before then was filed
   * under run_ids that are no longer the fleet's, so it covers nothing any more.
   */
  private identities = 0;
  /** Called at the end of the next survey. */
  private surveyed: (() => void)[] = [];

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly clock: Clock,
    private readonly options: MembershipOptions,
    private readonly logger: RedlockLogger,
    private readonly listener: MembershipListener,
  ) {
    this.keys = standingKeys(options.keyPrefix, options.fleet);
    this.members = nodes.map(() => new Member());
    this.quorum = quorumOf(nodes.length);
    this.rule = {
      maxTtl: options.maxTtl,
      driftFactor: options.driftFactor,
      quorum: this.quorum,
    };
    this.fencing = options.fencing;
    this.horizons = new LeaseHorizons(nodes, clock, options, this.keys, {
      observe: (index) => this.observe(index),
      voters: (ttl) => this.voters(ttl),
      identities: () => this.identities,
      quorum: this.quorum,
    });
    // When a node went down, not when a call first noticed: how long it has been silent decides
    // whether a wait on too few answers is likely to last (quorumAt).
    nodes.forEach((node, index) => {
      node.onHealth?.((state) => {
        const member = this.members[index];
        if (state === 'down') member.downSince ??= this.clock.now();
        else if (state === 'up') member.downSince = undefined;
      });
    });
  }

  /** Whether restarts are watched at all (`quarantine: false` turns it off). */
  get enabled(): boolean {
    return this.options.quarantine;
  }

  /**
   * Which nodes may vote now, by index, for a lease of `ttl` ms starting now (none: only
   * standing is asked, as a health check does); with `fenced`, in a fenced acquisition. Never a
   * node that reports the run_id of an earlier node (one server listed twice); with the
   * quarantine on, only voting nodes whose lease horizon covers the lease, and for a fenced
   * acquisition only those whose fence floor is complete.
   */
  voters(ttl?: number, fenced = false): boolean[] {
    const now = this.clock.now();
    return this.nodes.map((node, index) => {
      const runId = node.serverInfo?.runId;
      if (runId !== undefined) {
        for (let i = 0; i < index; i++) if (this.nodes[i].serverInfo?.runId === runId) return false;
      }
      if (!this.enabled) return true;
      const member = this.observe(index);
      if (this.trusted(index)) return true;
      return votes(member, now, ttl, fenced);
    });
  }

  /**
   * The earliest time (monotonic ms) at which a quorum of the nodes that are not known down may
   * vote, as far as restart detection knows: now when it may already, `Infinity` when it never
   * will without a node coming back. A node not yet decided counts as able to vote now, and so
   * does one waiting on answers that may still come.
   */
  quorumAt(): number {
    const now = this.clock.now();
    if (!this.enabled) return now;
    // A wait decided on too few answers ('uninformed') ends early once the silent nodes answer: only
    // a node down for a while (refused, not merely slow or reconnecting) makes it likely to last.
    const members = this.nodes.map((_, index) => this.observe(index));
    // Every node up, none waiting out a quarantine or unidentified: a quorum may vote now (every
    // time below would be `now`). The common case, on every attempt: no sort.
    const nodes = this.nodes;
    if (members.every((m, i) => isFree(m) && nodes[i].isDown !== true)) return now;
    const silentForLong = members.some(
      (m) => m.downSince !== undefined && now - m.downSince >= RECHECK_MS,
    );
    const times = this.nodes.map((node, index) => {
      const member = members[index];
      if (node.isDown === true) return Infinity;
      if (member.state === 'waiting' && (member.why !== 'uninformed' || silentForLong)) {
        return member.voteAt;
      }
      if (member.state === 'waiting') return now;
      if (member.state === 'unknown' && !this.trusted(index) && node.identityError === 'refused') {
        return Infinity;
      }
      return now;
    });
    times.sort((a, b) => a - b);
    return times[this.quorum - 1];
  }

  /**
   * Looks at every node now and resolves once each identified one has been decided on
   * (voting, or waiting with a time), or after `timeoutMs`. For `ready()`: the first lock is
   * then not refused only because the survey was still under way.
   */
  async settle(timeoutMs: number): Promise<void> {
    if (!this.enabled) return;
    const until = this.clock.now() + timeoutMs;
    for (;;) {
      this.nodes.forEach((_, index) => this.observe(index));
      const left = until - this.clock.now();
      if (!this.undecided() || left <= 0 || this.closed) return;
      // Woken by the end of the next survey (one is under way or scheduled while any is open).
      if (this.surveying === undefined && this.recheckTimer === undefined) this.requestSurvey();
      await this.nextSurvey(left);
    }
  }

  /** A node identified but not decided on yet (or, when fencing, whose floor is unread). */
  private undecided(): boolean {
    return this.members.some(
      (m) =>
        m.state === 'pending' || (this.fencing && m.state !== 'unknown' && m.fence === 'unknown'),
    );
  }

  /** Resolves at the end of the next survey, or after `timeoutMs`. */
  private nextSurvey(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.clock.setTimer(done, timeoutMs);
      const clock = this.clock;
      function done() {
        clock.clearTimer(timer);
        resolve();
      }
      this.surveyed.push(done);
    });
  }

  /**
   * For a fenced acquisition: makes sure fence floors are being restored. `undefined` when a
   * quorum of voting nodes has complete floors already; otherwise resolves after one more
   * survey (bounded by `timeoutMs`), so the first fenced lock does not fail on floors that are
   * merely unread.
   */
  fences(timeoutMs: number): Promise<void> | undefined {
    if (!this.enabled) return undefined;
    if (!this.fencing) this.fencing = true;
    // Once a survey has looked at the floors, a later one comes with the recheck: no call waits
    // for it (a node that stays blocked must not cost every fenced acquisition a wait).
    if (this.floorsSurveyed) return undefined;
    const ready = this.members.filter((m) => m.state === 'voting' && m.fence === 'complete');
    if (ready.length >= this.quorum) return undefined;
    if (!this.members.some((m) => m.state !== 'unknown' && m.fence !== 'complete')) {
      return undefined;
    }
    if (this.surveying === undefined) this.requestSurvey();
    return this.nextSurvey(timeoutMs);
  }

  /**
   * Makes sure the lease horizon of the nodes covers a lease of `ttl` ms starting now (see
   * LeaseHorizons.cover): `undefined` when nothing is to be waited for.
   */
  cover(ttl: number): Promise<void> | undefined {
    // Synchronous when nothing is to be recorded (the usual case): an attempt's round then
    // starts in the same turn as the call, and its validity is measured from there.
    if (!this.enabled) return undefined;
    return this.horizons.cover(ttl);
  }

  /** Stops every timer (the lock manager is closing). */
  close(): void {
    this.closed = true;
    this.clock.clearTimer(this.recheckTimer);
    for (const member of this.members) this.clock.clearTimer(member.timer);
    const waiting = this.surveyed;
    this.surveyed = [];
    for (const wake of waiting) wake();
  }

  /** A node whose server refuses INFO, voting because the lock manager was told to trust it. */
  private trusted(index: number): boolean {
    const node = this.nodes[index];
    return (
      this.options.trustUnidentifiedNodes &&
      node.serverInfo === undefined &&
      node.identityError === 'refused'
    );
  }

  /** The member for `index`, started over when its node's identity changed. */
  private observe(index: number): Member {
    const member = this.members[index];
    const node = this.nodes[index];
    const info = node.serverInfo;
    if (info !== member.info) {
      member.info = info;
      member.epoch++;
      // Every node's horizon must be filed under this node's run_id before a lease it votes for
      // is covered (quarantine.ts): records made before are no longer enough, on any node.
      this.identities++;
      for (const other of this.members) other.coveredUntil = -Infinity;
      member.voteAt = Infinity;
      member.why = undefined;
      member.fence = 'unknown';
      member.said = false;
      member.uninformedSince = undefined;
      this.clock.clearTimer(member.timer);
      member.timer = undefined;
      member.state = info === undefined ? 'unknown' : 'pending';
      if (info !== undefined) this.requestSurvey();
    }
    if (info === undefined && node.identityError === 'failed') this.retryIdentity(index);
    if (node.isDown !== true) member.downSince = undefined;
    else member.downSince ??= this.clock.now();
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

  /** Starts a survey now, or right after the one under way. */
  private requestSurvey(): void {
    if (this.closed) return;
    if (this.surveying !== undefined) {
      this.surveyAgain = true;
      return;
    }
    this.clock.clearTimer(this.recheckTimer);
    this.recheckTimer = undefined;
    this.surveying = this.survey().finally(() => {
      this.surveying = undefined;
      const waiting = this.surveyed;
      this.surveyed = [];
      for (const wake of waiting) wake();
      if (this.surveyAgain) {
        this.surveyAgain = false;
        this.requestSurvey();
      } else this.scheduleRecheck();
    });
  }

  /** Looks again in RECHECK_MS while an answer still missing could change a decision. */
  private scheduleRecheck(): void {
    if (this.closed || this.recheckTimer !== undefined) return;
    const open = this.members.some(
      (m) =>
        m.state === 'pending' ||
        (m.state === 'waiting' && m.why === 'uninformed') ||
        (this.fencing && m.state !== 'unknown' && m.fence !== 'complete'),
    );
    if (!open) return;
    this.recheckTimer = this.clock.setTimer(() => {
      this.recheckTimer = undefined;
      this.requestSurvey();
    }, RECHECK_MS);
  }

  /** One survey: every node's facts, then a decision for each node that needs one. */
  private async survey(): Promise<void> {
    const epochs = this.members.map((m) => m.epoch);
    const fencing = this.fencing;
    const replies = await this.readStanding();
    if (this.closed) return;
    const now = this.clock.now();
    const survey = replies.map((reply, i) =>
      reply === undefined ? undefined : this.facts(i, reply),
    );
    const restores: Promise<void>[] = [];
    survey.forEach((facts, index) => {
      const member = this.members[index];
      // About another identity than the one we know (a restart since, or INFO not read yet).
      if (facts === undefined || member.epoch !== epochs[index]) return;
      if (member.info?.runId !== facts.runId) return;
      if (member.state === 'pending' || member.state === 'waiting') {
        this.decide(index, admission(survey, index, this.rule), now);
      }
      if (this.fencing && member.fence !== 'complete') {
        restores.push(this.restoreFence(index, survey, facts.runId));
      }
    });
    await Promise.all(restores);
    if (fencing) this.floorsSurveyed = true;
  }

  /** A node's facts for the rule, from its STANDING reply. */
  private facts(index: number, reply: NodeStanding): NodeFacts {
    return nodeFacts(reply, this.nodes[index].serverInfo);
  }

  /** Applies one survey's admission to a node: the earliest time any survey allowed wins. */
  private decide(index: number, decision: Admission, now: number): void {
    const member = this.members[index];
    const voteAt = now + decision.voteInMs;
    if (decision.why === 'uninformed') member.uninformedSince ??= now;
    if (voteAt < member.voteAt) {
      member.voteAt = voteAt;
      member.why = decision.why;
      this.clock.clearTimer(member.timer);
      member.timer = undefined;
      if (decision.voteInMs <= 0) {
        this.admit(index);
        return;
      }
      member.state = 'waiting';
      const epoch = member.epoch;
      member.timer = this.clock.setTimer(() => {
        if (!this.closed && member.epoch === epoch && member.state === 'waiting') this.admit(index);
      }, decision.voteInMs);
    }
    // Said once per node and identity. A wait on too few answers is said only once the surveys
    // of two rechecks could not inform it either: a peer merely slow to answer a fresh lock
    // manager's first look (a stalled node, a busy machine) is no decision worth a warning.
    if (member.state !== 'waiting' || member.said) return;
    if (
      member.why === 'uninformed' &&
      (member.uninformedSince === undefined || now - member.uninformedSince < 2 * RECHECK_MS)
    ) {
      return;
    }
    member.said = true;
    const left = member.voteAt - now;
    this.logger.warn(
      quarantineLine(this.nodes[index].name, member.why ?? decision.why, left, this.rule),
    );
    this.listener.quarantined(this.nodes[index].name, left);
  }

  private admit(index: number): void {
    const member = this.members[index];
    member.state = 'voting';
    member.timer = undefined;
    if (member.said) {
      this.logger.log(`Redis node ${this.nodes[index].name} counts toward a quorum again`);
      this.listener.rejoined(this.nodes[index].name);
    }
  }

  /** The one line said when a node starts waiting: why, and for at most how long. */
  /** Completes a node's fence floor when the survey allows it (quarantine.ts floorRestore). */
  private async restoreFence(
    index: number,
    survey: readonly (NodeFacts | undefined)[],
    runId: string,
  ): Promise<void> {
    const member = this.members[index];
    const epoch = member.epoch;
    const plan = floorRestore(survey, index, this.quorum);
    if (plan.kind !== 'restore') {
      member.fence = plan.kind;
      return;
    }
    const node = this.nodes[index];
    const [reply] = await fanOut(
      [node],
      (n) => n.restoreFloor!(this.keys, runId, plan.floor, FENCE_COUNTER_KEEP_MS),
      { clock: this.clock, timeoutMs: this.options.nodeTimeout },
    );
    if (this.closed || member.epoch !== epoch) return;
    // Not written (another incarnation answered, or no answer): looked at again by a later survey.
    member.fence = reply.kind === 'ok' && reply.value ? 'complete' : 'blocked';
  }

  /**
   * Every node's standing, or `undefined` where it did not answer in time. Off the lock path, so
   * a slow node gets longer than `nodeTimeout` (up to a second): a peer that is merely slow
   * should not leave a restarted node waiting until it is settled.
   */
  private async readStanding(): Promise<(NodeStanding | undefined)[]> {
    const replies = await fanOut(this.nodes, (node) => node.readStanding!(this.keys), {
      clock: this.clock,
      timeoutMs: Math.max(this.options.nodeTimeout, STANDING_TIMEOUT_MS),
    });
    return replies.map((reply) => (reply.kind === 'ok' ? reply.value : undefined));
  }
}
