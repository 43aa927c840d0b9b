import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { HttpException, Inject, StreamableFile } from '@nestjs/common';
import { PROPERTY_DEPS_METADATA } from '@nestjs/common/constants.js';
import { isObservable } from 'rxjs';
import { RedlockConfigError, type Lock, type LockSession } from '../core';
import { globalSingleton } from '../core/global-singleton';
import {
  mapLockedError,
  type LockedErrorContext,
  type LockedErrorStage,
} from '../exceptions/locked-error-mapper';
import type { RedlockModuleOptions } from '../redlock-module-options';
import { REDLOCK_MODULE_OPTIONS } from '../redlock.module-definition';
import { RedlockService } from '../redlock.service';
import { providerLockedContext } from './locked-context';
import type { LockedMetadata } from './locked-metadata';
import { lockedScope, type LockedHandoff } from './locked-scope';
import { responseHeaderSetter } from './response-header';
import { skipsWhenBusy } from './skip-when-busy';

/** A method of a class, as found on its prototype. */
export type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Where an instance keeps the RedlockService (and module options) of the application that
 * created it. Nest sets both by property injection (see {@link injectLockManager}), for every
 * instance it creates — singleton, transient, request-scoped, in a lazily loaded module — so a
 * prototype wrapper finds the lock manager of the right application from `this`, even with
 * two applications in one process. Symbols: invisible to `Object.keys` and `JSON.stringify`;
 * registered ones (`Symbol.for`), so that the ESM and CommonJS builds of this package, loaded
 * side by side, read the same property.
 */
const LOCK_MANAGER = Symbol.for('nestjs-redlock:RedlockService');
const LOCK_MODULE_OPTIONS = Symbol.for('nestjs-redlock:RedlockModuleOptions');

interface LockManaged {
  [LOCK_MANAGER]?: RedlockService;
  [LOCK_MODULE_OPTIONS]?: RedlockModuleOptions;
}

/**
 * Declares, on the class of a `@Locked` method, the two property dependencies through which
 * Nest gives each instance its application's lock manager. Once per class (a subclass
 * inherits them); a class Nest cannot resolve them for fails the bootstrap, naming the class.
 */
export function injectLockManager(prototype: object): void {
  const declared: { key: unknown }[] =
    Reflect.getMetadata(PROPERTY_DEPS_METADATA, prototype.constructor) ?? [];
  if (declared.some((dependency) => dependency.key === LOCK_MANAGER)) return;
  Inject(RedlockService)(prototype, LOCK_MANAGER);
  Inject(REDLOCK_MODULE_OPTIONS)(prototype, LOCK_MODULE_OPTIONS);
}

/**
 * Gives an instance Nest did not construct (a `useValue` or `useFactory` provider) the lock
 * manager of the application that found it at bootstrap. An instance that already has one
 * keeps it: a value shared by two applications stays with the first.
 * @returns false when the instance cannot take it (frozen).
 */
export function attachLockManager(
  instance: object,
  redlock: RedlockService,
  options: RedlockModuleOptions,
): boolean {
  const managed = instance as LockManaged;
  if (managed[LOCK_MANAGER] !== undefined) return true;
  return (
    Reflect.defineProperty(instance, LOCK_MANAGER, { value: redlock, configurable: true }) &&
    Reflect.defineProperty(instance, LOCK_MODULE_OPTIONS, { value: options, configurable: true })
  );
}

/** Shared by every copy of the package in the process (see {@link globalSingleton}). */
const wrappers = globalSingleton('lockedWrappers@1', () => new WeakSet<AnyMethod>());

/** True for a function returned by {@link lockMethod}. */
export function isLockedWrapper(method: unknown): boolean {
  return typeof method === 'function' && wrappers.has(method as AnyMethod);
}

/**
 * Wraps a `@Locked` method, once, when the decorator is applied; the wrapper replaces the
 * method on the class's prototype, so every instance, every `super.method()` call and every
 * reference taken by another library's explorer (a scheduler, an event emitter) goes through
 * it, whatever the order in which modules initialise.
 *
 * Per call:
 * - invoked by `LockedInterceptor`, which already holds the lock for this very call: the
 *   original runs as it is (its return shape untouched);
 * - otherwise the lock is taken from `this`'s application (see {@link injectLockManager}),
 *   named from the call's arguments, auto-extended while the work runs, and released when the
 *   work has stopped: an `async` method when its Promise settles, an `async *` method when the
 *   generator finishes, throws or is returned from (a `break` in `for await`);
 * - a method that is not `async` cannot be locked (a lock cannot be taken synchronously): the
 *   call throws `RedlockConfigError` — the bootstrap refuses such provider methods earlier.
 *
 * Kept from the original: `this`, `name`, `length` and its reflect-metadata keys (copied at
 * decoration; decorators applied later write onto the wrapper itself).
 *
 * Errors: the method's own pass through untouched; lock errors go through the decorator's
 * `mapError`, the module's, then the default (typed errors for a provider call; 409/503/400
 * for a handler the interceptor handed over). A lock lost while a successful call ran fails
 * it with `LockLostError`.
 */
