import type { Readable } from 'node:stream';
import type { CallHandler, ExecutionContext } from '@nestjs/common';
import type { Subscriber, Subscription } from 'rxjs';
import { isObservable, Observable } from 'rxjs';
import { LockLostError, RedlockConfigError, type Lock, type LockSession } from '../core';
import type { LockedErrorStage } from '../exceptions/locked-error-mapper';
import { failCall, mapCallError, type LockedCallErrorMapper } from './locked-call-failure';
import { holdForCall, type CallFailures } from '../locked/hold-for-call';
import { boundArguments } from '../locked/bound-arguments';
import { CallSignal } from '../locked/call-signal';
import { ClientGoneError, watchClientGone } from '../locked/hold-client-gone';
import { lockedContextOf } from '../locked/locked-context';
import type { LockedMetadata } from '../locked/locked-metadata';
import { withLock } from '../locked/locked-route';
import {
  lockedScope,
  type AnyMethod,
  type LockedCallToken,
  type LockedScope,
} from '../locked/locked-scope';
import { holdWhileSent, respondsItself, streamOf } from '../locked/stream-hold';
import type { RedlockService } from '../redlock.service';

export type { LockedCallErrorMapper } from './locked-call-failure';

/**
 * One call of a `@Locked` handler through `LockedInterceptor`: run the handler chain
 * (`next.handle()`), which runs the guards' successors, the pipes and then the method; the
 * method's wrapper takes the lock through this call's {@link LockedCallToken} — named from what
 * the handler receives, after its pipes (architecture.md §5.10: `{id}` bound with `ParseIntPipe` makes
 * `/stock/042` and `/stock/42` one lock) — and runs the method in the lock's scope. This call
 * releases **when the handler's work has stopped** — which is not when our subscriber
 * unsubscribed — and never before the method's own Promise settled.
 *
 * How "the work stopped" is known. Nest hands an interceptor an Observable that wraps the
 * handler (`InterceptorsConsumer.transformDeferred`): on subscription it calls the route's
 * handler closure, which runs the pipes and then the method, and it emits the method's result
 * once its Promise settled (a value, or each value of a returned Observable). Unsubscribing
 * that Observable cancels neither the pipes nor the method's Promise; it only stops listening.
 * So this call never unsubscribes the handler chain while the work may still run:
 * - while its subscriber listens: the chain completing or failing is the end of the work (a
 *   Promise settled; an Observable completed or failed);
 * - once its subscriber is gone (an outer `timeout()`, a client that went away): it keeps
 *   listening, discarding what comes. The first value — or completion, or error — proves the
 *   handler's Promise has settled (nothing comes out of the chain before); the chain is then
 *   unsubscribed, which finalizes a returned Observable (an `@Sse` stream), and the lock is
 *   released. An Observable that never emits keeps its lock until it completes or fails.
 * - a streamed body (a `StreamableFile`, a `Readable`, or a response the handler writes itself
 *   through `@Res()`) is read after the chain completed: the result completes (so Nest starts
 *   sending it) and the lock is released once the body has been sent, failed, or its client
 *   went away (see {@link holdWhileSent}).
 *
 * It is exact when `LockedInterceptor` is the innermost interceptor that can stop listening
 * (docs/locked.md, "Decorator order"). HTTP routes other than `@Sse` and `@Res()` ones do not come
 * here: the method wrapper holds their calls (lib/locked/locked-route.ts).
 *
 * While the lock is awaited, a client that goes away aborts the wait (see
 * {@link watchClientGone}); the handler then never runs.
 */
