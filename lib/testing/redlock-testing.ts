import { Injectable } from '@nestjs/common';
import { RedlockConfigError, RedlockService, type Lock } from 'nestjs-redlock';
import { TestingRedlockService } from './testing-redlock.service';

/**
 * Test controls of `RedlockTestingModule`: force the next acquisition of a resource to fail as
 * `held` (→ 409 from `@Locked`, `null` from `tryAcquire`) or `unavailable` (→ 503), or declare a
 * held lock lost, so an app's error paths can be unit-tested without Redis.
 *
 * @example
 * const testing = moduleRef.get(RedlockTesting);
 * testing.failNextAcquire('stock:42', 'held');
 * await request(app.getHttpServer()).post('/stock/42/decrement').expect(409);
 */
@Injectable()
export class RedlockTesting {
  private readonly service: TestingRedlockService;

  constructor(service: RedlockService) {
    if (!(service instanceof TestingRedlockService)) {
      throw new RedlockConfigError(
        'RedlockTesting',
        'a RedlockService',
        'needs the RedlockService of RedlockTestingModule (do not import RedlockModule beside it)',
      );
    }
    this.service = service;
  }

  /**
   * The next acquisition (`acquire`, `tryAcquire`, `using`, `@Locked`) whose resources include
   * `resource` fails at once with `LockNotAcquiredError` of this `reason`, without waiting; later
   * ones behave normally. Call it several times to fail several acquisitions.
   * @param retryAfterMs for `held`: the holder's remaining lease the error reports (→ `Retry-After`)
   */
  failNextAcquire(
    resource: string,
    reason: 'held' | 'unavailable',
    options: { retryAfterMs?: number } = {},
  ): void {
    this.service.force({ resource, reason, retryAfterMs: options.retryAfterMs });
  }

  /**
   * Declares a held lock lost now, as when its lease ran out on the nodes: `lock.signal` aborts
   * with `LockLostError`, `@Locked` fails the call with it once the method settles, `using()`
   * rejects with it. Without `lock`: the lock of the calling async context (call it from inside
   * the locked code, e.g. from a collaborator the test controls).
   * @throws RedlockConfigError when there is no such held lock
   */
  loseLock(lock: Lock | undefined = this.service.currentLock()): void {
    if (lock === undefined || !this.service.lose(lock, 'forced by RedlockTesting.loseLock()')) {
      throw new RedlockConfigError(
        'loseLock',
        lock === undefined ? undefined : 'a lock',
        'needs a lock that is held: pass one, or call it inside the locked code',
      );
    }
  }

  /** Whether `resource` is locked now (by anyone). */
  isLocked(resource: string): boolean {
    return this.service.node.has(`${this.service.keyPrefix}${resource}`);
  }

  /** Forgets forced failures and every lock (between tests). */
  reset(): void {
    this.service.clearForced();
    this.service.node.clear();
  }
}
