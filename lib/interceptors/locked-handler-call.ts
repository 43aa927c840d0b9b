import type { Readable } from 'node:stream';
import type { CallHandler, ExecutionContext } from '@nestjs/common';
import type { Subscriber, Subscription } from 'rxjs';
import { LockLostError, RedlockConfigError, type Lock, type LockSession } from '../core';
import type { LockedErrorStage } from '../exceptions/locked-error-mapper';
import { ClientGoneError, watchClientGone } from '../locked/hold-client-gone';
import { lockedContextOf } from '../locked/locked-context';
import type { LockedMetadata } from '../locked/locked-metadata';
import { holdingScope, type HoldingScope } from '../locked/hold-scope';
import { lockedScope } from '../locked/locked-scope';
import { skipsWhenBusy } from '../locked/skip-when-busy';
import { holdWhileSent, respondsItself, streamOf } from '../locked/stream-hold';
import type { RedlockService } from '../redlock.service';

/** Maps a lock error of one call (see `LockedInterceptor`). */
export type LockedCallErrorMapper = (
  error: unknown,
  stage: LockedErrorStage,
  resources: readonly string[] | undefined,
) => unknown;

/**
 * One call of a `@Locked` handler through `LockedInterceptor`: acquire, run the handler chain
 * (`next.handle()`) inside the lock's scope, and release **when the handler's work has stopped**
 * — which is not when our subscriber unsubscribed (DESIGN §5.10).
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
 * The alternative, capturing the handler's return value where the method is invoked, would
 * need the method wrapper's cooperation; the chain already carries that value, so it is read
 * there. It is exact when `LockedInterceptor` is the innermost interceptor that can stop
 * listening: an interceptor inside the lock that unsubscribes on its own (a `timeout()` placed
 * under `@Locked`) ends the chain while the method still runs (docs/locked.md, "Decorator
 * order").
 *
 * While the lock is awaited, a client that goes away aborts the wait (see
 * {@link watchClientGone}); the handler then never runs.
 */
export class LockedHandlerCall {
  /** The subscriber unsubscribed: nobody listens, but the work may still run. */
  private abandoned = false;
  private session?: LockSession;
  private holding?: HoldingScope;
  private resources?: readonly string[];
  private chain?: Subscription;
  /** Unsubscribe the chain as soon as its subscription exists. */
  private chainStopped = false;
  private readonly streams: Readable[] = [];
  private readonly waiting = new AbortController();

  constructor(
    private readonly subscriber: Subscriber<unknown>,
    private readonly context: ExecutionContext,
    private readonly next: CallHandler,
    private readonly metadata: LockedMetadata,
    private readonly redlock: RedlockService,
    private readonly mapError: LockedCallErrorMapper,
  ) {}

  /** Starts the call; what happens is reported to the subscriber. */
  start(): void {
    this.run().catch(async (error: unknown) => {
      await this.session?.end();
      this.subscriber.error(error);
    });
  }

  /** The subscriber unsubscribed. A wait for the lock stops; work that runs keeps its lock. */
  teardown(): void {
    this.abandoned = true;
    if (this.session === undefined) this.waiting.abort();
  }

  private async run(): Promise<void> {
    let resources: string[];
    try {
      resources = this.metadata.resolve(lockedContextOf(this.context));
    } catch (error) {
      return this.fail(error, 'resolve');
    }
    this.resources = resources;
    const stopWatching = watchClientGone(this.context, () =>
      this.waiting.abort(new ClientGoneError(this.metadata.where)),
    );
    let lock: Lock;
    try {
      lock = await this.redlock.acquire(resources, {
        ...this.metadata.lockOptions,
        signal: this.waiting.signal,
      });
    } catch (error) {
      return this.notAcquired(error);
    } finally {
      stopWatching();
    }
    if (this.abandoned || this.waiting.signal.aborted) {
      // Gone between the lock's arrival and now: the handler must not run for nobody.
      await lock.release();
      return this.notAcquired(this.waiting.signal.reason);
    }
    const session = this.redlock.redlock.session(lock, this.metadata.lockOptions);
    this.session = session;
    const holding = holdingScope(lock, this.metadata);
    this.holding = holding;
    // Nest binds the handler's async context when handle() is called, so handle() — not
    // only subscribe() — must happen inside the lock's scope.
    session.run(() =>
      lockedScope.run(holding.scope, () => {
        const chain = this.next.handle().subscribe({
          next: (value) => this.onValue(value),
          error: (error: unknown) => this.onEnd({ error }),
          complete: () => this.onEnd(undefined),
        });
        this.chain = chain;
        if (this.chainStopped) chain.unsubscribe();
      }),
    );
  }

  /** The wait for the lock failed, or was aborted because nobody is left to answer. */
  private notAcquired(error: unknown): void {
    if (this.abandoned) return; // unsubscribed: the abort is not an error, nobody listens
    const reason: unknown = this.waiting.signal.reason;
    if (reason instanceof ClientGoneError) return this.subscriber.error(reason);
    if (skipsWhenBusy(this.metadata, error)) {
      // onBusy: 'skip': the handler does not run and the call answers `undefined`.
      this.subscriber.next(undefined);
      return this.subscriber.complete();
    }
    this.fail(error, 'acquire');
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
    if (stream !== undefined) {
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
      this.streams.push(stream);
    }
    this.subscriber.next(value);
  }

  /** The handler chain completed (`outcome` undefined) or failed. */
  private onEnd(outcome: { error: unknown } | undefined): void {
    const session = this.session as LockSession;
    const writesItself = this.writesItself();
    if (this.abandoned || outcome !== undefined) {
      // The handler's own error wins, also over a lost lock: it says more.
      for (const stream of this.streams) stream.destroy();
      void this.afterResponse(writesItself, []).then(() => {
        if (outcome !== undefined && !this.abandoned) this.subscriber.error(outcome.error);
      });
      return;
    }
    if (this.streams.length > 0 || writesItself) {
      if (!session.lock.isValid()) {
        // Lost while the handler ran: nothing of it is sent.
        for (const stream of this.streams) stream.destroy();
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
      this.subscriber.complete();
      void this.afterResponse(writesItself, this.streams);
      return;
    }
    void this.release().then((lost) => {
      if (lost) this.fail(lost, 'hold');
      else this.subscriber.complete();
    });
  }

  /** Releases once the response no longer uses the handler's work (see holdWhileSent). */
  private async afterResponse(
    writesItself: boolean,
    streams: readonly Readable[],
  ): Promise<LockLostError | undefined> {
    if (writesItself || streams.length > 0) {
      await holdWhileSent(
        this.context,
        streams,
        writesItself,
        (this.session as LockSession).lock.signal,
      );
    }
    return this.release();
  }

  /** An HTTP handler that writes its own response (`@Res()`): the response is its work too. */
  private writesItself(): boolean {
    return this.context.getType() === 'http' && respondsItself(this.context);
  }

  private release(): Promise<LockLostError | undefined> {
    this.holding?.close();
    return (this.session as LockSession).end();
  }

  private stopChain(): void {
    this.chainStopped = true;
    this.chain?.unsubscribe();
  }

  private fail(error: unknown, stage: LockedErrorStage): void {
    let mapped: unknown;
    try {
      mapped = this.mapError(error, stage, stage === 'resolve' ? undefined : this.resources);
    } catch (thrown) {
      mapped = thrown;
    }
    this.subscriber.error(mapped);
  }
}
