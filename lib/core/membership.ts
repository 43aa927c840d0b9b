import { createHash } from 'node:crypto';
import type { Clock, ClockTimer } from './clock';
import { fanOut } from './fan-out';
import { FENCE_COUNTER_KEEP_MS } from './fencing';
import type { RedlockLogger } from './logger';
import type { NodeStanding, RedisNode, ServerInfo, StandingKeys } from './node';
import { quorumOf } from './quorum';
import {
  admission,
  floorRestore,
  settledAfterMs,
  type Admission,
  type NodeFacts,
  type RestartRule,
} from './quarantine';

/** What the membership needs to know of the lock manager's settings. */
export interface MembershipOptions {
  /** `false`: every node votes (no restart detection). */
  readonly quarantine: boolean;
  /** Let a node whose server refuses `INFO` vote (it cannot be checked for restarts). */
  readonly trustUnidentifiedNodes: boolean;
  readonly driftFactor: number;
  readonly nodeTimeout: number;
  readonly keyPrefix: string;
  /** The lock manager's default ttl: horizons are recorded for at least a few of these. */
  readonly ttl: number;
  /** The longest lease any client of the fleet holds: what a restarted node may have lost. */
  readonly maxTtl: number;
  /** Restore fence floors from the start (the lock manager fences by default). */
  readonly fencing: boolean;
  /** Names this fleet's fence records: the key prefix and the node list (fleetId()). */
  readonly fleet: string;
}

/** Transitions the lock manager reports (events). */
export interface MembershipListener {
  quarantined(node: string, remainingMs: number): void;
  rejoined(node: string): void;
}

/**
 * While a node waits on too few answers, or cannot be read, the fleet is looked at again this
 * often: an answer that comes later may shorten the wait (never lengthen it).
 */
const RECHECK_MS = 1_000;
/** How long a standing read may take (off the lock path): at least this, or `nodeTimeout`. */
const STANDING_TIMEOUT_MS = 1_000;
/**
 * Horizons are recorded this many ttls ahead, so one record serves many leases (about one extra
 * command per node per ttl).
 */
const HORIZON_TTLS = 2;

/** One node's standing as this lock manager sees it, for one identity of its server. */
class Member {
  /** The server identity the standing is about; a new one (a reconnect) starts over. */
  info?: ServerInfo;
  /** Bumped whenever `info` changes: late results about an older identity are dropped. */
  epoch = 0;
  /**
   * `unknown`: no identity (INFO unread or refused); `pending`: identified, no survey answered
   * for it yet; `waiting`: may vote at `voteAt`; `voting`.
   */
  state: 'unknown' | 'pending' | 'waiting' | 'voting' = 'unknown';
  /** When it may vote (monotonic ms): the earliest any survey allowed. */
  voteAt = Infinity;
  /** Why it waits, as the survey that set `voteAt` said. */
  why?: Admission['why'];
  /** Whether its fence floor is complete for this fleet (DESIGN §5.6). */
  fence: 'unknown' | 'complete' | 'blocked' = 'unknown';
  /** Leases whose client-side end is before this (monotonic ms) are covered by a recorded horizon. */
  coveredUntil = -Infinity;
  covering?: Promise<void>;
  /** After a failed record: not asked again before this (monotonic ms). */
  coverFailedUntil = -Infinity;
  /** Consecutive failed records: the back-off grows with them. */
  coverFailures = 0;
  timer?: ClockTimer;
  identifying = false;
  /** The quarantine was said for this identity (one line per node per decision). */
  said = false;
  /** Since when (monotonic ms) surveys could not tell (too few answers) for this identity. */
  uninformedSince?: number;
  /** Since when (monotonic ms) its node is known down, if it is. */
  downSince?: number;
}

