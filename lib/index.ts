// The public API of nestjs-redlock, and nothing else (DESIGN.md §4).

// Nest layer
export { RedlockModule } from './redlock.module';
export { RedlockService } from './redlock.service';
export type { RedlockModuleOptions } from './redlock-module-options';
export {
  REDLOCK_MODULE_OPTIONS,
  type RedlockModuleExtras,
  type RedlockModuleAsyncOptions,
  type RedlockOptionsFactory,
} from './redlock.module-definition';

// Framework-free core
export {
  Redlock,
  REDLOCK_DEFAULTS,
  IoredisNode,
  RedlockError,
  LockNotAcquiredError,
  LockLostError,
  RedlockConfigError,
  LockResourceError,
} from './core';
export type {
  Lock,
  LockSession,
  LockOptions,
  RedlockOptions,
  RedlockEvents,
  LockedRoutine,
  NodeOutcome,
  LockNotAcquiredReason,
  RedisNode,
  RedisNodeSpec,
  AcquireReply,
  Clock,
  RedlockLogger,
  Resources,
} from './core';
