import {
  BadRequestException,
  ConflictException,
  InternalServerErrorException,
  ServiceUnavailableException,
  type ExecutionContext,
} from '@nestjs/common';
import {
  LockKeyConflictError,
  LockLostError,
  LockNotAcquiredError,
  LockResourceError,
} from '../core';
import {
  LockedCallException,
  lockErrorMessage,
  lockErrorPayload,
  type LockErrorCode,
} from './locked-call.exception';

/**
 * When a `@Locked` error happened:
 * - `resolve`: naming the resources (a template value or the resource function);
 * - `acquire`: taking the lock (held by someone else, nodes unavailable, bad option);
 * - `hold`: the handler succeeded but the lock was lost while it ran.
 *
 * The handler's own errors never reach a mapper: they pass through untouched.
 */
export type LockedErrorStage = 'resolve' | 'acquire' | 'hold';

/**
 * Where the locked call came from: Nest's context types (`http`, `rpc`, `ws`, `graphql`, …),
 * or `provider` for a direct call to a `@Locked` provider method.
 */
export type LockedCallType =
  'http' | 'rpc' | 'ws' | 'graphql' | 'provider' | (string & Record<never, never>);

/** What a {@link LockedErrorMapper} knows besides the error. */
export interface LockedErrorContext {
  /** Where the call came from; only `http` gets HTTP exceptions from the default mapper. */
  readonly type: LockedCallType;
  readonly stage: LockedErrorStage;
  /** The resources, once resolved (`undefined` in the `resolve` stage). */
  readonly resources?: readonly string[];
  /** The handler's execution context; `undefined` for a provider method. */
  readonly executionContext?: ExecutionContext;
  /**
   * Sets a header on the HTTP response (Express `setHeader` / Fastify `header`); present only
   * over HTTP. The default mapper uses it for `Retry-After`.
   */
  readonly setHeader?: (name: string, value: string) => void;
}

/**
 * Turns a `@Locked` error into what should be thrown instead. Return (or throw) the
 * replacement, or `undefined` to fall through to the next mapper: the decorator's
 * `mapError`, then the module's `mapLockedError`, then {@link defaultLockedErrorMapper}.
 * A mapper decides what is thrown, never whether: the handler does not run without the lock.
 *
 * @example
 * // 423 Locked instead of 409, keeping the default for everything else
 * mapError: (error, ctx) =>
 *   error instanceof LockNotAcquiredError && error.reason === 'held' && ctx.type === 'http'
 *     ? new HttpException('Locked', HttpStatus.LOCKED)
 *     : undefined
 *
 * @example
 * // RPC: typed errors become RpcExceptions
 * mapLockedError: (error, ctx) => (ctx.type === 'rpc' ? new RpcException(String(error)) : undefined)
 */
export type LockedErrorMapper = (error: unknown, context: LockedErrorContext) => unknown;

/** `Retry-After` takes whole seconds; rounding up never invites a retry before the lease ends. */
export function retryAfterSeconds(retryAfterMs: number | undefined): number | undefined {
  if (typeof retryAfterMs !== 'number' || !Number.isFinite(retryAfterMs) || retryAfterMs < 0) {
    return undefined;
  }
  return Math.ceil(retryAfterMs / 1000);
}

