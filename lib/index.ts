// The public API of nestjs-redlock, and nothing else (docs/architecture.md §4).

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

// @Locked
export { Locked } from './decorators/locked.decorator';
export { CurrentLock } from './decorators/current-lock.decorator';
export { LockedInterceptor } from './interceptors/locked.interceptor';
export type { LockedContext } from './locked/locked-context';
export type { LockedOptions, LockedOnBusy } from './locked/locked-options';
export { LOCKED_METADATA, type LockedResource } from './locked/locked-metadata';
export {
  defaultLockedErrorMapper,
  type LockedErrorMapper,
  type LockedErrorContext,
  type LockedErrorStage,
  type LockedCallType,
} from './exceptions/locked-error-mapper';
export {
  LockedCallException,
  type LockErrorCode,
  type LockErrorPayload,
} from './exceptions/locked-call.exception';
export { LockedErrorFilter } from './exceptions/locked-error.filter';

// Framework-free core
export {
  Redlock,
  REDLOCK_DEFAULTS,
  IoredisNode,
  NodeRedisNode,
  RedlockError,
  LockNotAcquiredError,
  LockLostError,
  RedlockConfigError,
  LockResourceError,
  LockNotExtendedError,
  LockKeyConflictError,
  LockReentryError,
  RedlockPermissionError,
  monotonicClock,
} from './core';
export type {
  Lock,
  LockSession,
  LockOptions,
  RedlockOptions,
  RedlockTelemetryOptions,
  RedlockEvents,
  LockedRoutine,
  HoldWork,
  HoldSettings,
  SessionEnd,
  NodeOutcome,
  MissingPermission,
  LockNotAcquiredReason,
  RedisNode,
  RedisNodeSpec,
  NodeRedisClient,
  AcquireReply,
  ServerInfo,
  NodeStanding,
  StandingKeys,
  Clock,
  ClockTimer,
  RedlockLogger,
  Resources,
  AcquiredEvent,
  AttemptFailedEvent,
  ExtendedEvent,
  ReleasedEvent,
  NodeEvent,
  NodeQuarantinedEvent,
  LockInspection,
  NodeLockState,
  HeldLockInfo,
  RedlockHealth,
  NodeHealthState,
  KeyState,
  NodeHealth,
  QueueTicket,
  HandOffRequest,
  HandOffReply,
  LeaveRequest,
  PlainWait,
} from './core';
