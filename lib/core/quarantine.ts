/**
 * Client-enforced delayed restarts (DESIGN §5.7), the pure decision. A Redis node that restarted
 * without its data may have lost keys of locks that are still held; counting it toward a quorum
 * before those locks' leases could have ended would let a second client in (the specification's
 * crash-recovery case). So a node counts only once it has been up for the quarantine.
 */

/** What is known of one node for the decision. */
export interface NodeAge {
  /**
   * How long the server has been up at least (ms), or `undefined` when unknown (INFO refused).
   * A lower bound: a node is admitted only once this passes the quarantine.
   */
  readonly ageMs: number | undefined;
  /** The server keeps its keys across a crash (`appendfsync always`): no quarantine needed. */
  readonly durable: boolean;
  /**
   * This client saw the node under another `run_id` before: a restart it witnessed, which may
   * have lost keys of locks it granted. Such a node is never let in by the young-fleet waiver.
   */
  readonly restartSeen?: boolean;
}

/**
 * Which nodes may vote, given their ages and the quarantine length:
 * - a node up for at least `quarantineMs` (by its lower bound), a durable node, and a node whose
 *   age is unknown vote (the last because nothing can be known: a refusal of INFO is reported
 *   once, elsewhere);
 * - a younger node does not, **unless every node of known age is younger**: a fleet that was
 *   just started (a demo, a test, a new deployment) has no older node whose keys could be lost,
 *   and quarantining all of it would only stop everyone from locking for a whole lease. A whole
 *   fleet restarting without persistence at once, or a node restarting while the whole fleet is
 *   younger than the quarantine (or than 2 s, the resolution of the ages), is therefore outside
 *   this guarantee — except for a restart this client witnessed (the node answered under
 *   another `run_id` before): that node is never waived in (a fault campaign let a second holder
 *   in through a node killed 1.7 s after its fleet started). (Waiving only the nodes
 *   that started with the oldest would close the second case, but it also shuts out nodes of a
 *   fleet whose members were started a few seconds apart, for a whole lease: not done.)
 */
export function votingNodes(nodes: readonly NodeAge[], quarantineMs: number): boolean[] {
  const known = nodes.filter((n) => n.ageMs !== undefined && !n.durable);
  const young = nodes.map((n) => n.ageMs !== undefined && !n.durable && n.ageMs < quarantineMs);
  // Ages are known to a second or two (INFO's whole seconds): with a quarantine shorter than
  // that, members of a fleet started a moment apart would look old and young at random, and
  // the young ones would be left out. The fleet counts as just started for at least that long.
  const waiverMs = Math.max(quarantineMs, UPTIME_RESOLUTION_MS);
  const allYoung = known.length > 0 && known.every((n) => n.ageMs! < waiverMs);
  return young.map((isYoung, i) => !isYoung || (allYoung && nodes[i].restartSeen !== true));
}

/** How coarsely a node's age is known from `uptime_in_seconds` (a lower bound 1-2 s under). */
const UPTIME_RESOLUTION_MS = 2_000;