/**
 * The default mapping. Over HTTP:
 * - `LockNotAcquiredError` `held` → 409 Conflict, with `Retry-After` (seconds, rounded up)
 *   when the blocking lease is known — "try again later" is the client's right move;
 * - `LockNotAcquiredError` `unavailable` → 503 Service Unavailable — our infrastructure, not
 *   the client, is at fault — with `Retry-After` when it is known when a quorum will count
 *   again (restarted nodes waiting out the leases they may have lost);
 * - `LockResourceError` → 400 Bad Request — over HTTP the resources are named from the
 *   request, so a missing or non-scalar value is the client's;
 * - `LockLostError` (stage `hold`) → 500 Internal Server Error: the handler ran, but its
 *   effects may not have been exclusive;
 * - `LockKeyConflictError` → 500: a non-string value sits at a lock key (WRONGTYPE), a data or
 *   configuration conflict on our side, neither the client's fault nor an outage;
 * - anything else is returned as it is.
 *
 * Bodies are generic: lock keys, owner values and node addresses stay on the server (the
 * original error is the exception's `cause`).
 *
 * In RPC, WebSocket and GraphQL handlers the same errors become a {@link LockedCallException}
 * with `code` `LOCK_BUSY` / `LOCK_UNAVAILABLE` / `LOCK_LOST` (and `LOCK_RESOURCE_INVALID`,
 * `LOCK_KEY_CONFLICT`) and `retryAfterMs` when known: an `RpcException`-shaped error, a
 * `WsException`-shaped `exception` event plus the ack, a `GraphQLError` with
 * `extensions.code`. A direct call of a `@Locked` provider method (`provider`) keeps the typed
 * error: the caller's code may handle it, and the module's `LockedErrorFilter` answers for it
 * in whatever transport it reaches (409 / 503 over HTTP, the codes elsewhere).
 */
export function defaultLockedErrorMapper(error: unknown, context: LockedErrorContext): unknown {
  if (context.type === 'rpc' || context.type === 'ws' || context.type === 'graphql') {
    const payload = lockErrorPayload(error);
    return payload === undefined ? error : new LockedCallException(payload, { cause: error });
  }
  if (context.type !== 'http') return error;
  if (error instanceof LockNotAcquiredError) {
    if (error.reason === 'held') {
      const seconds = retryAfterSeconds(error.retryAfterMs);
      if (seconds !== undefined) context.setHeader?.('Retry-After', String(seconds));
      return new ConflictException(httpBody(409, 'Conflict', 'LOCK_BUSY'), { cause: error });
    }
    const seconds = retryAfterSeconds(error.retryAfterMs);
    if (seconds !== undefined) context.setHeader?.('Retry-After', String(seconds));
    return new ServiceUnavailableException(
      httpBody(503, 'Service Unavailable', 'LOCK_UNAVAILABLE'),
      { cause: error },
    );
  }
  if (error instanceof LockResourceError) {
    return new BadRequestException(httpBody(400, 'Bad Request', 'LOCK_RESOURCE_INVALID'), {
      cause: error,
    });
  }
  if (error instanceof LockKeyConflictError) {
    return new InternalServerErrorException(
      httpBody(500, 'Internal Server Error', 'LOCK_KEY_CONFLICT'),
      { cause: error },
    );
  }
  if (error instanceof LockLostError) {
    return new InternalServerErrorException(httpBody(500, 'Internal Server Error', 'LOCK_LOST'), {
      cause: error,
    });
  }
  return error;
}

/**
 * The JSON body of a lock error over HTTP, spelt out rather than left to the HTTP exception's
 * defaults, so that every Nest major answers the same bytes (`{ statusCode, error, message }`,
 * the shape of Nest's own exceptions): the message is the transport-neutral one of
 * {@link lockErrorMessage} — no resource, template, option or node.
 */
function httpBody(
  statusCode: number,
  error: string,
  code: LockErrorCode,
): { statusCode: number; error: string; message: string } {
  return { statusCode, error, message: lockErrorMessage(code) };
}

/**
 * Runs the mappers in order — most specific first — and returns what the first one that does
 * not return `undefined` gives; the default mapper always answers.
 */
export function mapLockedError(
  error: unknown,
  context: LockedErrorContext,
  mappers: readonly (LockedErrorMapper | undefined)[],
): unknown {
  for (const mapper of mappers) {
    if (mapper === undefined) continue;
    const mapped = mapper(error, context);
    if (mapped !== undefined) return mapped;
  }
  return defaultLockedErrorMapper(error, context);
}
