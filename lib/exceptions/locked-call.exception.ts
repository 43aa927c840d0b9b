import { IntrinsicException } from '@nestjs/common';
import {
  LockKeyConflictError,
  LockLostError,
  LockNotAcquiredError,
  LockResourceError,
} from '../core';

/**
 * What a caller outside HTTP learns of a `@Locked` failure: the same three answers in every
 * transport (architecture.md §5.12) — `LOCK_BUSY` (another owner holds the lock; retry after
 * `retryAfterMs` when known), `LOCK_UNAVAILABLE` (a quorum of lock nodes cannot be reached),
 * `LOCK_LOST` (the lock was lost while the work ran; its effects may not have been exclusive) —
 * plus `LOCK_RESOURCE_INVALID` (a template value is missing or not a scalar) and
 * `LOCK_KEY_CONFLICT` (something else writes at the lock's keys).
 */
export type LockErrorCode =
  'LOCK_BUSY' | 'LOCK_UNAVAILABLE' | 'LOCK_LOST' | 'LOCK_RESOURCE_INVALID' | 'LOCK_KEY_CONFLICT';

/**
 * The body of an RPC error and a WebSocket `exception` event / ack, as Nest's `RpcException`
 * and `WsException` send an object. Never a resource name (it is built from user data) nor a
 * node address: those stay in the server's logs and in the exception's `cause`.
 *
 * @example { status: 'error', code: 'LOCK_BUSY', message: 'The resource is locked by another request; retry later', retryAfterMs: 2400 }
 */
export interface LockErrorPayload {
  readonly status: 'error';
  readonly code: LockErrorCode;
  readonly message: string;
  /** For `LOCK_BUSY`, when the holder's remaining lease is known. */
  readonly retryAfterMs?: number;
}

/**
 * The answer to a failed `@Locked` call outside HTTP (`rpc`, `ws`, `graphql`), made by the
 * default error mapper. Transport-neutral, so that no optional transport package is loaded:
 * - GraphQL: graphql-js turns it into the field's `GraphQLError`, copying `extensions`
 *   (`{ code, retryAfterMs? }`), so clients read `errors[0].extensions.code`;
 * - RPC and WebSocket: the module's `LockedErrorFilter` sends `payload` as an `RpcException`
 *   and a `WsException` would (the RPC error; the `exception` event, and the ack when the client
 *   asked for one).
 *
 * An `IntrinsicException`: Nest's exception handlers do not log it — a busy lock is not a
 * server error. The typed error is its `cause`, for your own filters and logs.
 */
export class LockedCallException extends IntrinsicException {
  /** What the caller receives (see {@link LockErrorPayload}). */
  readonly payload: LockErrorPayload;
  /** GraphQL error extensions: `{ code, retryAfterMs? }`. */
  readonly extensions: { readonly code: LockErrorCode; readonly retryAfterMs?: number };

  constructor(payload: LockErrorPayload, options?: ErrorOptions) {
    super(payload.message, options);
    this.name = 'LockedCallException';
    this.payload = payload;
    this.extensions =
      payload.retryAfterMs === undefined
        ? { code: payload.code }
        : { code: payload.code, retryAfterMs: payload.retryAfterMs };
  }
}

/** The generic messages: what happened, never which resource or which node. */
const MESSAGES: Readonly<Record<LockErrorCode, string>> = {
  LOCK_BUSY: 'The resource is locked by another request; retry later',
  LOCK_UNAVAILABLE: 'The lock service is unavailable; retry later',
  LOCK_LOST: 'The lock was lost while the handler ran; its effects may not have been exclusive',
  LOCK_RESOURCE_INVALID: 'The lock resource could not be named from the request',
  LOCK_KEY_CONFLICT: 'The lock keys conflict with other data in Redis',
};

/** The generic message of a lock error code: what happened, never which resource or node. */
export function lockErrorMessage(code: LockErrorCode): string {
  return MESSAGES[code];
}

/** The {@link LockErrorPayload} of a typed lock error, or `undefined` for any other error. */
export function lockErrorPayload(error: unknown): LockErrorPayload | undefined {
  let code: LockErrorCode;
  let retryAfterMs: number | undefined;
  if (error instanceof LockNotAcquiredError) {
    code = error.reason === 'held' ? 'LOCK_BUSY' : 'LOCK_UNAVAILABLE';
    // Busy: when the blocking lease ends; unavailable: when restarted nodes count again.
    if (
      typeof error.retryAfterMs === 'number' &&
      Number.isFinite(error.retryAfterMs) &&
      error.retryAfterMs >= 0
    ) {
      retryAfterMs = Math.ceil(error.retryAfterMs);
    }
  } else if (error instanceof LockLostError) code = 'LOCK_LOST';
  else if (error instanceof LockResourceError) code = 'LOCK_RESOURCE_INVALID';
  else if (error instanceof LockKeyConflictError) code = 'LOCK_KEY_CONFLICT';
  else return undefined;
  const payload: LockErrorPayload = { status: 'error', code, message: MESSAGES[code] };
  return retryAfterMs === undefined ? payload : { ...payload, retryAfterMs };
}
