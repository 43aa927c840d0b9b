import type { MissingPermission } from '../errors';
import type { NodeHealthState, RedlockHealth } from '../inspection';
import type { RedisNode } from '../nodes/node';

/**
 * The words a lock manager says about its nodes: at start (one line, issue 25: a start with
 * every node unreachable must not look like one with a healthy fleet), in `health()` (why a
 * node that answers does not count), and about an even number of nodes.
 */

/**
 * One line for a lock manager's start: the nodes, the quorum, each node's state.
 * @example
 * startupLine(health) // '3 nodes, quorum 2: 127.0.0.1:6379 up, 127.0.0.1:6380 up, 127.0.0.1:6381 down'
 */
export function startupLine(health: RedlockHealth): string {
  const states = health.nodes.map((node) => `${node.node} ${nodeState(node)}`);
  const count = health.nodes.length;
  const verdict = health.up ? '' : ' — no quorum reachable';
  return `${count} node${count === 1 ? '' : 's'}, quorum ${health.quorum}: ${states.join(', ')}${verdict}`;
}

function nodeState(node: NodeHealthState): string {
  if (!node.up) return 'down';
  return node.voting === false ? 'up (not voting)' : 'up';
}

/**
 * The warning for an even number of nodes: one more node than the odd number below it, and no
 * more fault tolerance.
 * @example
 * evenNodesWarning(4) // '4 Redis nodes tolerate 1 failed node, as 3 nodes do: the 4th adds load, not fault tolerance; use an odd number of nodes'
 */
export function evenNodesWarning(count: number): string {
  const tolerated = count / 2 - 1;
  const failures =
    tolerated === 0 ? 'no failed node' : `${tolerated} failed node${tolerated === 1 ? '' : 's'}`;
  const fewer = count - 1;
  return (
    `${count} Redis nodes tolerate ${failures}, as ${fewer} node${fewer === 1 ? ' does' : 's do'}: ` +
    `the ${ordinal(count)} adds load, not fault tolerance; use an odd number of nodes`
  );
}

function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`;
}

/** What {@link notVotingReason} knows of a node. */
export interface VoterFacts {
  readonly nodes: readonly RedisNode[];
  /** Restarts are watched (`quarantine` not false). */
  readonly quarantine: boolean;
  readonly trustUnidentifiedNodes: boolean;
  /** What the permission check found missing on a node. */
  readonly missing: (index: number) => readonly MissingPermission[];
}

/**
 * Why the node at `index`, which answers, does not count toward a quorum now — so that
 * `health()` agrees with itself (issue 25: `up: false` beside every node `up: true`).
 */
export function notVotingReason(facts: VoterFacts, index: number): string {
  const node = facts.nodes[index];
  const missing = facts.missing(index);
  if (missing.length > 0) {
    return `its Redis user may not run ${missing.map((m) => m.what).join('; ')}: ${missing.map((m) => m.grant).join('; ')}`;
  }
  const runId = node.serverInfo?.runId;
  if (runId !== undefined) {
    const first = facts.nodes.findIndex((other) => other.serverInfo?.runId === runId);
    if (first !== index) {
      return `the same Redis server as ${facts.nodes[first].name} (same run_id): one server votes once`;
    }
  }
  if (node.serverInfo === undefined && node.identityError === 'refused') {
    return facts.trustUnidentifiedNodes
      ? 'its server does not say who it is (INFO refused)'
      : 'its Redis user may not run INFO, so a restart of it cannot be recognised: grant +info (or trustUnidentifiedNodes: true for nodes that keep their data)';
  }
  if (node.serverInfo === undefined) return 'its identity (INFO) has not been read yet';
  return facts.quarantine
    ? 'not admitted yet: it may have restarted without its data and waits until every lease it may have lost has ended (quarantine), or its standing is still being checked'
    : 'not counted';
}