export function lockMethod(original: AnyMethod, metadata: LockedMetadata): AnyMethod {
  const wrapped = function (this: unknown, ...args: unknown[]): unknown {
    const scope = lockedScope.getStore();
    if (scope?.pending === metadata) {
      // The LockedInterceptor holds this method's lock for this very invocation (a handler,
      // a gateway or resolver method that Nest calls through the instance): taking it again
      // would deadlock on ourselves. Consumed once, so a recursive call from inside locks.
      scope.pending = undefined;
      return original.apply(this, args);
    }
    let handoff: LockedHandoff | undefined;
    if (scope?.handoff?.metadata === metadata) {
      handoff = scope.handoff;
      scope.handoff = undefined;
    }
    const call = new LockedCall(original, metadata, this, args, handoff);
    switch (metadata.kind) {
      case 'async':
        return call.run();
      case 'asyncGenerator':
        return call.generate();
      default:
        throw new RedlockConfigError(
          metadata.where,
          'a call',
          'cannot be locked: the method is not declared async and a lock cannot be taken synchronously; declare it `async`',
        );
    }
  };

  Object.defineProperty(wrapped, 'name', { value: original.name, configurable: true });
  Object.defineProperty(wrapped, 'length', { value: original.length, configurable: true });
  for (const key of Reflect.getMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getMetadata(key, original), wrapped);
  }
  wrappers.add(wrapped);
  return wrapped;
}

/** One call of a wrapped method that takes its own lock. */
class LockedCall {
  private resources?: readonly string[];

  constructor(
    private readonly original: AnyMethod,
    private readonly metadata: LockedMetadata,
    private readonly self: unknown,
    private readonly args: unknown[],
    private readonly handoff: LockedHandoff | undefined,
  ) {}

  /** An `async` method: held until its Promise settles. */
  async run(): Promise<unknown> {
    const session = await this.acquire();
    if (session === undefined) return undefined; // busy, onBusy: 'skip'
    let result: unknown;
    try {
      result = await this.enter(session, () =>
        this.original.apply(this.self, this.lockedArgs(session)),
      );
      this.rejectDeferredWork(result);
    } catch (error) {
      // The method's own error wins, also over a lost lock: it says more about what happened.
      await session.end();
      throw error;
    }
    const lost = await session.end();
    if (lost) throw this.fail(lost, 'hold');
    return result;
  }

  /**
   * An `async *` method: the lock is taken on the first step (as a generator's body only
   * starts then), every step of the original runs in the lock's scope, and the lock is
   * released when the generator finishes, throws, or is returned from early.
   */
  async *generate(): AsyncGenerator<unknown, unknown, unknown> {
    const session = await this.acquire();
    if (session === undefined) return undefined; // busy, onBusy: 'skip': yields nothing
    const inner = this.enter(
      session,
      () => this.original.apply(this.self, this.lockedArgs(session)) as AsyncGenerator,
    );
    const step = <R>(next: () => Promise<R>) => this.enter(session, next);
    // What yield* drives: the original, one step at a time, each inside the lock's scope (a
    // generator's body runs in the context of whoever calls next(), not where it was made).
    const scoped = {
      next: (...value: [] | [unknown]) => step(() => inner.next(...value)),
      throw: (error: unknown) => step(() => inner.throw(error)),
      return: (value: unknown) => step(() => inner.return(value)),
      [Symbol.asyncIterator]() {
        return this;
      },
    } as unknown as AsyncGenerator;
    let result: unknown;
    let completed = false;
    try {
      result = yield* scoped;
      completed = true;
    } finally {
      // The original threw, or the consumer returned early (a `break` in `for await`): either
      // way it has stopped. Its own error wins; an early return reports no loss (the lock's
      // signal aborted and the core warned when it happened).
      if (!completed) await session.end();
    }
    const lost = await session.end();
    if (lost) throw this.fail(lost, 'hold');
    return result;
  }