export class LockedHandlerCall implements CallFailures {
  // Fields only declared (unset: false): defining them per instance cost 2.4 % CPU (Node 20).
  /** The subscriber unsubscribed: nobody listens, but the work may still run. */
  declare private abandoned?: boolean;
  /**
   * The chain ended before the method took its lock (an interceptor inside ours gave up while
   * pipes ran): a method Nest still invokes afterwards must not take a lock nobody releases.
   */
  declare private ended?: boolean;
  /** The method was invoked through the token (once per call). */
  declare private invoked?: boolean;
  /** The session the method runs in, once it runs under the lock. */
  declare private session?: LockSession;
  declare private resources?: readonly string[];
  declare private chain?: Subscription;
  /** Unsubscribe the chain as soon as its subscription exists. */
  declare private chainStopped?: boolean;
  /** The streamed bodies of the result, read after the chain completed (HTTP). */
  declare private streams?: Readable[];
  /** Aborts the wait for the lock (the client left, the subscriber left, the chain ended). */
  declare private readonly waiting: CallSignal;
  /** The method's own Promise is pending (it may outlive the chain): the release waits for it. */
  declare private workPending?: boolean;
  /** The release was asked for: it goes once the method's Promise has settled. */
  declare private releaseWanted?: boolean;
  /** The method resolved to one value: it is held back until the release (see `onValue`). */
  declare private singleValue?: boolean;
  declare private held?: { value: unknown };
  /** Ends the hold's work, which the core then ends by releasing the lock. */
  declare private finish?: () => void;
  /** The release's outcome once the core's hold settled: the loss, if the lock was lost. */
  declare private outcome?: { readonly lost: LockLostError | undefined };
  declare private released?: (lost: LockLostError | undefined) => void;
  declare private releasing?: Promise<LockLostError | undefined>;
  /** What the call's async scope carries to the method wrapper (immutable). */
  declare private readonly scope: LockedScope;
  declare private readonly subscriber: Subscriber<unknown>;
  declare private readonly context: ExecutionContext;
  declare private readonly next: CallHandler;
  declare private readonly metadata: LockedMetadata;
  declare private readonly redlock: RedlockService;
  declare private readonly mapError: LockedCallErrorMapper;

  constructor(
    subscriber: Subscriber<unknown>,
    context: ExecutionContext,
    next: CallHandler,
    metadata: LockedMetadata,
    redlock: RedlockService,
    mapError: LockedCallErrorMapper,
  ) {
    this.subscriber = subscriber;
    this.context = context;
    this.next = next;
    this.metadata = metadata;
    this.redlock = redlock;
    this.mapError = mapError;
    this.waiting = new CallSignal();
    const call: LockedCallToken = Object.freeze({
      metadata,
      lockCall: (method: AnyMethod, self: unknown, args: unknown[]) =>
        this.lockCall(method, self, args),
    });
    this.scope = Object.freeze({ call });
  }

  /** Starts the call; what happens is reported to the subscriber. */
  start(): void {
    // Nest binds the handler's async context when handle() is called, so handle() — not only
    // subscribe() — must happen inside the scope that carries the token to the wrapper.
    lockedScope.run(this.scope, () => {
      const chain = this.next.handle().subscribe({
        next: (value) => this.onValue(value),
        error: (error: unknown) => this.onEnd({ error }),
        complete: () => this.onEnd(undefined),
      });
      this.chain = chain;
      if (this.chainStopped) chain.unsubscribe();
    });
  }

  /** The subscriber unsubscribed. A wait for the lock stops; work that runs keeps its lock. */
  teardown(): void {
    this.abandoned = true;
    if (this.session === undefined) this.waiting.abort();
  }

