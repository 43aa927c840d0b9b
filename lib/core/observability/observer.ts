import type { EventEmitter } from 'node:events';
import type { LockLostError, LockNotAcquiredReason, NodeOutcome } from '../errors';
import type { RedlockEvents } from './events';
import type { Lock, RedlockLock } from '../lease/lock';
import type { RedlockLogger } from './logger';
import type { NodeHealth } from '../nodes/node';
import type { AcquireTrace, RedlockTelemetry } from './telemetry';

/**
 * Everything a lock manager tells the outside world about what happened, in one place: the
 * events of {@link RedlockEvents}, the OpenTelemetry spans and metrics, and the log lines.
 *
 * The parts of the lock manager (the acquisition loop, the fair queue, restart detection, the
 * held-lock registry) report facts here — "acquired", "a node went down", "a lock was lost" —
 * and never emit, trace or log by hand: one place decides what each fact becomes on each
 * channel. Nothing is built while nobody listens (an event object only for a listener, a span
 * only while OpenTelemetry records), so the lock path costs the same with or without it.
 */
export class LockObserver {
  /** OpenTelemetry, once `@opentelemetry/api` is loaded; unset without it or with `telemetry: false`. */
  telemetry?: RedlockTelemetry;

  constructor(
    private readonly events: Pick<EventEmitter<RedlockEvents>, 'emit' | 'listenerCount'>,
    /** Where warnings and notices go (the lock manager's logger). */
    readonly logger: RedlockLogger,
    private readonly now: () => number,
  ) {}

  /**
   * Attempt `attempts` was granted: the trace (when one records) learns what each node answered,
   * read only if it is recorded.
   */
  granted(
    trace: AcquireTrace | undefined,
    attempts: number,
    outcomes: () => readonly NodeOutcome[],
  ): void {
    if (trace === undefined) return;
    trace.attempts = attempts;
    trace.granted(outcomes);
  }

  /** An acquisition got its lock after `attempts` attempts (0: handed over in this process). */
  acquired(resources: readonly string[], attempts: number, startedAt: number, lock: Lock): void {
    // Built only for a listener: nothing on the hot path while nobody listens.
    if (this.events.listenerCount('acquired') === 0) return;
    this.events.emit('acquired', {
      resources,
      attempts,
      waitMs: this.now() - startedAt,
      validityMs: lock.remainingMs(),
      fencingToken: lock.fencingToken,
    });
  }

  /** Attempt `attempt` of an acquisition failed (it may be retried). */
  attemptFailed(
    resources: readonly string[],
    attempt: number,
    reason: LockNotAcquiredReason,
    nodes: readonly NodeOutcome[],
    trace?: AcquireTrace,
  ): void {
    if (trace !== undefined) {
      trace.attempts = attempt;
      trace.attemptFailed(attempt, reason, nodes);
    }
    if (this.events.listenerCount('attemptFailed') === 0) return;
    this.events.emit('attemptFailed', { resources, attempt, reason, nodes });
  }

  /**
   * Runs one release round of `lock` (traced when OpenTelemetry records), after telling the
   * listeners of `released` — a lost lock is not released by its holder, so they hear nothing.
   */
  release(lock: RedlockLock, round: () => Promise<void>): Promise<void> {
    const heldMs = lock.lostReason === undefined ? this.now() - lock.acquiredAt : undefined;
    if (heldMs !== undefined && this.events.listenerCount('released') > 0) {
      this.events.emit('released', { resources: lock.resources, heldMs });
    }
    const telemetry = this.telemetry;
    const span = telemetry?.startRound('redlock.release', lock.resources);
    if (telemetry === undefined || span === undefined) return round();
    return telemetry.traceRelease(span, heldMs, round);
  }

  /** Runs one extension round of `lock` to `ttl` (traced when OpenTelemetry records). */
  extend<T extends { deadline: number } | { lost: boolean }>(
    lock: RedlockLock,
    ttl: number,
    round: () => Promise<T>,
  ): Promise<T> {
    const telemetry = this.telemetry;
    const span = telemetry?.startRound('redlock.extend', lock.resources);
    if (telemetry === undefined || span === undefined) return round();
    return telemetry.traceExtend(span, ttl, round);
  }

  /** `lock` was extended: `deadline` is its new end on our clock. */
  extended(lock: Lock, deadline: number): void {
    if (this.events.listenerCount('extended') === 0) return;
    this.events.emit('extended', {
      resources: lock.resources,
      validityMs: deadline - this.now(),
    });
  }

  /** A held lock was lost: what it protected no longer is, so it is always said. */
  lost(lock: Lock, error: LockLostError): void {
    this.logger.warn(error.diagnostic);
    this.telemetry?.lockLost();
    this.events.emit('lockLost', error, lock);
  }

  /** A node's connection changed state. */
  nodeHealth(node: string, state: NodeHealth): void {
    const event = { node };
    if (state === 'down') this.events.emit('nodeDown', event);
    else if (state === 'up') this.events.emit('nodeUp', event);
    else this.events.emit('nodeSlow', event);
    if (state !== 'up') this.telemetry?.nodeError(node, state);
  }

  /** Restart detection keeps `node` out of every quorum for `remainingMs` (architecture.md §5.7). */
  quarantined(node: string, remainingMs: number): void {
    this.events.emit('nodeQuarantined', { node, remainingMs });
  }

  /** `node` counts toward a quorum again. */
  rejoined(node: string): void {
    this.events.emit('nodeRejoined', { node });
  }
}
