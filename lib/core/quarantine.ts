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
  /**
   * How long it may have been up at most (ms; `ageMs` when absent). The waiver for an all-young
   * fleet is the unsafe direction, so it is decided on this upper bound.
   */
  readonly maxAgeMs?: number;
  /** The server keeps its keys across a crash (`appendfsync always`): no quarantine needed. */
  readonly durable: boolean;
}

/**
 * Which nodes may vote, given their ages and the quarantine length:
 * - a node up for at least `quarantineMs` (by its lower bound), a durable node, and a node whose
 *   age is unknown vote (the last because nothing can be known: a refusal of INFO is reported
 *   once, elsewhere);
 * - a younger node does not, **unless no node is known to be past the quarantine and this one
 *   may be as old as the oldest**: a fleet that was just started (a demo, a test, a new
 *   deployment) has no older node whose keys could be lost, and quarantining all of it would
 *   only stop everyone from locking for a whole lease. A node that surely started later than the
 *   oldest (its upper bound below the oldest's lower bound) restarted after the fleet came up
 *   and stays out. A whole fleet restarting without persistence at once, or a node restarting
 *   within the uptime resolution (about 2 s) of the fleet's start, is outside this guarantee.
 */
export function votingNodes(nodes: readonly NodeAge[], quarantineMs: number): boolean[] {
  const known = nodes.filter((n) => n.ageMs !== undefined && !n.durable);
  const oldest = Math.max(...known.map((n) => n.ageMs!));
  const fresh = known.length > 0 && oldest < quarantineMs;
  return nodes.map((n) => {
    if (n.ageMs === undefined || n.durable || n.ageMs >= quarantineMs) return true;
    // Without an upper bound (an adapter that reads no uptime range) it may be as old as any.
    return fresh && (n.maxAgeMs ?? Infinity) >= oldest;
  });
}
