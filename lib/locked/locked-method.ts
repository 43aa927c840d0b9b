import { Readable } from 'node:stream';
import { Inject, StreamableFile } from '@nestjs/common';
import { PROPERTY_DEPS_METADATA } from '@nestjs/common/constants.js';
import { isObservable, Observable } from 'rxjs';
import { RedlockConfigError, type Lock, type LockLostError, type LockSession } from '../core';
import { globalSingleton } from '../core/global-singleton';
import {
  mapLockedError,
  type LockedErrorContext,
  type LockedErrorStage,
} from '../exceptions/locked-error-mapper';
import type { RedlockModuleOptions } from '../redlock-module-options';
import { REDLOCK_MODULE_OPTIONS } from '../redlock.module-definition';
import { anyRedlockModule, missingModuleError } from '../module-registry';
import { RedlockService } from '../redlock.service';
import { providerLockedContext } from './locked-context';
import type { LockedMetadata } from './locked-metadata';
import { acquireForCall } from './acquire-for-call';
import { lockedScope, type LockedHandoff } from './locked-scope';
import { endAfterMinHold } from './min-hold';

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
 *
 * The descriptions are what Nest prints when it cannot resolve them — an app that uses
 * `@Locked` without `RedlockModule` — so they say what to do ("…the "Symbol(…)" property is
 * available in the current context").
 */
const LOCK_MANAGER = Symbol.for(
  'nestjs-redlock: @Locked needs RedlockService: import RedlockModule.forRoot({ nodes }) in your root module, or (isGlobal: false) in the module that declares this class',
);
const LOCK_MODULE_OPTIONS = Symbol.for(
  'nestjs-redlock: @Locked needs the RedlockModule options: import RedlockModule.forRoot({ nodes }) in your root module, or (isGlobal: false) in the module that declares this class',
);

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
  // Nest reads the dependency's token when it instantiates the class: with no RedlockModule
  // defined in the process at all, our sentence comes first instead of Nest's generic one.
  const type = prototype.constructor as { name: string };
  const dependencies: { key: unknown; type: unknown }[] = Reflect.getMetadata(
    PROPERTY_DEPS_METADATA,
    type,
  );
  const index = dependencies.findIndex((dependency) => dependency.key === LOCK_MANAGER);
  if (index >= 0) {
    dependencies[index] = {
      key: LOCK_MANAGER,
      get type() {
        if (!anyRedlockModule()) throw missingModuleError(type.name, 'it has @Locked methods');
        return RedlockService;
      },
    };
  }
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
 * - invoked by Nest for a handler call that `LockedInterceptor` handed over (after guards and
 *   pipes): the lock is named from the handler's arguments and taken here, through the
 *   interceptor, which holds it until the result has ended — any method shape, `async` or not;
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
 * `mapError`, the module's, then the default (typed errors for a provider call; the
 * transport's answer for a handler). A lock lost while a successful call ran fails it with
 * `LockLostError`.
 */
export function lockMethod(original: AnyMethod, metadata: LockedMetadata): AnyMethod {
  const wrapped = function (this: unknown, ...args: unknown[]): unknown {
    const scope = lockedScope.getStore();
    if (scope?.handoff?.metadata === metadata) {
      // A handler call: LockedInterceptor hands it over, so that the lock is named from what
      // the handler receives (after guards and pipes) and taken here. Consumed once, so a
      // recursive call of the same method from inside the handler locks on its own.
      const handoff = scope.handoff;
      scope.handoff = undefined;
      return lockHandlerCall(original, metadata, this, args, handoff);
    }
    const call = new LockedCall(original, metadata, this, args);
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

/**
 * A handler call handed over by `LockedInterceptor`: takes the lock with the arguments Nest
 * passes (after guards and pipes), runs the method in the lock's scope — whatever it returns:
 * a value (a plain handler), a Promise, an Observable (subscribed in the lock's scope) or a
 * stream — and tells the interceptor when the method's own work settled. The interceptor
 * releases once the result has ended (an Observable finalized, a stream sent).
 */
async function lockHandlerCall(
  original: AnyMethod,
  metadata: LockedMetadata,
  self: unknown,
  args: unknown[],
  handoff: LockedHandoff,
): Promise<unknown> {
  const session = await handoff.take(args);
  if (session === undefined) return undefined; // busy, onBusy: 'skip'
  const enter = <R>(work: () => R): R =>
    session.run(() => lockedScope.run({ lock: session.lock }, work));
  const result = enter(() => original.apply(self, withLock(args, metadata, session.lock)));
  const settled = Promise.resolve(result);
  handoff.running(settled);
  const value = await settled;
  if (!isObservable(value)) handoff.single();
  if (isObservable(value)) {
    const source = value;
    return new Observable<unknown>((subscriber) => enter(() => source.subscribe(subscriber)));
  }
  return value;
}

/** The arguments, with the lock in the positions of `@CurrentLock()` parameters. */
function withLock(args: unknown[], metadata: LockedMetadata, lock: Lock): unknown[] {
  const positions = metadata.currentLockParams;
  if (positions.length === 0) return args;
  const copy = [...args];
  for (const index of positions) copy[index] = lock;
  return copy;
}

/** One call of a wrapped method that takes its own lock. */
class LockedCall {
  private resources?: readonly string[];
  private redlock?: RedlockService;
  private acquiredAt = 0;

  constructor(
    private readonly original: AnyMethod,
    private readonly metadata: LockedMetadata,
    private readonly self: unknown,
    private readonly args: unknown[],
  ) {}

  /** An `async` method: held until its Promise settles. */
  async run(): Promise<unknown> {
    const session = await this.acquire();
    if (session === undefined) return undefined; // busy, onBusy: 'skip'
    let result: unknown;
    try {
      result = await this.enter(session, () =>
        this.original.apply(this.self, withLock(this.args, this.metadata, session.lock)),
      );
      this.rejectDeferredWork(result);
    } catch (error) {
      // The method's own error wins, also over a lost lock: it says more about what happened.
      await this.end(session);
      throw error;
    }
    const lost = await this.end(session);
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
      () =>
        this.original.apply(
          this.self,
          withLock(this.args, this.metadata, session.lock),
        ) as AsyncGenerator,
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
      if (!completed) await this.end(session);
    }
    const lost = await this.end(session);
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
    const lock = await acquireForCall(redlock, resources, this.metadata, undefined).catch(
      (error: unknown) => {
        throw this.fail(error, 'acquire');
      },
    );
    if (lock === undefined) return undefined; // busy, onBusy: 'skip'
    this.redlock = redlock;
    this.acquiredAt = performance.now();
    return redlock.redlock.session(lock, this.metadata.lockOptions);
  }

  /** Ends the lock, no earlier than `minHold` after its acquisition. */
  private end(session: LockSession): Promise<LockLostError | undefined> {
    return endAfterMinHold(session, this.metadata.minHold, this.acquiredAt, this.redlock!);
  }

  /** Runs `work` in the lock's scopes: the core's (`currentLock()`) and `@CurrentLock()`'s. */
  private enter<R>(session: LockSession, work: () => R): R {
    return session.run(() => lockedScope.run({ lock: session.lock }, work));
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
      'a locked method must resolve to a value: its work would run after the release; lock inside the pipeline instead',
    );
  }

  private fail(error: unknown, stage: LockedErrorStage): unknown {
    const moduleMapper = (this.self as LockManaged | undefined)?.[LOCK_MODULE_OPTIONS]
      ?.mapLockedError;
    const context: LockedErrorContext = { type: 'provider', stage, resources: this.resources };
    return mapLockedError(error, context, [this.metadata.mapError, moduleMapper]);
  }
}
