import type { Clock } from '../clock';
import { fanOut } from '../nodes/fan-out';
import { RECHECK_MS, type Member, type MembershipOptions } from './member';
import type { RedisNode, StandingKeys } from '../nodes/node';
import { coveredUntil, horizonWindow } from './standing';

/** What the lease horizons read of the membership that owns them. */
export interface HorizonView {
  /** The member for `index`, started over when its node's identity changed. */
  observe(index: number): Member;
  /** Which nodes may vote for a lease of `ttl` ms starting now. */
  voters(ttl: number): readonly boolean[];
  /** Bumped whenever any node's identity changes (records sent before cover nothing). */
  identities(): number;
  readonly quorum: number;
}

/**
 * Lease horizons (architecture.md §5.7, docs/guarantees.md rule line 2): before a node's vote for a lease
 * counts, a horizon covering the lease is filed on it under the run_id of every node of the
 * fleet, so that a peer that restarted without its data waits until those leases have ended.
 * One record serves many leases (two ttls ahead); a failed one is backed off so that a hung
 * node does not cost every acquisition a node timeout.
 */
export class LeaseHorizons {
  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly clock: Clock,
    private readonly options: MembershipOptions,
    private readonly keys: StandingKeys,
    private readonly view: HorizonView,
  ) {}

  /**
   * Makes sure the lease horizon of the nodes covers a lease of `ttl` ms starting now:
   * records a new one (two ttls ahead) on nodes whose last record falls short. `undefined`
   * (no promise) when nothing is to be recorded or a quorum is covered already (the records
   * then run on in the background); otherwise resolves once every record sent has answered,
   * each bounded by `nodeTimeout`.
   */
  cover(ttl: number): Promise<void> | undefined {
    const now = this.clock.now();
    // Recorded again once less than a quarter lease of slack is left, so a record usually
    // happens before an acquisition needs it, and rarely (about once per ttl per node).
    const needed = now + ttl + ttl / 4;
    const pending: Promise<void>[] = [];
    for (let i = 0; i < this.nodes.length; i++) {
      // A node that came back as another server has lost what was recorded on it.
      const member = this.view.observe(i);
      if (member.coveredUntil >= needed || this.nodes[i].isDown === true) continue;
      // A node whose last record failed (hung, refusing) is not asked again, nor waited for,
      // until a back-off has passed: it must not cost every attempt a node timeout.
      if (member.covering === undefined && now < member.coverFailedUntil) continue;
      member.covering ??= this.record(i, member, horizonWindow(ttl, this.options.ttl));
      pending.push(member.covering);
    }
    if (pending.length === 0) return undefined;
    // A quorum covered already (counted as a round would: one server listed twice votes
    // once): the records run on in the background. Waiting for them would make every
    // acquisition wait out the record of a hung node (one nodeTimeout each, once its last record
    // fell short), and a node not covered yet simply does not vote (voters()).
    if (this.view.voters(ttl).filter(Boolean).length >= this.view.quorum) return undefined;
    // Otherwise every record sent is waited for (each is bounded by nodeTimeout): a round then
    // counts every node that can vote, not only the first quorum to answer.
    return Promise.all(pending).then(() => undefined);
  }

  /** Records a horizon `windowMs` ahead on node `index`, filed under every node's run_id. */
  private async record(index: number, member: Member, windowMs: number): Promise<void> {
    const node = this.nodes[index];
    const epoch = member.epoch;
    const identities = this.view.identities();
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
      if (recorded && member.epoch === epoch && this.view.identities() === identities) {
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
}
