import { IoredisNode } from '../../lib';
import { fenceKeysOf } from '../../lib/core/quorum/fencing';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay } from './helpers';

/**
 * The node port's contract (lib/core/nodes/node.ts) as the Lua scripts and commands keep it on a real
 * Redis server, asked directly through the ioredis adapter: the parts the lock manager's own
 * tests cannot see on one machine (all nodes share one clock; nothing else writes the counters).
 * Each test here was written against a mutant of lib/core/protocol/scripts.ts that every other test let
 * through (issue 9 item 5; test/unit/mutation-survivors.spec.ts lists them).
 */
describe('lock scripts on a real node (the port contract)', () => {
  let fleet: RedisFleet;
  let node: IoredisNode;
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

  beforeAll(async () => {
    fleet = await startFleet(1);
    node = IoredisNode.from(fleet.nodes[0].url, 1_000, quiet);
    await node.whenReady(5_000);
  });
  afterAll(async () => {
    await node?.close();
    await fleet?.stop();
  });

  it('a refused acquisition reports the blocking lease left (one key and several)', async () => {
    await fleet.nodes[0].command('SET', 'k:held', 'someone', 'PX', 5_000);
    for (const keys of [['k:held'], ['k:free', 'k:held']]) {
      const reply = await node.acquire(keys, 'me', 1_000);
      expect(reply.acquired).toBe(false);
      const { pttl } = reply as { pttl: number };
      expect(pttl).toBeGreaterThan(3_000);
      expect(pttl).toBeLessThanOrEqual(5_000);
    }
    expect(await fleet.nodes[0].command('EXISTS', 'k:free')).toBe(0);
  });

  it('release returns how many keys it deleted: only those that hold our value', async () => {
    expect((await node.acquire(['r:1', 'r:2'], 'mine', 10_000)).acquired).toBe(true);
    expect(await node.release(['r:1', 'r:2'], 'not-mine')).toBe(0);
    expect(await node.release(['r:1', 'r:2'], 'mine')).toBe(2);
    expect(await node.release(['r:1', 'r:2'], 'mine')).toBe(0);
  });

  it('a fenced acquisition returns at least every fence counter, also one ahead of the clock', async () => {
    // A counter far ahead of this server's TIME: a token issued through a node whose clock ran
    // ahead. The next token must still be above it.
    const ahead = '9000000000000000';
    const [fence] = fenceKeysOf(['f:ahead']);
    await fleet.nodes[0].command('SET', fence, ahead);
    const reply = await node.acquire(['f:ahead'], 'me', 10_000, [fence]);
    expect(reply).toMatchObject({ acquired: true });
    expect((reply as { fence: number }).fence).toBeGreaterThanOrEqual(Number(ahead));
    await node.release(['f:ahead'], 'me');
  });

  it("a fenced acquisition on a node that lost its counters still starts from the server's time", async () => {
    const [fence] = fenceKeysOf(['f:lost']);
    const first = await node.acquire(['f:lost'], 'a', 10_000, [fence]);
    const token = (first as { fence: number }).fence;
    expect(await node.fence!(['f:lost'], [fence], 'a', token + 1, 60_000)).toBe(true);
    await node.release(['f:lost'], 'a');
    await fleet.nodes[0].command('DEL', fence); // a restart without persistence
    const second = await node.acquire(['f:lost'], 'b', 10_000, [fence]);
    expect((second as { fence: number }).fence).toBeGreaterThanOrEqual(token);
    // The seed is TIME in µs: within a minute of this host's clock.
    expect(Math.abs((second as { fence: number }).fence / 1_000 - Date.now())).toBeLessThan(60_000);
    await node.release(['f:lost'], 'b');
  });

  it('fence phase 2 raises a counter and never lowers it', async () => {
    const [fence] = fenceKeysOf(['f:max']);
    expect((await node.acquire(['f:max'], 'me', 10_000)).acquired).toBe(true);
    expect(await node.fence!(['f:max'], [fence], 'me', 500, 60_000)).toBe(true);
    expect(await fleet.nodes[0].command('GET', fence)).toBe('500');
    expect(await node.fence!(['f:max'], [fence], 'me', 200, 60_000)).toBe(true);
    expect(await fleet.nodes[0].command('GET', fence)).toBe('500');
    // and it keeps it for the time asked
    const pttl = Number(await fleet.nodes[0].command('PTTL', fence));
    expect(pttl).toBeGreaterThan(50_000);
    expect(pttl).toBeLessThanOrEqual(60_000);
    await node.release(['f:max'], 'me');
  });

  it('fence phase 2 raises an existing counter, and the floor with it (issue 16: a surviving mutant only set absent ones)', async () => {
    const [fence] = fenceKeysOf(['f:raise']);
    const floor = 'f:floor';
    expect((await node.acquire(['f:raise'], 'me', 10_000)).acquired).toBe(true);
    expect(await node.fence!(['f:raise'], [fence, floor], 'me', 500, 60_000)).toBe(true);
    expect(await node.fence!(['f:raise'], [fence, floor], 'me', 800, 60_000)).toBe(true);
    expect(await fleet.nodes[0].command('GET', fence)).toBe('800');
    expect(await fleet.nodes[0].command('GET', floor)).toBe('800');
    await node.release(['f:raise'], 'me');
    // The next holder's phase 1 reads at least the floor, whichever resource it locks.
    const next = await node.acquire(['f:other'], 'you', 10_000, [
      ...fenceKeysOf(['f:other']),
      floor,
    ]);
    expect((next as { fence: number }).fence).toBeGreaterThanOrEqual(800);
    await node.release(['f:other'], 'you');
  });

  it('the membership scripts: a horizon never lowered that expires with itself; a marker of the server’s own run_id; a floor never lowered, restored only on the surveyed incarnation', async () => {
    const keys = { horizon: 'm:horizon', born: 'm:born', floor: 'm:floor', fenced: 'm:fenced:f1' };
    const info = String(await fleet.nodes[0].command('INFO', 'server'));
    const runId = /run_id:(\w+)/.exec(info)![1];
    const first = await node.readStanding!(keys);
    expect(first).toEqual({
      runId,
      uptimeSeconds: expect.any(Number),
      born: undefined,
      horizons: {},
      floor: 0,
      fenced: undefined,
    });
    await node.recordHorizon!(keys, 5_000, ['a', 'b']);
    await node.recordHorizon!(keys, 1_000, ['a', 'c']);
    const standing = await node.readStanding!(keys);
    // Filed under each run_id given; never lowered.
    expect(Object.keys(standing.horizons).sort()).toEqual(['a', 'b', 'c']);
    expect(standing.horizons.a).toBeGreaterThan(4_000);
    expect(standing.horizons.a).toBeLessThanOrEqual(5_000);
    expect(standing.horizons.c).toBeLessThanOrEqual(1_000);
    // The marker names the server's own run_id, read by the script, and never expires.
    expect(standing.born).toBe(runId);
    expect(Number(await fleet.nodes[0].command('PTTL', keys.born))).toBe(-1);
    const pttl = Number(await fleet.nodes[0].command('PTTL', keys.horizon));
    expect(pttl).toBeGreaterThan(4_000);
    expect(pttl).toBeLessThanOrEqual(5_000);
    // A marker written before is never replaced (it is how a restart proves its data survived).
    await fleet.nodes[0].command('SET', keys.born, 'an-earlier-run');
    await node.recordHorizon!(keys, 5_000, []);
    expect((await node.readStanding!(keys)).born).toBe('an-earlier-run');
    // A horizon that has passed is dropped from the hash by the next record.
    await delay(1_100);
    await node.recordHorizon!(keys, 5_000, ['d']);
    expect(await fleet.nodes[0].command('HEXISTS', keys.horizon, 'c')).toBe(0);
    // A floor restore for another incarnation writes nothing.
    await expect(node.restoreFloor!(keys, 'another-run', 900, 60_000)).resolves.toBe(false);
    expect(await node.readStanding!(keys)).toMatchObject({ floor: 0, fenced: undefined });
    await expect(node.restoreFloor!(keys, runId, 700, 60_000)).resolves.toBe(true);
    await expect(node.restoreFloor!(keys, runId, 300, 60_000)).resolves.toBe(true);
    expect(await node.readStanding!(keys)).toMatchObject({ floor: 700, fenced: runId });
  });
});
