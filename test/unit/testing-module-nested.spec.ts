import { Test, type TestingModule } from '@nestjs/testing';
import { LockLostError, RedlockService, type Lock } from '../../lib';
import { RedlockTesting, RedlockTestingModule } from '../../lib/testing';

/**
 * RedlockTestingModule, issue 16 defects 12 and 13: `loseLock()` inside a nested reentrant call,
 * and `health()` / `inspect()` over the in-memory node.
 */
let moduleRef: TestingModule;
let testing: RedlockTesting;
let redlock: RedlockService;

beforeEach(async () => {
  moduleRef = await Test.createTestingModule({
    imports: [RedlockTestingModule.forRoot({ wait: 0, reentrant: true })],
  }).compile();
  await moduleRef.init();
  testing = moduleRef.get(RedlockTesting);
  redlock = moduleRef.get(RedlockService);
});

afterEach(async () => {
  await moduleRef.close();
});

it('loseLock() inside a nested reentrant call declares the lock lost: both holders are told', async () => {
  let outer: Lock | undefined;
  let inner: Lock | undefined;
  const outcome = await redlock
    .using('order:1', async (lock) => {
      outer = lock;
      await redlock.using('order:1', async (nested) => {
        inner = nested;
        testing.loseLock();
      });
    })
    .catch((error: unknown) => error);
  expect(inner?.signal.reason).toBeInstanceOf(LockLostError);
  expect(outer?.signal.reason).toBeInstanceOf(LockLostError);
  expect(outcome).toBeInstanceOf(LockLostError);
});

it('loseLock(nested) with a nested handle from acquire()', async () => {
  const outcome = await redlock
    .using('order:2', async () => {
      const nested = await redlock.acquire('order:2');
      testing.loseLock(nested);
      expect(nested.signal.aborted).toBe(true);
      expect(nested.isValid()).toBe(false);
    })
    .catch((error: unknown) => error);
  expect(outcome).toBeInstanceOf(LockLostError);
});

it('health() is up: the in-memory node answers', async () => {
  const health = await redlock.health();
  expect(health.up).toBe(true);
  expect(health.nodes).toEqual([expect.objectContaining({ up: true })]);
});

it('inspect() says locked (by one holder, for the lease left) while held, free after', async () => {
  const lock = await redlock.acquire('order:3', { ttl: 10_000 });
  const held = await redlock.inspect('order:3');
  expect(held.heldHere).toBe(true);
  expect(held.nodes).toEqual([
    expect.objectContaining({ state: 'locked', holder: expect.any(String) }),
  ]);
  expect(held.nodes[0].remainingMs).toBeGreaterThan(5_000);
  expect(held.nodes[0].remainingMs).toBeLessThanOrEqual(10_000);
  // The tag is opaque: never the owner value.
  expect(held.nodes[0].holder).not.toBe(lock.value);
  await lock.release();
  const free = await redlock.inspect('order:3');
  expect(free.nodes).toEqual([expect.objectContaining({ state: 'free' })]);
  expect(free.heldHere).toBe(false);
});
