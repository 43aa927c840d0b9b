import Redis from 'ioredis';
import { IoredisNode, type Lock } from '../../lib';
import { fenceKeysOf } from '../../lib/core/quorum/fencing';
import { delay, RecordingLogger, sharedFleet } from './helpers';

/** Issue 7 item 1 and 6: quorum-issued fencing tokens on a real 5-node fleet. */
describe('fencing tokens (5 real nodes)', () => {
  const shared = sharedFleet(5);

  it('strictly increase over 1 000 successive holders from two lock managers', async () => {
    const managers = [shared.manager({ fencing: true }), shared.manager({ fencing: true })];
    const tokens: number[] = [];
    // Two concurrent loops: the holder order is the order in which tokens are recorded, since
    // only the holder records.
    await Promise.all(
      managers.map(async (redlock) => {
        for (let i = 0; i < 500; i++) {
          const lock = await redlock.acquire('counter', { retryDelay: 1, retryJitter: 2 });
          tokens.push(lock.fencingToken!);
          await lock.release();
        }
      }),
    );
    expect(tokens).toHaveLength(1_000);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });

  it('still increase after a minority of nodes is killed and restarted empty', async () => {
    const redlock = shared.manager({ fencing: true, quarantine: false });
    const before = await redlock.acquire(['x', 'y']);
    await before.extend();
    const token = before.fencingToken!;
    await before.release();
    await Promise.all([shared.fleet.nodes[0].restart(), shared.fleet.nodes[1].restart()]);
    const after: Lock[] = [];
    for (let i = 0; i < 20; i++) {
      const lock = await redlock.acquire(['y', 'x'], { wait: 5_000 });
      after.push(lock);
      await lock.release();
    }
    expect(after[0].fencingToken).toBeGreaterThan(token);
    for (let i = 1; i < after.length; i++) {
      expect(after[i].fencingToken).toBeGreaterThan(after[i - 1].fencingToken!);
    }
  });

  it('phase 2 on a node where the key expired raises no counter and says so', async () => {
    const client = new Redis(shared.fleet.urls()[0], { maxRetriesPerRequest: 0 });
    const node = IoredisNode.from(client, 200, new RecordingLogger());
    try {
      await node.whenReady(2_000);
      const keys = ['redlock:late'];
      const reply = await node.acquire(keys, 'v', 100, fenceKeysOf(keys));
      expect(reply.acquired).toBe(true);
      const token = (reply as { fence: number }).fence + 1;
      await delay(150); // a holder paused past its lease
      await expect(node.fence(keys, fenceKeysOf(keys), 'v', token, 60_000)).resolves.toBe(false);
      expect(await client.get(fenceKeysOf(keys)[0])).toBeNull();
      // and in time, it does raise the counter (as an exact decimal)
      await node.acquire(keys, 'w', 10_000, fenceKeysOf(keys));
      await expect(node.fence(keys, fenceKeysOf(keys), 'w', token, 60_000)).resolves.toBe(true);
      expect(await client.get(fenceKeysOf(keys)[0])).toBe(String(token));
    } finally {
      client.disconnect();
    }
  });
});
