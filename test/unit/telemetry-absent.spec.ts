import { Redlock } from '../../lib';
import { loadOtelApi } from '../../lib/core/observability/telemetry';
import { MemoryNode } from './memory-node';

// The optional peer is not installed: importing it fails as Node would fail it.
jest.mock('@opentelemetry/api', () => {
  throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), {
    code: 'MODULE_NOT_FOUND',
  });
});

const quiet = { log() {}, warn() {}, error() {} };

/** Issue 11 acceptance: the package loads and locks without @opentelemetry/api installed. */
describe('without @opentelemetry/api', () => {
  it('the API counts as absent, and locks work with telemetry on (the default)', async () => {
    await expect(loadOtelApi()).resolves.toBeUndefined();
    const redlock = new Redlock(
      ['a', 'b', 'c'].map((name) => new MemoryNode(name)),
      { logger: quiet },
    );
    try {
      const lock = await redlock.acquire('r');
      expect(redlock.heldLocks()).toHaveLength(1);
      await lock.extend();
      await lock.release();
      expect(
        (redlock as unknown as { parts: { observer: { telemetry?: unknown } } }).parts.observer
          .telemetry,
      ).toBeUndefined();
      expect(await redlock.tryAcquire('r')).not.toBeNull();
    } finally {
      await redlock.close();
    }
  });
});
