import { IoredisNode } from '../../lib';
import { startLatencyProxy, type LatencyProxy } from '../support/latency-proxy';
import { eventually, RecordingLogger, sharedFleet } from './helpers';

/**
 * Issue 19, what waiting costs the nodes, on real Redis: a subscription answered later than
 * `nodeTimeout` is still confirmed.
 */
describe('what waiting costs (5 nodes)', () => {
  const shared = sharedFleet(5);
  let proxies: LatencyProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    proxies = [];
  });

  it('a subscription answered later than nodeTimeout is still confirmed', async () => {
    // 80 ms each way: every reply comes after 160 ms, beyond the 100 ms nodeTimeout.
    const proxy = await startLatencyProxy(shared.fleet.nodes[0].port, 80);
    proxies.push(proxy);
    const node = IoredisNode.from(proxy.url, 100, new RecordingLogger());
    shared.afterTest(() => node.close());
    await node.whenReady(5_000);
    const stop = node.subscribe('late', () => undefined);
    // Its SUBSCRIBE timed out at 100 ms: subscribed on the server, never confirmed here, so every
    // waiter on the channel polled for as long as it waited.
    expect(await eventually(() => node.listening('late'), 5_000)).toBe(true);
    stop();
  });
});
