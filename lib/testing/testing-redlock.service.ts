import { Inject, Injectable } from '@nestjs/common';
import {
  LockLostError,
  LockNotAcquiredError,
  REDLOCK_DEFAULTS,
  REDLOCK_MODULE_OPTIONS,
  RedlockService,
  type HoldSettings,
  type HoldWork,
  type Lock,
  type LockNotAcquiredReason,
  type LockOptions,
  type LockedRoutine,
  type RedlockModuleOptions,
  type Resources,
} from 'nestjs-redlock';
import type { InMemoryRedisNode } from './in-memory-node';

/** A failure forced on the next acquisition touching a resource. */
interface ForcedFailure {
  readonly resource: string;
  readonly reason: LockNotAcquiredReason;
  readonly retryAfterMs?: number;
}

/**
 * The `RedlockService` of `RedlockTestingModule`: the real lock manager over one
 * {@link InMemoryRedisNode}, plus what {@link RedlockTesting} needs to force failures. Injected
 * under the `RedlockService` token, so the app's own code, `@Locked` and `@CurrentLock` use it.
 */
@Injectable()
export class TestingRedlockService extends RedlockService {
  private readonly forced: ForcedFailure[] = [];
  /** The in-memory node the locks live on (the module's only node). */
  readonly node: InMemoryRedisNode;
  /** Where lock keys live on the node. */
  readonly keyPrefix: string;

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    super(options);
    this.node = options.nodes[0] as InMemoryRedisNode;
    this.keyPrefix = options.keyPrefix ?? REDLOCK_DEFAULTS.keyPrefix;
  }

  /** Queues a failure for the next acquisition whose resources include `resource`. */
  force(failure: ForcedFailure): void {
    this.forced.push(failure);
  }

  /** Drops every forced failure not yet used. */
  clearForced(): void {
    this.forced.length = 0;
  }

  override async acquire(resources: Resources, options?: LockOptions): Promise<Lock> {
    this.throwIfForced(resources);
    return super.acquire(resources, options);
  }

  override async tryAcquire(resources: Resources, options?: LockOptions): Promise<Lock | null> {
    try {
      this.throwIfForced(resources);
    } catch (error) {
      // As the real one: a held lock is null, an outage throws.
      if (error instanceof LockNotAcquiredError && error.reason === 'held') return null;
      throw error;
    }
    return super.tryAcquire(resources, options);
  }

  override using<T>(resources: Resources, routine: LockedRoutine<T>): Promise<T>;
  override using<T>(
    resources: Resources,
    options: LockOptions,
    routine: LockedRoutine<T>,
  ): Promise<T>;
  override async using<T>(
    resources: Resources,
    optionsOrRoutine: LockOptions | LockedRoutine<T>,
    routine?: LockedRoutine<T>,
  ): Promise<T> {
    this.throwIfForced(resources);
    return typeof optionsOrRoutine === 'function'
      ? super.using(resources, optionsOrRoutine)
      : super.using(resources, optionsOrRoutine, routine as LockedRoutine<T>);
  }

  /** `@Locked` holds its calls' locks through this: a forced failure applies to it too. */
  override async hold<T>(
    resources: Resources,
    options: LockOptions | undefined,
    work: HoldWork<T>,
    settings?: HoldSettings,
  ): Promise<T> {
    this.throwIfForced(resources);
    return super.hold(resources, options, work, settings);
  }

  /**
   * Declares `lock` lost now: its signal aborts with LockLostError, as on a real loss. A nested
   * (reentrant) handle loses the one lock it borrows — the lease on the nodes is the outer
   * holder's — so every holder of it is told.
   */
  lose(lock: Lock, detail: string): boolean {
    const lease = ((lock as Lock & { root?: Lock }).root ?? lock) as Lock & {
      markLost?: (error: LockLostError) => boolean;
    };
    if (typeof lease.markLost !== 'function') return false;
    return lease.markLost(new LockLostError(lock.resources, detail));
  }

  private throwIfForced(resources: Resources): void {
    const names = [...new Set(typeof resources === 'string' ? [resources] : resources)].sort();
    const index = this.forced.findIndex((f) => names.includes(f.resource));
    if (index < 0) return;
    const [failure] = this.forced.splice(index, 1);
    throw new LockNotAcquiredError(
      names,
      failure.reason,
      1,
      [{ node: this.node.name, outcome: failure.reason === 'held' ? 'held' : 'timeout' }],
      failure.reason === 'held' ? (failure.retryAfterMs ?? 1_000) : undefined,
    );
  }
}
