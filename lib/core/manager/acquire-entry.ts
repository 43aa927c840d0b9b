import type { AsyncLocalStorage } from 'node:async_hooks';
import { shuttingDown, type AcquisitionCall } from '../acquisition/acquisition';
import { FairQueue } from '../acquisition/fair-queue';
import { fenceKeysOf } from '../quorum/fencing';
import type { RedlockLock, ReentrantLock } from '../lease/lock';
import type { LockScope } from '../lease/lock-session';
import { resolveCallSettings, type CallSettings, type LockOptions } from '../options';
import { normalizeResources, type Resources } from '../resources';
import { retrySplitVotes, type SplitVoteParts } from '../quorum/split-vote';
import type { AcquireTrace } from '../observability/telemetry';
import { assertCanFence, type ManagerParts } from './parts';
import { raceAbort } from './race-abort';
import { nestedLock } from './reentrancy';
import { CONNECT_WAIT_MS, type Startup } from './startup';

/** How one acquisition is asked for, beyond its options. */
export interface AcquireRequest {
  /** Overrides `wait` (`tryAcquire()`: 0). */
  readonly wait?: number;
  /** Rounds that failed as `unavailable` are retried within the split-vote window too. */
  readonly retryUnavailable?: boolean;
}

/**
 * Where every acquisition of a lock manager starts (`acquire`, `tryAcquire`, `using`, `hold`):
 * the reentrancy check (a nested handle is no acquisition), the trace, the start-up wait, the
 * access check, fence floors, then the waiting loop — in the fair queue when the call waits in
 * one, else the loop of architecture.md §5.2 — and the one retry policy for a round nobody won
 * (split-vote.ts).
 */
export class AcquireEntry {
  private readonly splitVotes: SplitVoteParts;

  constructor(
    private readonly parts: ManagerParts,
    private readonly scope: AsyncLocalStorage<LockScope>,
    private readonly startup: Startup,
    /** What every node says about a resource (`Redlock.inspect`), for the split-vote policy. */
    inspect: SplitVoteParts['inspect'],
  ) {
    this.splitVotes = {
      clock: parts.clock,
      inspect,
      draining: parts.draining.signal,
      random: parts.random ?? Math.random,
      everyNodeVotes: () => parts.membership.voters().every(Boolean),
    };
  }

  /** A new lock, or a nested handle on the lock this async context holds (reentrancy). */
  async take(
    resources: Resources,
    options: LockOptions | undefined,
    request: AcquireRequest = {},
  ): Promise<RedlockLock | ReentrantLock> {
    const names = normalizeResources(resources, this.parts.options.maxResourceLength);
    const settings = resolveCallSettings(this.parts.options, options);
    const signal = options?.signal;
    signal?.throwIfAborted();
    const nested = nestedLock(this.scope.getStore(), names, settings.reentrant, settings.fencing);
    if (nested !== undefined) return nested;
    // The first acquisitions wait for the API's import (a few ms at most, once per process),
    // so that they are traced like any other.
    if (this.startup.instrumenting !== undefined) await this.startup.instrumenting;
    // Read after the reentrancy check: a nested handle is no acquisition of its own.
    const trace = this.parts.observer.telemetry?.startAcquire(names);
    if (trace === undefined) return this.acquireNew(names, settings, signal, request);
    try {
      const lock = await trace.run(() => this.acquireNew(names, settings, signal, request, trace));
      trace.succeeded();
      return lock;
    } catch (error) {
      trace.failed(error, signal);
      throw error;
    }
  }

  /** A new lock (not a nested handle): the waiting loop of architecture.md §5.2. */
  private async acquireNew(
    names: string[],
    settings: CallSettings,
    signal: AbortSignal | undefined,
    request: AcquireRequest,
    trace?: AcquireTrace,
  ): Promise<RedlockLock> {
    const { clock, draining, access, membership, options } = this.parts;
    if (draining.signal.aborted) throw shuttingDown(names, 0);
    if (settings.fencing) assertCanFence(this.parts.nodes);
    const connecting = this.startup.connecting;
    if (connecting) {
      try {
        await raceAbort(connecting, signal, draining.signal);
      } catch (error) {
        signal?.throwIfAborted();
        if (draining.signal.aborted) throw shuttingDown(names, 0);
        throw error;
      }
    }
    const refused = access.refusal();
    if (refused !== undefined) throw refused;
    if (settings.fencing) {
      // Fence floors complete on a quorum first (restored from peers after a restart, §5.6).
      const fences = membership.fences(CONNECT_WAIT_MS);
      if (fences !== undefined) await raceAbort(fences, signal, draining.signal);
    }
    const prefix = options.keyPrefix;
    const keys = prefix === '' ? names : names.map((name) => prefix + name);
    // The node's fence floor too: it carries the highest token across a restart (architecture.md §5.6).
    const fenceKeys = settings.fencing ? [...fenceKeysOf(keys), membership.keys.floor] : undefined;
    const startedAt = clock.now();
    const giveUpAt = startedAt + (request.wait ?? settings.wait);
    const call: AcquisitionCall = {
      names,
      keys,
      fenceKeys,
      settings,
      signal,
      startedAt,
      giveUpAt,
      trace,
    };
    try {
      return await this.attempt(call);
    } catch (failure) {
      // One retry policy (split-vote.ts): a round nobody won is not reported as `held`. A retry
      // is one more attempt, made now.
      const retryUnavailable = request.retryUnavailable;
      return retrySplitVotes(
        failure,
        {
          names,
          startedAt,
          retryDelay: settings.retryDelay,
          retryJitter: settings.retryJitter,
          signal,
          settles: giveUpAt === startedAt || retryUnavailable === true,
          retryUnavailable,
        },
        this.splitVotes,
        // Once per round nobody won, not per acquisition: the spread keeps every field of the call.
        // eslint-disable-next-line no-restricted-syntax
        () => this.attempt({ ...call, giveUpAt: clock.now() }),
      );
    }
  }

  /** Attempts until `call` gives up: in the fair queue when it waits in one, else the loop. */
  private attempt(call: AcquisitionCall): Promise<RedlockLock> {
    const fair = this.parts.fair;
    return fair !== undefined && FairQueue.eligible(call)
      ? fair.acquire(call)
      : this.parts.acquisition.acquire(call);
  }
}
