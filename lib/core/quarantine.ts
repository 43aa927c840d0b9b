import type { NodeStanding } from './node';

/**
 * Client-enforced delayed restarts (DESIGN §5.7), the pure decision: how long a node that may
 * have lost keys (restarted without its data, or never admitted before) must wait before it
 * counts toward a quorum. The fleet's memory (membership.ts) supplies what each peer said.
 */

/** What one peer of the node said about itself (STANDING_SCRIPT), and whether it can be trusted. */
export interface PeerStanding extends NodeStanding {
  /**
   * The peer has kept its keys since it was admitted (its stamp is its current run_id) or
   * keeps them across crashes (durable): its horizon covers every lease granted on it.
   */
  readonly intact: boolean;
}

/** How long a node that may have lost keys waits, and whether the fleet could tell. */
export interface AdmissionWait {
  /** Ms to wait before it may vote. */
  readonly waitMs: number;
  /**
   * True when enough peers answered to know every lease the node may have lost; false when the
   * wait falls back on what this lock manager knows of leases (its own longest one).
   */
  readonly informed: boolean;
}

/**
 * How long the node must wait.
 *
 * Any lease the node may have lost was granted by a quorum of voters that included it, so by at
 * least `quorum − 1` of its peers, each of which recorded a horizon covering the lease before it
 * voted. The horizons read after the restart from **every** peer, or from `N − quorum + 1`
 * intact ones, include one of those (two such sets always meet) — unless that peer lost its data
 * too: a majority of the nodes losing their data within one horizon is the case left outside.
 * Horizons are on each peer's own clock (a remaining time, so clocks never need to agree); the
 * drift factor covers their rates differing from ours.
 *
 * When too few peers answer (a node down while another restarted), the fleet cannot tell, and
 * the node waits until it has been up for `fallbackMs` (the longest lease this lock manager knows
 * of, as a classic delayed restart would) besides every horizon that was read.
 */
export function admissionWait(
  peers: readonly PeerStanding[],
  peerCount: number,
  quorum: number,
  driftFactor: number,
  fallback: { readonly ageMs: number; readonly fallbackMs: number } = { ageMs: 0, fallbackMs: 0 },
): AdmissionWait {
  const intact = peers.filter((peer) => peer.intact).length;
  const needed = peerCount + 1 - quorum + 1;
  const longest = Math.max(0, ...peers.map((peer) => peer.horizonLeftMs));
  const horizons = longest > 0 ? Math.ceil(longest * (1 + driftFactor)) + 2 : 0;
  if (peers.length === peerCount || intact >= needed) return { waitMs: horizons, informed: true };
  const uptimeLeft = Math.ceil((fallback.fallbackMs - fallback.ageMs) * (1 + driftFactor));
  return { waitMs: Math.max(horizons, uptimeLeft), informed: false };
}
