import { IoredisNode, Redlock } from '../../lib';
import { eventually, RecordingLogger, sharedFleet } from './helpers';

/**
 * Issue 16 defect 11: `close()` closes only what its lock manager created. `IoredisNode`
 * adapters the caller built and passed in are the caller's: two lock managers may share them,
 * and closing one must not break the other.
 */
describe('adapters passed in by the caller (3 real nodes)', () => {
  const shared = sharedFleet(3);

  it("closing one of two lock managers that share the caller's IoredisNode adapters leaves the other working", async () => {
    const logger = new RecordingLogger();
    const adapters = shared.fleet.urls().map((url) => IoredisNode.from(url, 500, logger));
    shared.afterTest(async () => {
      await Promise.all(adapters.map((adapter) => adapter.close()));
    });
    const first = new Redlock(adapters, { logger });
    const second = new Redlock(adapters, { logger });
    await (await first.acquire('shared', { wait: 2_000 })).release();
    await first.close();
    // The adapters' connections are still open, and the other manager still locks through them.
    expect(adapters.map((adapter) => adapter.client.status)).toEqual(['ready', 'ready', 'ready']);
    const lock = await second.acquire('shared', { wait: 2_000 });
    expect(lock.isValid()).toBe(true);
    await lock.release();
    await second.close();
    expect(adapters.map((adapter) => adapter.client.status)).toEqual(['ready', 'ready', 'ready']);
  });

  it('the adapters a lock manager built from URLs are closed by its close()', async () => {
    const redlock = new Redlock(shared.fleet.urls(), { logger: new RecordingLogger() });
    await (await redlock.acquire('own', { wait: 2_000 })).release();
    const adapters = (redlock as unknown as { parts: { nodes: IoredisNode[] } }).parts.nodes;
    await redlock.close();
    expect(
      await eventually(() => adapters.every((adapter) => adapter.client.status === 'end')),
    ).toBe(true);
  });
});
