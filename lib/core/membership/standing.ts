import { createHash } from 'node:crypto';
import type { NodeStanding, RedisNode, ServerInfo, StandingKeys } from '../nodes/node';
import {
  settledAfterMs,
  type Admission,
  type NodeFacts,
  type RestartRule,
} from '../quorum/quarantine';

/**
 * The pure parts of restart detection (membership.ts): the keys it keeps on a node, a node's
 * facts read from its standing, whether a member votes, how far a recorded horizon covers, and
 * the line a quarantine is logged with. Apart from the state machine so that the exhaustive
 * search (test/search) drives the same functions.
 */

/**
 * Horizons are recorded this many ttls ahead, so one record serves many leases (about one extra
 * command per node per ttl).
 */
const HORIZON_TTLS = 2;

/** The warning logged when restart detection keeps node `name` out for `leftMs` at most. */
export function quarantineLine(
  name: string,
  why: Admission['why'],
  leftMs: number,
  rule: RestartRule,
): string {
  const ms = Math.ceil(leftMs);
  const start = `Redis node ${name} restarted without proof that its data survived, so it may have lost keys of locks still held: it does not count toward a quorum for up to ${ms} ms`;
  if (why === 'horizons') return `${start}, until the leases its peers recorded have ended`;
  const settled = `${start}, until it has been up for maxTtl (${settledAfterMs(rule)} ms with drift)`;
  return why === 'uptime'
    ? `${settled}: the leases its peers recorded last longer`
    : `${settled}: too few of its peers answered to bound its leases`;
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
