// nestjs-redlock/adapters: the adapter contract — what a Redis client adapter implements and
// throws — and the adapters this package ships. An app that only locks never needs it; an app
// that brings another Redis client writes one transport against it (see ScriptedNode).
//
// Its own bundle, not a re-export of the main entry: the main entry stays the lock API. The
// errors below are branded (lib/core/errors.ts), so the core recognises them from either copy.

// The transport port: one per client, grouped by capability.
export type {
  RedisTransport,
  CommandTransport,
  CommandArg,
  ConnectionTransport,
  ConnectionEvent,
  PubSubTransport,
  SubscriberEvents,
  SubscriberConnection,
} from '../core/nodes/transport';
export { settleOn, type EventSource } from '../core/nodes/settle-on';
// The lock protocol over any transport.
export { ScriptedNode, type ScriptedNodeOptions } from '../core/protocol/scripted-node';

// The node port the core drives (a simulation or an in-memory fake implements it directly).
export {
  isRedisNode,
  type RedisNode,
  type AcquireReply,
  type ServerInfo,
  type NodeStanding,
  type StandingKeys,
  type KeyState,
  type NodeHealth,
  type QueueTicket,
  type HandOffRequest,
  type HandOffReply,
  type LeaveRequest,
  type PlainWait,
} from '../core/nodes/node';
export type { NodeAccess } from '../core/nodes/node';

// The errors an adapter throws.
export { NodeTimeoutError, KeyTypeConflict } from '../core/nodes/node';
export {
  DescribedNodeError,
  describeNodeError,
  type NodeProblem,
  type NodeErrorDescription,
  type ConnectionContext,
} from '../core/nodes/node-errors';

// The adapters this package ships.
export { IoredisNode, IoredisTransport, type RedisNodeSpec } from '../core/nodes/ioredis-node';
export {
  NodeRedisNode,
  NodeRedisTransport,
  type NodeRedisClient,
} from '../core/nodes/node-redis-node';
