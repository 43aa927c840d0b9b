import { fanOut } from '../nodes/fan-out';
import {
  nodeLockState,
  type LockInspection,
  type NodeHealthState,
  type NodeLockState,
  type RedlockHealth,
} from '../inspection';
import { DescribedNodeError, describeNodeError } from '../nodes/node-errors';
import { normalizeResources } from '../resources';
import { notVotingReason } from '../observability/startup-report';
import type { ManagerParts } from './parts';

/**
 * What every node says about `resource` now, and whether this process holds it: the body of
 * `Redlock.inspect()`. For operators; never on the lock path, never reveals an owner value.
 */
export async function inspectResource(
  parts: ManagerParts,
  resource: string,
): Promise<LockInspection> {
  const { nodes, options, clock, held } = parts;
  const [name] = normalizeResources(resource, options.maxResourceLength);
  const key = options.keyPrefix + name;
  const replies = await fanOut(
    nodes,
    (node) => {
      if (node.inspect === undefined)
        throw new DescribedNodeError('error', 'this node adapter cannot inspect keys');
      return node.inspect(key);
    },
    { clock, timeoutMs: options.nodeTimeout },
  );
  const states = replies.map((reply, i): NodeLockState => {
    const node = nodes[i].name;
    if (reply.kind === 'ok') return nodeLockState(node, reply.value);
    const error = reply.kind === 'error' ? errorText(reply.error) : 'no answer in time';
    return { node, state: 'unknown', error };
  });
  return { resource: name, nodes: states, heldHere: held.covers(name) };
}

/**
 * Pings every node (bounded by `nodeTimeout`): up when a quorum answers and may vote, with
 * each node's state and latency, and why a node that answers does not count. The body of
 * `Redlock.health()`.
 */
export async function nodeHealth(parts: ManagerParts): Promise<RedlockHealth> {
  const { nodes, options, clock, membership, access, quorum } = parts;
  // A node whose standing is still being checked (just reconnected) is reported as decided.
  await membership.settle(options.nodeTimeout * 2);
  const started = nodes.map(() => 0);
  const replies = await fanOut(
    nodes,
    (node, i) => {
      if (node.ping === undefined)
        throw new DescribedNodeError('error', 'this node adapter cannot ping');
      started[i] = clock.now();
      return node.ping().then(() => clock.now() - started[i]);
    },
    { clock, timeoutMs: options.nodeTimeout },
  );
  const voters = membership.voters();
  const refused = (index: number) => access.missingOn(index).length > 0;
  const facts = {
    nodes,
    quarantine: membership.enabled,
    trustUnidentifiedNodes: options.trustUnidentifiedNodes,
    missing: (index: number) => access.missingOn(index),
  };
  const states = replies.map((reply, i): NodeHealthState => {
    const node = nodes[i].name;
    if (reply.kind === 'ok') {
      // Each entry says why it does not count, so that `up` agrees with the nodes listed.
      return voters[i] && !refused(i)
        ? { node, up: true, latencyMs: reply.value, voting: true }
        : {
            node,
            up: true,
            latencyMs: reply.value,
            voting: false,
            reason: notVotingReason(facts, i),
          };
    }
    const error = reply.kind === 'error' ? errorText(reply.error) : 'no answer within nodeTimeout';
    return { node, up: false, error, voting: false };
  });
  const up = states.filter((n) => n.voting).length >= quorum;
  return { up, quorum, nodes: states };
}

/** A node's error for `health()` and `inspect()`: the library's words first (node-errors.ts). */
function errorText(error: unknown): string {
  return describeNodeError(error).text;
}
