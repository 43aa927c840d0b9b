import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import {
  INTERCEPTORS_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  RESPONSE_PASSTHROUGH_METADATA,
  ROUTE_ARGS_METADATA,
  SSE_METADATA,
} from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';
import { isObservable, Observable, type Subscription } from 'rxjs';
import { LockLostError, type Lock, type LockSession } from '../core';
import { globalSingleton } from '../core/global-singleton';
import { mapLockedError, type LockedErrorStage } from '../exceptions/locked-error-mapper';
import type { RedlockModuleOptions } from '../redlock-module-options';
import type { RedlockService } from '../redlock.service';
import { boundArguments } from './bound-arguments';
import { CallSignal } from './call-signal';
import {
  ClientGoneError,
  httpAnswered,
  httpClientGone,
  httpEnds,
  watchClientGoneLater,
} from './hold-client-gone';
import { holdForCall, type CallFailures } from './hold-for-call';
import { lockedContextOf } from './locked-context';
import type { LockedMetadata } from './locked-metadata';
import type { AnyMethod } from './locked-scope';
import { responseHeaderSetter } from './response-header';
import { holdWhileSent, streamOf } from './stream-hold';

/**
 * The execution context of an HTTP route call, passed to a prepared `@Locked` route handler as
 * one more argument (see {@link prepareLockedRoute}); the method wrapper takes it off before the
 * method sees its arguments. Branded with a registered symbol rather than a class: the ESM and
 * CommonJS builds of this package, loaded side by side, must recognise each other's.
 */
export interface RouteCallContext {
  readonly [ROUTE_CALL]: ExecutionContext;
}

const ROUTE_CALL = Symbol.for('nestjs-redlock: the execution context of a @Locked route call');

/** One per process, for the same reason. */
const routeCallContext = globalSingleton('routeCallContext@1', () =>
  createParamDecorator((_data: unknown, context: ExecutionContext): RouteCallContext => ({
    [ROUTE_CALL]: context,
  })),
);

/** The call's context when `value` is the argument {@link prepareLockedRoute} adds. */
export function routeCallContextOf(value: unknown): ExecutionContext | undefined {
  return typeof value === 'object' && value !== null
    ? (value as Partial<RouteCallContext>)[ROUTE_CALL]
    : undefined;
}

/** Routes prepared already (two applications of one process share the classes). */
const prepared = globalSingleton('lockedRoutes@1', () => new WeakSet<object>());

/**
 * Makes a `@Locked` HTTP route handler lock without the interceptor (issue 26: Nest's
 * interceptor pipeline alone costs more per request than the lock's whole Nest layer may): its
 * `LockedInterceptor` is taken off the method and one more argument, the call's execution
 * context, is added after its own, so the method wrapper holds the call itself (see
 * {@link lockRouteCall}). Done at bootstrap, before Nest builds its routes, for what the
 * wrapper does alike: a route (`@Get`, `@Post`…) of a controller that is no `@Sse` stream and
 * does not write its response itself (`@Res()` / `@Next()` without `passthrough`). Everything
 * else — message handlers, gateways, resolvers, those routes — keeps the interceptor.
 * @returns whether the route was prepared (now or before)
 */
export function prepareLockedRoute(
  type: object,
  prototype: object,
  name: string | symbol,
  interceptor: unknown,
): boolean {
  const method = (prototype as Record<string | symbol, unknown>)[name];
  if (typeof method !== 'function') return false;
  if (prepared.has(method)) return true;
  if (Reflect.getMetadata(PATH_METADATA, type) === undefined) return false; // not a controller
  if (Reflect.getMetadata(METHOD_METADATA, method) === undefined) return false; // not a route
  if (Reflect.getMetadata(SSE_METADATA, method) === true) return false;
  const interceptors: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, method) ?? [];
  if (!interceptors.includes(interceptor)) return false;
  const owner = (prototype as { constructor: object }).constructor;
  const args: Record<string, { index: number }> =
    Reflect.getMetadata(ROUTE_ARGS_METADATA, owner, name) ?? {};
  const keys = Object.keys(args);
  const writesItself = keys.some((key) => {
    const kind = Number(key.split(':')[0]);
    return kind === RouteParamtypes.RESPONSE || kind === RouteParamtypes.NEXT;
  });
  if (writesItself && Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, owner, name) !== true) {
    return false;
  }
  const declared: unknown[] = Reflect.getMetadata('design:paramtypes', prototype, name) ?? [];
  const index = Math.max(
    (method as AnyMethod).length,
    declared.length,
    ...keys.map((key) => args[key].index + 1),
  );
  Reflect.defineMetadata(
    INTERCEPTORS_METADATA,
    interceptors.filter((entry) => entry !== interceptor),
    method,
  );
  routeCallContext()(prototype, name, index);
  prepared.add(method);
  return true;
}

/** Where a route call stands, between the method wrapper and the hold. */
class RouteCall implements CallFailures {
  declare resources?: readonly string[];
  /** The loss the core reported, to tell it from the method's own error. */
  declare loss?: LockLostError;

  constructor(
    readonly metadata: LockedMetadata,
    readonly context: ExecutionContext,
    readonly waiting: CallSignal,
    readonly moduleOptions: RedlockModuleOptions | undefined,
  ) {}

  notAcquired(error: unknown): unknown {
    const reason: unknown = this.waiting.reason;
    if (reason instanceof ClientGoneError) return reason;
    return this.map(error, 'acquire');
  }

  lost(error: LockLostError): unknown {
    this.loss = error;
    return error;
  }

