import {
  Inject,
  Injectable,
  Optional,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Observable } from 'rxjs';
import {
  mapLockedError,
  type LockedErrorContext,
  type LockedErrorStage,
} from '../exceptions/locked-error-mapper';
import { RedlockConfigError } from '../core';
import { LOCKED_METADATA, type LockedMetadata } from '../locked/locked-metadata';
import { lockedScope } from '../locked/locked-scope';
import { responseHeaderSetter } from '../locked/response-header';
import type { RedlockModuleOptions } from '../redlock-module-options';
import { REDLOCK_MODULE_OPTIONS } from '../redlock.module-definition';
import { RedlockService } from '../redlock.service';
import { LockedHandlerCall } from './locked-handler-call';

/**
 * Holds the lock of a `@Locked` handler around the handler's whole execution. `@Locked` applies
 * it; handlers without `@Locked` pass straight through, so registering it globally too is
 * harmless (the lock is still taken once). HTTP routes of controllers (but `@Sse()` streams and
 * responses written through `@Res()`) do without it: at bootstrap it is taken off them and the
 * method wrapper holds their calls alike (lib/locked/locked-route.ts), as Nest's interceptor
 * pipeline costs more per request than the rest of `@Locked`.
 *
 * Per call: runs the handler chain; after guards and pipes, the method's wrapper names the
 * resources from what the handler receives (`{id}` is the id after `@Param('id', ParseIntPipe)`;
 * the raw request value where the handler binds none) and acquires through this call — a
 * client that goes away meanwhile aborts the wait — then runs the method inside the lock's
 * async scope, so `RedlockService.currentLock()` and `@CurrentLock()` see the lock and it is
 * auto-extended. A plain (non-`async`) handler works the same way: Nest awaits what it returns.
 * The lock is released when the handler's work has stopped, not when the subscriber left: a
 * Promise settled (also after an outer `timeout()` unsubscribed), an Observable finalized, a
 * `StreamableFile` / `Readable` / `@Res()` body sent (see {@link LockedHandlerCall} and
 * docs/locked.md, "What @Locked holds the lock for"). A result completes only after the
 * release, so the next holder sees the handler's writes (a streamed body excepted: it is sent
 * under the lock). Fail closed: the handler never runs without the lock.
 *
 * Every interceptor's code before `next.handle()` runs before the lock is taken (the lock is
 * taken at the method, after guards and pipes); where this interceptor is used, method-level
 * interceptors written above `@Locked` see the result while the lock is still held, those below
 * it (and controller or global ones) after the release: see docs/locked.md, "Decorator order".
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
  /**
   * The lock manager and options are optional so that an app without `RedlockModule` fails its
   * bootstrap on the `@Locked` class's own dependency, whose message says to import
   * `RedlockModule.forRoot()` (see `injectLockManager`), not on this interceptor's.
   */
  constructor(
    private readonly reflector: Reflector,
    @Optional() private readonly redlock?: RedlockService,
    @Optional()
    @Inject(REDLOCK_MODULE_OPTIONS)
    private readonly moduleOptions?: RedlockModuleOptions,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const metadata = this.reflector.get<LockedMetadata | undefined>(
      LOCKED_METADATA,
      context.getHandler(),
    );
    if (metadata === undefined) return next.handle();
    // Another LockedInterceptor already locks this handler for this very call.
    if (lockedScope.getStore()?.call?.metadata === metadata) return next.handle();

    const redlock = this.redlock;
    if (redlock === undefined) {
      // Fail closed: without its lock manager the handler must not run at all.
      throw new RedlockConfigError(
        metadata.where,
        'no RedlockService',
        'needs RedlockModule: import RedlockModule.forRoot({ nodes }) in your root module, or (isGlobal: false) in the module that declares this controller',
      );
    }
    return new Observable<unknown>((subscriber) => {
      const call = new LockedHandlerCall(
        subscriber,
        context,
        next,
        metadata,
        redlock,
        (error, stage, resources) => this.mapError(error, metadata, context, stage, resources),
      );
      call.start();
      return () => call.teardown();
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
      this.moduleOptions?.mapLockedError,
    ]);
  }
}
