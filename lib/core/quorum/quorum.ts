/**
 * The Redlock arithmetic, pure and unit-tested on its own.
 */

/** Votes needed out of `nodeCount`: a strict majority, so two holders can never both have one. */
export function quorumOf(nodeCount: number): number {
  return Math.floor(nodeCount / 2) + 1;
}

/**
 * The clock-drift allowance for a lease of `ttl` ms: `ttl * driftFactor + 2`. The factor bounds
 * how much faster a node's clock may run than ours over the lease; the 2 ms cover Redis's
 * millisecond expiry precision (the specification's figures).
 */
export function driftOf(ttl: number, driftFactor: number): number {
  return ttl * driftFactor + 2;
}

/**
 * When a lease of `ttl` obtained by a round that started at `start` stops being reliable:
 * `start + ttl − drift`, so the validity left at any moment is this minus the time then —
 * `ttl − elapsed − drift`. Measured from *before* the first request was sent, since every node
 * started its countdown after that point.
 */
export function validUntil(start: number, ttl: number, driftFactor: number): number {
  return start + ttl - driftOf(ttl, driftFactor);
}

/**
 * True once the votes so far settle a quorum vote, whatever the remaining nodes say:
 * `yes` reached the quorum, or so many said no that the quorum is out of reach.
 * Deciding here (not after every node answered) is what keeps one slow node from slowing
 * every lock operation down.
 */
export function isDecided(yes: number, no: number, nodeCount: number, quorum: number): boolean {
  return yes >= quorum || nodeCount - no < quorum;
}