  /**
   * Names the resources, finds the application's lock manager, acquires.
   * @returns undefined when the call is skipped (busy, with `onBusy: 'skip'`).
   */
  private async acquire(): Promise<LockSession | undefined> {
    const managed = (
      typeof this.self === 'object' && this.self !== null ? this.self : {}
    ) as LockManaged;
    const redlock = managed[LOCK_MANAGER];
    if (redlock === undefined) {
      // Fail closed: without its application's lock manager the method must not run at all.
      throw new RedlockConfigError(
        this.metadata.where,
        this.self === undefined ? 'this = undefined' : 'this instance',
        'has no RedlockService: call it on an instance created by a Nest application that imports RedlockModule (not one built with `new`, nor from its own constructor, before Nest injected it)',
      );
    }
    let resources: string[];
    try {
      resources = this.metadata.resolve(providerLockedContext(this.args));
    } catch (error) {
      throw this.fail(error, 'resolve');
    }
    this.resources = resources;
    const client = this.clientGone();
    let lock: Lock;
    try {
      lock = await redlock.acquire(resources, {
        ...this.metadata.lockOptions,
        signal: client?.signal,
      });
    } catch (error) {
      // Nobody is listening: answer with what Nest sends without logging an error.
      if (client?.signal.aborted) throw client.signal.reason;
      if (skipsWhenBusy(this.metadata, error)) return undefined;
      throw this.fail(error, 'acquire');
    } finally {
      client?.dispose();
    }
    return redlock.redlock.session(lock, this.metadata.lockOptions);
  }

  /**
   * For an HTTP handler handed over by the interceptor: a signal that aborts when the client
   * goes away before its response is finished, so that a request nobody waits for any more
   * stops queueing for the lock (and its handler never runs).
   */
  private clientGone(): { signal: AbortSignal; dispose(): void } | undefined {
    const context = this.handoff?.executionContext;
    if (context?.getType() !== 'http') return undefined;
    // Express gives Node's ServerResponse, Fastify a reply wrapping it as `raw`.
    const reply = context.switchToHttp().getResponse<{ raw?: unknown } | undefined>();
    const response = (reply?.raw ?? reply) as Partial<ServerResponse> | undefined;
    if (typeof response?.once !== 'function' || typeof response.off !== 'function') {
      return undefined;
    }
    const controller = new AbortController();
    const abort = () => {
      if (response.writableFinished !== true) {
        // nginx's "client closed request": an HttpException, so Nest does not log it as a fault.
        controller.abort(new HttpException('Client Closed Request', 499));
      }
    };
    if (response.destroyed === true || response.closed === true) abort();
    response.once('close', abort);
    return { signal: controller.signal, dispose: () => response.off!('close', abort) };
  }

  /** Runs `work` in the lock's scopes: the core's (`currentLock()`) and `@CurrentLock()`'s. */
  private enter<R>(session: LockSession, work: () => R): R {
    return session.run(() => lockedScope.run({ lock: session.lock }, work));
  }

  /** The arguments, with the lock in the positions of `@CurrentLock()` parameters. */
  private lockedArgs(session: LockSession): unknown[] {
    const positions = this.metadata.currentLockParams;
    if (positions.length === 0) return this.args;
    const args = [...this.args];
    for (const index of positions) args[index] = session.lock;
    return args;
  }

  /**
   * An Observable or a stream resolved by an `async` method does its work after the Promise
   * settled — after the release. Fail loudly instead of letting it run unlocked.
   */
  private rejectDeferredWork(result: unknown): void {
    const deferred = isObservable(result)
      ? 'an Observable'
      : result instanceof StreamableFile || result instanceof Readable
        ? 'a stream'
        : undefined;
    if (deferred === undefined) return;
    throw new RedlockConfigError(
      this.metadata.where,
      deferred,
      this.handoff === undefined
        ? 'a locked method must resolve to a value: its work would run after the release; lock inside the pipeline instead'
        : 'a handler whose lock is named from its arguments must resolve to a value; name the lock from the request (e.g. {id}) so that the interceptor holds it while the response streams',
    );
  }

  private fail(error: unknown, stage: LockedErrorStage): unknown {
    const moduleMapper = (this.self as LockManaged | undefined)?.[LOCK_MODULE_OPTIONS]
      ?.mapLockedError;
    const resources = this.resources;
    let context: LockedErrorContext = { type: 'provider', stage, resources };
    const executionContext = this.handoff?.executionContext;
    if (executionContext !== undefined) {
      const type = executionContext.getType();
      context = {
        type,
        stage,
        resources,
        executionContext,
        setHeader:
          type === 'http'
            ? responseHeaderSetter(executionContext.switchToHttp().getResponse())
            : undefined,
      };
    }
    return mapLockedError(error, context, [this.metadata.mapError, moduleMapper]);
  }
}