/**
 * Which nodes may vote (DESIGN §5.7): the part of the lock manager that knows its nodes — their
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
      member.covering ??= this.recordHorizon(i, horizonWindow(ttl, this.options.ttl));
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
    this.logger.warn(this.quarantineLine(index, member.why ?? decision.why, left));
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
  private quarantineLine(index: number, why: Admission['why'], leftMs: number): string {
    const name = this.nodes[index].name;
    const ms = Math.ceil(leftMs);
    const start = `Redis node ${name} restarted without proof that its data survived, so it may have lost keys of locks still held: it does not count toward a quorum for up to ${ms} ms`;
    if (why === 'horizons') return `${start}, until the leases its peers recorded have ended`;
    const settled = `${start}, until it has been up for maxTtl (${settledAfterMs(this.rule)} ms with drift)`;
    return why === 'uptime'
      ? `${settled}: the leases its peers recorded last longer`
      : `${settled}: too few of its peers answered to bound its leases`;
  }

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

  private async recordHorizon(index: number, windowMs: number): Promise<void> {
    const member = this.members[index];
    const node = this.nodes[index];
    const epoch = member.epoch;
    const identities = this.identities;
    const sentAt = this.clock.now();
    const runIds = this.nodes.flatMap((n) =>
      n.serverInfo === undefined ? [] : [n.serverInfo.runId],
    );
    try {
      const [reply] = await fanOut([node], (n) => n.recordHorizon!(this.keys, windowMs, runIds), {
        clock: this.clock,
        timeoutMs: this.options.nodeTimeout,
      });
      const recorded = reply.kind === 'ok';
      // The node applied it after it was sent: its horizon is at least its own time then plus
      // the window. A lease whose client-side end falls before this is covered, node clocks
      // running faster than ours included.
      if (recorded) member.coverFailures = 0;
      if (recorded && member.epoch === epoch && this.identities === identities) {
        const until = coveredUntil(sentAt, windowMs, this.options.driftFactor);
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

  /** Two node timeouts after the first failure, doubling with each next one, up to RECHECK_MS. */
  private backoff(failures: number): number {
    return Math.min(RECHECK_MS, 2 * this.options.nodeTimeout * 2 ** Math.min(failures, 10));
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

/**
 * A node's facts for the restart rule (quarantine.ts), from its STANDING reply and what our own
 * connection's INFO and CONFIG read (`info`, possibly about an earlier incarnation).
 */
export function nodeFacts(reply: NodeStanding, info: ServerInfo | undefined): NodeFacts {
  return {
    runId: reply.runId,
    // uptime_in_seconds is whole seconds: the true age is at least u - 1 s.
    ageMs: Math.max(0, reply.uptimeSeconds - 1) * 1_000,
    born: reply.born,
    // The configuration read over our own connection, if it is about this same server.
    durableConfig: info !== undefined && info.runId === reply.runId && info.durable,
    horizons: reply.horizons,
    floor: reply.floor,
    fenced: reply.fenced,
  };
}

/**
 * Whether a node that restart detection has decided on votes for a lease of `ttl` ms from
 * `now` (none: standing only), in a fenced acquisition or not: it votes (`state`), its recorded
 * horizon covers the lease, and for a fenced one its floor is complete.
 */
export function votes(
  member: { readonly state: string; readonly coveredUntil: number; readonly fence: string },
  now: number,
  ttl: number | undefined,
  fenced: boolean,
): boolean {
  return (
    member.state === 'voting' &&
    (ttl === undefined || member.coveredUntil >= now + ttl) &&
    (!fenced || member.fence === 'complete')
  );
}

/**
 * Until when (our monotonic ms) a horizon recorded with `windowMs`, sent at `sentAt`, covers a
 * lease: the node applied it after it was sent, so its horizon is at least its own time then
 * plus the window; node clocks running up to `driftFactor` faster than ours are allowed for.
 */
export function coveredUntil(sentAt: number, windowMs: number, driftFactor: number): number {
  return sentAt + windowMs / (1 + driftFactor) - 2;
}

/** How far ahead a horizon is recorded for a lease of `ttl` (ms), given the default ttl. */
export function horizonWindow(ttl: number, defaultTtl: number): number {
  return Math.max(ttl, defaultTtl) * HORIZON_TTLS;
}

/**
 * The keys restart detection keeps on a node for one fleet (`fleet`: {@link fleetId}). NUL cannot
 * appear in a resource name (normalizeResources), so none of them is a lock's key.
 *
 * Horizons and the fence record are per fleet: another fleet sharing a node (same key prefix,
 * another node list) files its horizons under its own nodes' `run_id`s, which are no node's of
 * this fleet; read from one shared hash they looked like horizons of a restart, and a restarted
 * node — or every node of a fresh fleet — waited up to `maxTtl` for leases it never held (found
 * by the exhaustive restart search, docs/restart-search.md). The marker (`born`) and the fence
 * counter's floor are the node's own, whoever wrote them.
 */
export function standingKeys(keyPrefix: string, fleet: string): StandingKeys {
  return {
    horizon: `${keyPrefix}\u0000redlock:horizons:${fleet}`,
    born: `${keyPrefix}\u0000redlock:born`,
    floor: `${keyPrefix}\u0000redlock:fence`,
    fenced: `${keyPrefix}\u0000redlock:fenced:${fleet}`,
  };
}

/**
 * The name of a fleet's fence records: its key prefix and its node list, as written. Lock
 * managers that list the same nodes the same way share their records; one that lists them
 * otherwise (or another fleet sharing a node) restores floors for itself.
 */
export function fleetId(keyPrefix: string, nodeNames: readonly string[]): string {
  const text = [keyPrefix, ...[...nodeNames].sort()].join('\u0000');
  // Not a secret: 64 bits so that two fleets sharing a node never share a name by chance.
  return createHash('sha1').update(text).digest('hex').slice(0, 16);
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
      typeof node.restoreFloor !== 'function',
  );
}
