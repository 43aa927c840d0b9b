/**
 * Client-enforced delayed restarts (architecture.md §5.7, docs/guarantees.md), the pure decisions: when a
 * node that may have lost keys may vote again, and when a node's fence floor may be trusted.
 * They read only facts every node reports about itself in one script call (STANDING_SCRIPT):
 * its `run_id` and uptime, the marker written into its data before it restarted (if it survived),
 * its lease horizon and fence floor. No decision rests on a judgment another lock manager wrote,
 * on another manager's ttl, or on what the node's configuration promises about its data.
 *
 * The rule, for one lock manager and one node X (N nodes, quorum q, shared bound `maxTtl`):
 * 1. X is **settled** when it has been up for `maxTtl` (plus drift), or its data provably
 *    survived its restart (`appendfsync always` *and* the marker written before the restart is
 *    still there). A settled node votes: every lease it could have lost has ended, or it lost none.
 * 2. Any other node votes once the lease horizons its peers filed under `run_id`s that are no
 *    longer any node's current one (X's old one among them) have passed — provided every peer
 *    answered, or the peers that did not answer plus the unsettled nodes (X included) are fewer
 *    than q. Otherwise it votes once it is settled (rule 1).
 * 3. Every lease is at most `maxTtl` (refused above), and a node votes for a lease only once its
 *    horizon covers it, filed under the `run_id`s of every node the lock manager knows
 *    (membership.ts records it first, and again whenever one of them changes).
 * Why 2 holds: a lease X lost was last granted or extended, with X's vote, by a quorum Q within
 * the last `maxTtl`; each member filed a horizon covering it under X's run_id of then, which is
 * no node's now. Fewer than q nodes lose their data within `maxTtl` (the assumption), so some
 * member of Q kept it — and that horizon — since. If every peer answered, that member did. If
 * not, it can be missing only if Q fits inside the unanswered peers and the unsettled nodes,
 * which the condition rules out. Horizons filed under current `run_id`s are leases granted since
 * X restarted, without its vote: waiting for them would protect nothing (a lock manager that
 * joins a young fleet, a fleet restarted whole).
 */

/** What one node said about itself in one STANDING_SCRIPT call. */
export interface NodeFacts {
  /** Its `run_id` when it answered. */
  readonly runId: string;
  /** How long it had been up when it answered: a lower bound, in ms. */
  readonly ageMs: number;
  /** The `run_id` under which its marker was written: another one means its data survived a restart. */
  readonly born?: string;
  /** `appendonly yes` + `appendfsync always`, as its configuration says (never enough alone). */
  readonly durableConfig: boolean;
  /** Its lease horizons still ahead: ms (on its own clock) until each, by the `run_id` filed under. */
  readonly horizons: Readonly<Record<string, number>>;
  /** Its fence floor: the highest fencing token phase 2 wrote on it (0: none). */
  readonly floor: number;
  /** The `run_id` under which this fleet last restored its fence floor, if any. */
  readonly fenced?: string;
}

/** The settings the rule needs. */
export interface RestartRule {
  /** The longest lease any client of the fleet may hold (ms): shared and enforced by all. */
  readonly maxTtl: number;
  readonly driftFactor: number;
  readonly quorum: number;
}

/** When a node may vote, as one survey of the fleet tells. */
export interface Admission {
  /** Ms from the survey until it may vote (0: now). */
  readonly voteInMs: number;
  /**
   * `settled`: up long enough; `durable`: its data survived; `horizons`: its peers' horizons
   * decide; `uptime`: they outlast the time until it is settled, which decides; `uninformed`:
   * too few peers answered to tell, so it waits until it is settled (or a later survey tells).
   */
  readonly why: 'settled' | 'durable' | 'horizons' | 'uptime' | 'uninformed';
}

/** How long a node must have been up before every lease it could have lost has ended (ms). */
export function settledAfterMs(rule: Pick<RestartRule, 'maxTtl' | 'driftFactor'>): number {
  return Math.ceil(rule.maxTtl * (1 + rule.driftFactor)) + 2;
}

/**
 * The node's data provably survived its last restart: its configuration fsyncs every write, and
 * the marker written into its data under an earlier `run_id` is still there. Configuration alone
 * proves nothing: a container restarted without its volume keeps the one and loses the other.
 */
