import { Readable } from 'node:stream';
import { Inject, StreamableFile } from '@nestjs/common';
import { PROPERTY_DEPS_METADATA } from '@nestjs/common/constants.js';
import { isObservable } from 'rxjs';
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
import { holdForCall, type CallFailures } from './hold-for-call';
import { lockRouteCall, routeCallContextOf, withLock } from './locked-route';
import { lockedScope, type AnyMethod } from './locked-scope';

export type { AnyMethod } from './locked-scope';

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
 * - invoked by Nest for an HTTP route prepared at bootstrap (its call's context comes as one
 *   more argument, taken off here): the wrapper holds the call itself, as the interceptor would
 *   (see `lockRouteCall`) — any method shape, `async` or not;
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
    // A prepared HTTP route (locked-route.ts): Nest passes the call's context last.
    const route = args.length === 0 ? undefined : routeCallContextOf(args[args.length - 1]);
    if (route !== undefined) args.pop();
    const call = lockedScope.getStore()?.call;
    if (call !== undefined && call.metadata === metadata) {
      // A handler call: LockedInterceptor's token, so that the lock is named from what the
      // handler receives (after guards and pipes) and taken here. Once per token: a second
      // invocation in the same scope locks on its own.
      const answer = call.lockCall(original, this, args);
      if (answer !== undefined) return answer;
    }
    const managed = (typeof this === 'object' && this !== null ? this : {}) as LockManaged;
    const redlock = managed[LOCK_MANAGER];
    if (route !== undefined && redlock !== undefined) {
      // The route's call, held here rather than by the interceptor (see prepareLockedRoute).
      return lockRouteCall(
        redlock,
        managed[LOCK_MODULE_OPTIONS],
        original,
        metadata,
        this,
        args,
        route,
      );
    }
    const locked = new LockedCall(original, metadata, this, args);
    switch (metadata.kind) {
      case 'async':
        return locked.run();
      case 'asyncGenerator':
        return locked.generate();
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

/** One call of a wrapped method that takes its own lock (through {@link holdForCall}). */
class LockedCall implements CallFailures {
  private resources?: readonly string[];

  constructor(
    private readonly original: AnyMethod,
    private readonly metadata: LockedMetadata,
    private readonly self: unknown,
    private readonly args: unknown[],
  ) {}

  /** An `async` method: held until its Promise settles. */
  async run(): Promise<unknown> {
    const [redlock, resources] = this.prepare();
    return holdForCall(
      redlock,
      resources,
      this.metadata,
      undefined,
      (lock) => this.invoke(lock),
      this,
    );
  }

  /**
   * An `async *` method: the lock is taken on the first step (as a generator's body only
   * starts then), every step of the original runs in the lock's scope, and the lock is
   * released when the generator finishes, throws, or is returned from early. The hold's work
   * is the generator's life: it ends when the generator does.
   */
  async *generate(): AsyncGenerator<unknown, unknown, unknown> {
    const [redlock, resources] = this.prepare();
    let held: { lock: Lock; session: LockSession } | undefined;
    let finish: () => void = () => undefined;
    let opened: () => void = () => undefined;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const holding = holdForCall(
      redlock,
      resources,
      this.metadata,
      undefined,
      (lock, session) => {
        held = { lock, session };
        opened();
        return new Promise<void>((resolve) => (finish = resolve));
      },
      this,
    );
    // Acquired (the work started), skipped (resolved before), or not acquired (rejects, mapped).
    await Promise.race([open, holding]);
    if (held === undefined) return undefined; // busy, onBusy: 'skip': yields nothing
    const { lock, session } = held;
    const step = <R>(next: () => R): R => session.run(next);
    const inner = step(
      () =>
        this.original.apply(this.self, withLock(this.args, this.metadata, lock)) as AsyncGenerator,
    );
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
      if (!completed) {
        finish();
        await holding.catch(() => undefined);
      }
    }
    finish();
    await holding; // rejects, mapped, when the lock was lost while the generator ran
    return result;
  }

  /** @internal CallFailures: the acquisition failed. */
  notAcquired(error: unknown): unknown {
    return this.fail(error, 'acquire');
  }

  /** @internal CallFailures: the lock was lost while the method ran. */
  lost(error: LockLostError): unknown {
    return this.fail(error, 'hold');
  }

  /**
   * The method, in the lock's scope (the hold's). Not in a `lockedScope` of its own: nothing
   * reads it here (`@CurrentLock()` parameters are filled in by the wrapper), and every
   * AsyncLocalStorage in use costs every Promise of the process (measured on Node 20: 0.08 µs
   * per await without one, 0.24 with one, 0.31 with two).
   */
  private invoke(lock: Lock): Promise<unknown> {
    const result = this.original.apply(this.self, withLock(this.args, this.metadata, lock));
    return Promise.resolve(result).then((value) => {
      this.rejectDeferredWork(value);
      return value;
    });
  }

  /**
   * Finds the application's lock manager and names the resources.
   * @throws RedlockConfigError without one; the mapped resolve error
   */
  private prepare(): [RedlockService, string[]] {
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
    return [redlock, resources];
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