  /**
   * The token's `lockCall`, called by the method wrapper with the handler's arguments (after
   * guards and pipes): names the lock and holds it through the core's hold primitive — a
   * client that goes away meanwhile aborts the wait — with the method as the start of the
   * hold's work, which lasts until this call releases (see {@link release}).
   */
  private lockCall(
    method: AnyMethod,
    self: unknown,
    args: unknown[],
  ): Promise<unknown> | undefined {
    if (this.invoked) return undefined;
    this.invoked = true;
    let resources: string[];
    try {
      resources = this.metadata.resolve(
        lockedContextOf(this.context),
        boundArguments(this.context, this.metadata.key, args),
      );
    } catch (error) {
      return Promise.reject(mapCallError(this.mapError, error, 'resolve', undefined));
    }
    this.resources = resources;
    if (this.gone()) return Promise.reject(this.notAcquired(undefined));
    return new Promise<unknown>((resolve, reject) => {
      const stopWatching = watchClientGone(this.context, () =>
        this.waiting.abort(new ClientGoneError(this.metadata.where)),
      );
      let started = false;
      holdForCall(
        this.redlock,
        resources,
        this.metadata,
        this.waiting.signal,
        (lock, session) => {
          started = true;
          stopWatching();
          if (this.gone()) {
            // Gone between the lock's arrival and now: the handler must not run for nobody;
            // the work is over at once, and the lock released.
            reject(this.notAcquired(this.waiting.reason));
            return undefined;
          }
          this.session = session;
          return this.runMethod(method, self, args, lock, session, resolve, reject);
        },
        this,
      ).then(
        () => {
          if (started) return this.settled(undefined);
          stopWatching();
          resolve(undefined); // onBusy: 'skip'
        },
        (error: unknown) => {
          // Once the work started, only a loss rejects (the work itself never does).
          if (started) return this.settled(error as LockLostError);
          stopWatching();
          reject(error); // not acquired: already mapped (notAcquired)
        },
      );
    });
  }

  /**
   * Runs the method in the lock's scope — whatever it returns: a value (a plain handler), a
   * Promise, an Observable (subscribed in the lock's scope) or a stream — and answers the
   * wrapper with it. Resolves when this call releases: the hold's work is the method's work
   * and the response's, which only this call sees end.
   */
  private runMethod(
    method: AnyMethod,
    self: unknown,
    args: unknown[],
    lock: Lock,
    session: LockSession,
    resolve: (value: unknown) => void,
    reject: (error: unknown) => void,
  ): Promise<void> {
    let result: unknown;
    try {
      result = lockedScope.run({ lock }, () =>
        method.apply(self, withLock(args, this.metadata, lock)),
      );
    } catch (error) {
      result = Promise.reject(error);
    }
    this.workPending = true;
    Promise.resolve(result).then(
      (value) => {
        this.workDone();
        if (!isObservable(value)) {
          this.singleValue = true;
          resolve(value);
          return;
        }
        resolve(
          new Observable<unknown>((subscriber) =>
            session.run(() => lockedScope.run({ lock }, () => value.subscribe(subscriber))),
          ),
        );
      },
      (error: unknown) => {
        this.workDone();
        reject(error);
      },
    );
    return new Promise<void>((done) => {
      this.finish = done;
    });
  }

  /** The method's own Promise settled: a release asked for meanwhile goes now. */
  private workDone(): void {
    this.workPending = false;
    if (this.releaseWanted) this.finish?.();
  }

  /** The core's hold settled, after the release: its outcome is the release's. */
  private settled(lost: LockLostError | undefined): void {
    this.outcome = { lost };
    this.released?.(lost);
  }

  /** CallFailures: a loss is reported by {@link release}, unmapped. */
  lost(error: LockLostError): unknown {
    return error;
  }

  /** Nobody waits for this call's answer any more. */
  private gone(): boolean {
    return this.abandoned || this.ended || this.waiting.aborted;
  }

  /** CallFailures: what the call answers when the wait for the lock failed or was aborted. */
  notAcquired(error: unknown): unknown {
    const reason: unknown = this.waiting.reason;
    if (reason instanceof ClientGoneError) return reason;
    // Unsubscribed or ended: nobody listens; the abort is not an error worth mapping.
    if (this.abandoned || this.ended) return new ClientGoneError(this.metadata.where);
    return mapCallError(this.mapError, error, 'acquire', this.resources);
  }

  private onValue(value: unknown): void {
    const stream = streamOf(value);
    if (this.abandoned) {
      // The handler's Promise has settled (its result is coming out). Nobody will send this
      // value; a stream would hold what it reads from. Stop listening: a returned Observable
      // finalizes now, then the lock goes.
      stream?.destroy();
      this.stopChain();
      void this.afterResponse(this.writesItself(), []);
      return;
    }
    if (stream === undefined && this.singleValue && this.session !== undefined) {
      // One value (a Promise's or a plain result): answered after the release, so that a lock
      // lost while the method ran fails the call — RPC and WebSocket transports send the first
      // value at once, before the completion HTTP waits for.
      this.held = { value };
      return;
    }
    if (stream !== undefined && this.session !== undefined) {
      if (this.context.getType() !== 'http') {
        stream.destroy();
        this.stopChain();
        void this.release().then(() =>
          this.subscriber.error(
            new RedlockConfigError(
              this.metadata.where,
              'a stream',
              `a locked ${this.context.getType()} handler cannot return a stream: it would be read after the release; return its content`,
            ),
          ),
        );
        return;
      }
      (this.streams ??= []).push(stream);
    }
    this.subscriber.next(value);
  }

