import {
  Inject,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Observable, type Subscription } from 'rxjs';
import type { Lock, LockSession } from '../core';
import {
  mapLockedError,
  type LockedErrorContext,
  type LockedErrorStage,
} from '../exceptions/locked-error-mapper';
import { lockedContextOf } from '../locked/locked-context';
import { LOCKED_METADATA, type LockedMetadata } from '../locked/locked-metadata';
import { lockedScope } from '../locked/locked-scope';
import { responseHeaderSetter } from '../locked/response-header';
import type { RedlockModuleOptions } from '../redlock-module-options';
import { REDLOCK_MODULE_OPTIONS } from '../redlock.module-definition';
import { RedlockService } from '../redlock.service';

/**
 * Holds the lock of a `@Locked` handler around the handler's whole execution. `@Locked` applies
 * it; handlers without `@Locked` pass straight through, so registering it globally too is
 * harmless (the lock is still taken once).
 *
 * Per call: names the resources from the request (or payload), acquires, then runs the
 * handler — with its pipes and parameter decorators, which Nest runs on subscription — inside
 * the lock's async scope, so `RedlockService.currentLock()` and `@CurrentLock()` see the lock
 * and it is auto-extended. The lock is released when the handler's result settles: a value, a
 * Promise, or an Observable (held until it completes, errors or is unsubscribed); the result
 * completes only after the release, so the next holder sees the handler's writes. Fail closed:
 * the handler never runs without the lock.
 *
 * Errors: the handler's own pass through untouched. Lock errors go through the decorator's
 * `mapError`, the module's `mapLockedError`, then {@link defaultLockedErrorMapper}. A lock
 * lost while the handler ran fails a successful call with `LockLostError` (HTTP 500); a
 * failed handler keeps its own error.
 *
 * @example
 * // Usually applied by @Locked. Registered globally it only acts on @Locked handlers,
 * // and still takes their lock once:
 * providers: [{ provide: APP_INTERCEPTOR, useClass: LockedInterceptor }]
 */
@Injectable()
export class LockedInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly redlock: RedlockService,
    @Inject(REDLOCK_MODULE_OPTIONS) private readonly moduleOptions: RedlockModuleOptions,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const metadata = this.reflector.get<LockedMetadata | undefined>(
      LOCKED_METADATA,
      context.getHandler(),
    );
    if (metadata === undefined) return next.handle();
    // Another LockedInterceptor already holds this handler's lock for this very call.
    if (lockedScope.getStore()?.pending === metadata) return next.handle();

    return new Observable<unknown>((subscriber) => {
      const cancel = new AbortController();
      let session: LockSession | undefined;
      let inner: Subscription | undefined;
      const fail = (error: unknown, stage: LockedErrorStage, resources?: readonly string[]) => {
        let mapped: unknown;
        try {
          mapped = this.mapError(error, metadata, context, stage, resources);
        } catch (thrown) {
          mapped = thrown;
        }
        subscriber.error(mapped);
      };

      const run = async () => {
        let resources: string[];
        try {
          resources = metadata.resolve(lockedContextOf(context));
        } catch (error) {
          return fail(error, 'resolve');
        }
        let lock: Lock;
        try {
          lock = await this.redlock.acquire(resources, {
            ...metadata.lockOptions,
            signal: cancel.signal,
          });
        } catch (error) {
          // Unsubscribed while waiting: nobody is listening, the abort is not an error.
          if (!subscriber.closed) fail(error, 'acquire', resources);
          return;
        }
        if (subscriber.closed) {
          await lock.release();
          return;
        }
        const held = this.redlock.redlock.session(lock, metadata.lockOptions);
        session = held;
        // Nest binds the handler's async context when handle() is called, so handle() —
        // not only subscribe() — must happen inside the lock's scope.
        held.run(() =>
          lockedScope.run({ lock, pending: metadata }, () => {
            inner = next.handle().subscribe({
              next: (value) => subscriber.next(value),
              // The handler's own error wins, also over a lost lock: it says more.
              error: (error: unknown) => void held.end().then(() => subscriber.error(error)),
              complete: () =>
                void held.end().then((lost) => {
                  if (lost) fail(lost, 'hold', resources);
                  else subscriber.complete();
                }),
            });
          }),
        );
      };
      run().catch(async (error: unknown) => {
        await session?.end();
        subscriber.error(error);
      });

      return () => {
        cancel.abort();
        inner?.unsubscribe();
        void session?.end();
      };
    });
  }

  private mapError(
    error: unknown,
    metadata: LockedMetadata,
    context: ExecutionContext,
    stage: LockedErrorStage,
    resources: readonly string[] | undefined,
  ): unknown {
    const type = context.getType();
    const errorContext: LockedErrorContext = {
      type,
      stage,
      resources,
      executionContext: context,
      setHeader:
        type === 'http' ? responseHeaderSetter(context.switchToHttp().getResponse()) : undefined,
    };
    return mapLockedError(error, errorContext, [
      metadata.mapError,
      this.moduleOptions.mapLockedError,
    ]);
  }
}