  map(error: unknown, stage: LockedErrorStage): unknown {
    try {
      return mapLockedError(
        error,
        {
          type: 'http',
          stage,
          resources: stage === 'resolve' ? undefined : this.resources,
          executionContext: this.context,
          setHeader: responseHeaderSetter(this.context.getArgByIndex(1)),
        },
        [this.metadata.mapError, this.moduleOptions?.mapLockedError],
      );
    } catch (thrown) {
      return thrown;
    }
  }
}

/**
 * One call of a prepared `@Locked` route (see {@link prepareLockedRoute}), as the interceptor
 * would hold it (DESIGN §5.10), through the core's hold primitive:
 * - nobody to answer (an outer interceptor's timeout answered while pipes ran; the client
 *   left): the method is not run;
 * - the lock is named from what the handler receives (after guards and pipes), a client that
 *   goes away aborts the wait;
 * - a single value is answered after the release, so that a lock lost meanwhile fails the call
 *   (HTTP 500) instead of a success going out first; the method's own error wins;
 * - an Observable is subscribed in the lock's scope and held until it finalizes (completion,
 *   error, or its subscriber leaving), and completes only after the release;
 * - a streamed body (`StreamableFile`, a `Readable`) is sent under the lock, which is released
 *   once it has been sent, failed, or its client went away.
 */
export function lockRouteCall(
  redlock: RedlockService,
  moduleOptions: RedlockModuleOptions | undefined,
  method: AnyMethod,
  metadata: LockedMetadata,
  self: unknown,
  args: unknown[],
  context: ExecutionContext,
): Promise<unknown> {
  const waiting = new CallSignal();
  const call = new RouteCall(metadata, context, waiting, moduleOptions);
  const ends = httpEnds(context);
  if (httpAnswered(ends)) return Promise.reject(new ClientGoneError(metadata.where));
  let resources: string[];
  try {
    resources = metadata.resolve(
      lockedContextOf(context),
      boundArguments(context, metadata.key, args),
    );
  } catch (error) {
    return Promise.reject(call.map(error, 'resolve'));
  }
  call.resources = resources;
  return new Promise<unknown>((resolve, reject) => {
    const stopWatching = watchClientGoneLater(context, () =>
      waiting.abort(new ClientGoneError(metadata.where)),
    );
    /** The answer went before the release (an Observable, a stream): the hold goes on. */
    let answeredEarly = false;
    let ended: ((lost: LockLostError | undefined) => void) | undefined;
    holdForCall(
      redlock,
      resources,
      metadata,
      waiting.signal,
      (lock, session) => {
        stopWatching();
        // Also a connection closed before the watch began (watchClientGoneLater).
        if (waiting.aborted || httpAnswered(ends) || httpClientGone(ends)) {
          throw new ClientGoneError(metadata.where);
        }
        // In the hold's scope only (see LockedCall.invoke: no lockedScope on this path).
        const result = method.apply(self, withLock(args, metadata, lock));
        return Promise.resolve(result).then((value) => {
          if (isObservable(value)) {
            answeredEarly = true;
            return new Promise<void>((done) => {
              resolve(
                heldObservable(value, lock, session, done, call, (settle) => (ended = settle)),
              );
            });
          }
          const stream = streamOf(value);
          if (stream === undefined) return value;
          if (!lock.isValid()) {
            // Lost while the handler ran: nothing of it is sent.
            stream.destroy();
            throw call.map(new LockLostError(lock.resources, 'its validity ran out'), 'hold');
          }
          answeredEarly = true;
          resolve(value);
          // Nest reads the body once the call answered: the lock is kept until it is sent.
          return holdWhileSent(context, [stream], false, lock.signal);
        });
      },
      call,
    ).then(
      (value) => {
        stopWatching();
        if (answeredEarly) return ended?.(undefined);
        resolve(value); // the value, or undefined when skipped (onBusy: 'skip')
      },
      (error: unknown) => {
        stopWatching();
        const lost = error === call.loss;
        if (answeredEarly) return ended?.(lost ? (error as LockLostError) : undefined);
        reject(lost ? call.map(error, 'hold') : error);
      },
    );
  });
}

/**
 * An Observable result, held: subscribed in the lock's scope; `done` ends the hold when it
 * finalizes (or its subscriber leaves), and it completes (or fails) only once the lock has been
 * released — with the lost-lock error when the lock was lost meanwhile.
 */
function heldObservable(
  source: Observable<unknown>,
  lock: Lock,
  session: LockSession,
  done: () => void,
  call: RouteCall,
  onEnd: (settle: (lost: LockLostError | undefined) => void) => void,
): Observable<unknown> {
  return new Observable<unknown>((subscriber) => {
    let finished = false;
    const finish = (then: (lost: LockLostError | undefined) => void) => {
      finished = true;
      onEnd(then);
      done();
    };
    const subscription: Subscription = session.run(() =>
      source.subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) => finish(() => subscriber.error(error)),
        complete: () =>
          finish((lost) =>
            lost ? subscriber.error(call.map(lost, 'hold')) : subscriber.complete(),
          ),
      }),
    );
    return () => {
      subscription.unsubscribe();
      if (!finished) finish(() => undefined);
    };
  });
}

/** The arguments, with the lock in the positions of `@CurrentLock()` parameters. */
export function withLock(args: unknown[], metadata: LockedMetadata, lock: Lock): unknown[] {
  const positions = metadata.currentLockParams;
  if (positions.length === 0) return args;
  const copy = [...args];
  for (const index of positions) copy[index] = lock;
  return copy;
}