  /** The handler chain completed (`outcome` undefined) or failed. */
  private onEnd(outcome: { error: unknown } | undefined): void {
    const session = this.session;
    if (session === undefined) {
      // No lock was taken: a pipe failed, the lock was not acquired (the error is already
      // mapped), or the call was skipped. Nothing to release; a method invoked later (pipes
      // still running) must not lock for nobody.
      this.ended = true;
      this.waiting.abort();
      if (this.abandoned) return;
      if (outcome !== undefined) failCall(this.context, this.subscriber, outcome.error);
      else this.subscriber.complete();
      return;
    }
    const writesItself = this.writesItself();
    if (this.abandoned || outcome !== undefined) {
      // The handler's own error wins, also over a lost lock: it says more.
      for (const stream of this.streams ?? []) stream.destroy();
      void this.afterResponse(writesItself, []).then(() => {
        if (outcome !== undefined && !this.abandoned) this.subscriber.error(outcome.error);
      });
      return;
    }
    const streams = this.streams ?? [];
    if (streams.length > 0 || writesItself) {
      if (!session.lock.isValid()) {
        // Lost while the handler ran: nothing of it is sent.
        for (const stream of streams) stream.destroy();
        void this.afterResponse(writesItself, []).then((lost) =>
          this.fail(
            lost ?? new LockLostError(session.lock.resources, 'its validity ran out'),
            'hold',
          ),
        );
        return;
      }
      // Nest reads the body only once the result completes: complete now, and keep the lock
      // until the body has been sent.
      if (this.held !== undefined) this.subscriber.next(this.held.value);
      this.subscriber.complete();
      void this.afterResponse(writesItself, streams);
      return;
    }
    void this.release().then((lost) => {
      if (lost) return this.fail(lost, 'hold');
      if (this.held !== undefined) this.subscriber.next(this.held.value);
      this.subscriber.complete();
    });
  }

  /** Releases once the response no longer uses the handler's work (see holdWhileSent). */
  private async afterResponse(
    writesItself: boolean,
    streams: readonly Readable[],
  ): Promise<LockLostError | undefined> {
    if (this.session === undefined) return undefined;
    if (writesItself || streams.length > 0) {
      await holdWhileSent(this.context, streams, writesItself, this.session.lock.signal);
    }
    return this.release();
  }

  /** An HTTP handler that writes its own response (`@Res()`): the response is its work too. */
  private writesItself(): boolean {
    return this.context.getType() === 'http' && respondsItself(this.context);
  }

  /**
   * Ends the hold's work once the method's own Promise has settled too (fail closed): the core
   * then releases. Resolves to the LockLostError when the lock was lost before the end.
   */
  private release(): Promise<LockLostError | undefined> {
    if (this.session === undefined) return Promise.resolve(undefined);
    if (this.releasing === undefined) {
      const outcome = this.outcome;
      this.releasing =
        outcome !== undefined
          ? Promise.resolve(outcome.lost)
          : new Promise((resolve) => {
              this.released = resolve;
            });
      this.releaseWanted = true;
      if (!this.workPending) this.finish?.();
    }
    return this.releasing;
  }

  private stopChain(): void {
    this.chainStopped = true;
    this.chain?.unsubscribe();
  }

  /** Fails the call with the mapped error (a gateway's lock error is answered: failCall). */
  private fail(error: unknown, stage: LockedErrorStage): void {
    const resources = stage === 'resolve' ? undefined : this.resources;
    failCall(this.context, this.subscriber, mapCallError(this.mapError, error, stage, resources));
  }
}
