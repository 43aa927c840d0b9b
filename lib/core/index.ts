// The framework-free core: usable without Nest.
export {
  Redlock,
  type RedlockEvents,
  type LockedRoutine,
  type HoldSettings,
  type HoldWork,
} from './redlock';
export type { Lock } from './lease/lock';
export type { LockSession, SessionEnd } from './lease/lock-session';
export {
  RedlockError,
  LockNotAcquiredError,
  LockLostError,
  RedlockConfigError,
  LockResourceError,
  LockNotExtendedError,
  LockKeyConflictError,
  LockReentryError,
  RedlockPermissionError,
  type MissingPermission,
  type NodeOutcome,
  type LockNotAcquiredReason,
} from './errors';
export { REDLOCK_DEFAULTS, type RedlockOptions, type LockOptions } from './options';
export type { RedlockTelemetryOptions } from './observability/telemetry';
export {
  KeyTypeConflict,
  type RedisNode,
  type AcquireReply,
  type ServerInfo,
  type NodeStanding,
  type StandingKeys,
  type KeyState,
  type NodeHealth,
  type QueueTicket,
  type HandOffRequest,
  type LeaveRequest,
  type PlainWait,
  type HandOffReply,
} from './nodes/node';
export { IoredisNode, type RedisNodeSpec } from './nodes/ioredis-node';
export { NodeRedisNode, type NodeRedisClient } from './nodes/node-redis-node';
export { monotonicClock, type Clock, type ClockTimer } from './clock';
export type { RedlockLogger } from './observability/logger';
export type { Resources } from './resources';
export type {
  AcquiredEvent,
  AttemptFailedEvent,
  ExtendedEvent,
  ReleasedEvent,
  NodeEvent,
  NodeQuarantinedEvent,
} from './observability/events';
export type {
  LockInspection,
  NodeLockState,
  HeldLockInfo,
  RedlockHealth,
  NodeHealthState,
} from './inspection';