export function keptItsData(facts: NodeFacts): boolean {
  return facts.durableConfig && facts.born !== undefined && facts.born !== facts.runId;
}

/** Rule 1: every lease the node could have lost has ended, or it lost none. */
export function isSettled(facts: NodeFacts, rule: RestartRule): boolean {
  return facts.ageMs >= settledAfterMs(rule) || keptItsData(facts);
}

/**
 * When node `index` may vote, from one survey (`undefined`: that node did not answer). The
 * caller keeps the earliest time any survey gave: each is a safe bound on its own.
 * @throws RangeError when the node itself did not answer (nothing to decide on)
 */
export function admission(
  survey: readonly (NodeFacts | undefined)[],
  index: number,
  rule: RestartRule,
): Admission {
  const own = survey[index];
  if (own === undefined) throw new RangeError(`node ${index} did not answer the survey`);
  if (keptItsData(own)) return { voteInMs: 0, why: 'durable' };
  const uptimeLeft = settledAfterMs(rule) - own.ageMs;
  if (uptimeLeft <= 0) return { voteInMs: 0, why: 'settled' };
  let unanswered = 0;
  let unsettled = 0;
  const current = new Set<string>();
  for (const facts of survey) {
    if (facts === undefined) unanswered++;
    else {
      current.add(facts.runId);
      if (!isSettled(facts, rule)) unsettled++;
    }
  }
  if (unanswered > 0 && unanswered + unsettled >= rule.quorum) {
    return { voteInMs: uptimeLeft, why: 'uninformed' };
  }
  // Filed under a run_id no node that answered has now: leases granted before some restart.
  let longest = 0;
  survey.forEach((facts, i) => {
    if (facts === undefined || i === index) return;
    for (const [runId, left] of Object.entries(facts.horizons)) {
      if (!current.has(runId)) longest = Math.max(longest, left);
    }
  });
  const horizons = longest > 0 ? Math.ceil(longest * (1 + rule.driftFactor)) + 2 : 0;
  return horizons < uptimeLeft
    ? { voteInMs: horizons, why: 'horizons' }
    : { voteInMs: uptimeLeft, why: 'uptime' };
}

/**
 * A node's fence floor is **complete** (at least every token phase 2 wrote on it, architecture.md §5.6)
 * when this fleet restored it in the node's current incarnation, or restored it before a restart
 * its data provably survived.
 */
export function floorComplete(facts: NodeFacts): boolean {
  return facts.fenced !== undefined && (facts.fenced === facts.runId || keptItsData(facts));
}

/** What a node's fence floor needs before it takes part in a fenced acquisition. */
export type FloorRestore =
  | { readonly kind: 'complete' }
  /** Raise it to `floor` (the highest of every node that answered), then it is complete. */
  | { readonly kind: 'restore'; readonly floor: number }
  /** Too few nodes answered to know the highest token issued: no fenced acquisition for now. */
  | { readonly kind: 'blocked' };

/**
 * Whether node `index` can take part in fenced acquisitions, from one survey. The last token T
 * was written by phase 2 on a quorum whose members all had complete floors; a member that kept
 * its data still has T. Reading every node, or all but fewer than q together with the incomplete
 * ones, meets such a member unless a quorum lost its floors between two restores (the assumption).
 * @throws RangeError when the node itself did not answer
 */
export function floorRestore(
  survey: readonly (NodeFacts | undefined)[],
  index: number,
  quorum: number,
): FloorRestore {
  const own = survey[index];
  if (own === undefined) throw new RangeError(`node ${index} did not answer the survey`);
  if (floorComplete(own)) return { kind: 'complete' };
  let unanswered = 0;
  let incomplete = 0;
  let highest = 0;
  for (const facts of survey) {
    if (facts === undefined) {
      unanswered++;
      continue;
    }
    if (!floorComplete(facts)) incomplete++;
    highest = Math.max(highest, facts.floor);
  }
  if (unanswered > 0 && unanswered + incomplete >= quorum) return { kind: 'blocked' };
  return { kind: 'restore', floor: highest };
}
