// The framework-free core: usable without Nest.
export { Redlock, type RedlockEvents, type LockedRoutine } from './redlock';
export type { Lock } from './lock';
export type { LockSession } from './lock-session';
export {
  RedlockError,
  LockNotAcquiredError,
  LockLostError,
  RedlockConfigError,
  LockResourceError,
  type NodeOutcome,
  type LockNotAcquiredReason,
} from './errors';
export { REDLOCK_DEFAULTS, type RedlockOptions, type LockOptions } from './options';
export type { RedisNode, AcquireReply } from './node';
export { IoredisNode, type RedisNodeSpec } from './ioredis-node';
export type { Clock } from './clock';
export type { RedlockLogger } from './logger';
export type { Resources } from './resources';
