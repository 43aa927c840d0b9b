import { IoredisNode, type AttemptFailedEvent, type RedisNode } from '../../lib';
import { RecordingLogger, sharedFleet } from './helpers';

/**
 * An attempt whose votes cannot count (here: nodes whose `INFO` read keeps failing, so none is
 * let in to vote: restart detection cannot tell whether they lost keys) still writes its key on every node and releases it again, and that release is announced
 * on the key's channel. Found with issue 19's suites under load: the waiter heard its own
 * cleanup's announcement and attempted again at once — thousands of attempts a second
 * ("unavailable (22 038 attempts)"). A release cannot make an unavailable quorum available: such
 * a waiter retries at its retry delay.
 */
describe('an acquisition failing as unavailable does not wake itself (3 nodes)', () => {
  const shared = sharedFleet(3);

  it('retries at its retry delay, not at every announcement of its own cleanup', async () => {
    const logger = new RecordingLogger();
    const built = shared.fleet.urls().map((url) => IoredisNode.from(url, 200, logger));
    shared.afterTest(async () => {
      await Promise.all(built.map((node) => node.close()));
    });
    // Every node's INFO read fails (and fails again when retried): none may vote.
    const nodes: RedisNode[] = built.map(
      (node) =>
        new Proxy(node, {
          get(target, property, receiver) {
            if (property === 'serverInfo') return undefined;
            if (property === 'identityError') return 'failed';
            if (property === 'identify') return () => Promise.resolve();
            const value: unknown = Reflect.get(target, property, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        }),
    );
    const redlock = shared.manager({ retryDelay: 100, retryJitter: 50 }, nodes);
    const failed: AttemptFailedEvent[] = [];
    redlock.on('attemptFailed', (event) => failed.push(event));
    await expect(redlock.acquire('storm', { wait: 2_000 })).rejects.toMatchObject({
      reason: 'unavailable',
    });
    // ~2 000 ms / (100–150 ms) ≈ 14–20 attempts; before the fix, thousands.
    expect(failed.length).toBeGreaterThan(3);
    expect(failed.length).toBeLessThan(60);
  });
});
