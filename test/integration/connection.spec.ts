import Redis from 'ioredis';
import { LockNotAcquiredError, type Redlock, type RedlockOptions } from '../../lib';
import { eventually, sharedFleet } from './helpers';

describe('connections and scripts (3 real nodes)', () => {
  const shared = sharedFleet(3);
  const manager = (nodes: ConstructorParameters<typeof Redlock>[0], options: RedlockOptions = {}) =>
    shared.manager(options, nodes);

  it('a lock taken right after construction does not fail on sockets still connecting', async () => {
    for (let i = 0; i < 5; i++) {
      const lock = await manager(shared.fleet.urls()).tryAcquire(`fresh-${i}`);
      expect(lock).not.toBeNull();
    }
  });

  it('falls back to EVAL when the script cache is empty (as after a restart)', async () => {
    const redlock = manager(shared.fleet.urls());
    await (await redlock.acquire('s')).release();
    for (const node of shared.fleet.nodes) await node.command('SCRIPT', 'FLUSH');
    const lock = await redlock.acquire('s', { wait: 0 });
    await lock.extend();
    await lock.release();
    // release() resolves at quorum; the last deletes land shortly after.
    const gone = async () => {
      const exists = await Promise.all(
        shared.fleet.nodes.map((node) => node.command('EXISTS', 'redlock:s')),
      );
      return exists.every((n) => n === 0);
    };
    expect(await eventually(gone, 2_000)).toBe(true);
  });

  it('a new connection loads only the scripts a server lacks, then every EVALSHA finds them', async () => {
    const loads = async (): Promise<number[]> =>
      Promise.all(
        shared.fleet.nodes.map(async (node) => {
          const stats = String(await node.command('INFO', 'commandstats'));
          const calls = /cmdstat_script\|load:calls=(\d+)/.exec(stats);
          return calls ? Number(calls[1]) : 0;
        }),
      );
    // Every script loaded already (a lock manager ran): a second one sends no source.
    const first = manager(shared.fleet.urls());
    await (await first.acquire('loaded-once')).release();
    const before = await loads();
    const second = manager(shared.fleet.urls());
    await (await second.acquire('loaded-once')).release();
    expect(await loads()).toEqual(before);
    // Only the next one's commands reach the nodes from here on.
    await first.close();
    await second.close();
    // A server without them (SCRIPT FLUSH, as after a restart) gets each one again, and the
    // next lock manager's commands find them: none falls back to EVAL.
    for (const node of shared.fleet.nodes) await node.command('SCRIPT', 'FLUSH');
    for (const node of shared.fleet.nodes) await node.command('CONFIG', 'RESETSTAT');
    const third = manager(shared.fleet.urls());
    const lock = await third.acquire('loaded-again');
    await lock.extend();
    await lock.release();
    const reloaded = await loads();
    expect(reloaded.every((n) => n >= 1)).toBe(true);
    // (The lock manager's one EVAL is its permission probe, which EVALSHA cannot replace.)
    const missed = await Promise.all(
      shared.fleet.nodes.map(async (node) => {
        const stats = String(await node.command('INFO', 'commandstats'));
        const evalsha =
          /cmdstat_evalsha:calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)/.exec(stats);
        return evalsha
          ? { calls: Number(evalsha[1]) > 0, failed: Number(evalsha[2]) + Number(evalsha[3]) }
          : undefined;
      }),
    );
    expect(missed).toEqual(shared.fleet.nodes.map(() => ({ calls: true, failed: 0 })));
  });

  it('uses caller-supplied clients as they are, lazyConnect included', async () => {
    const clients = shared.fleet
      .urls()
      .map(
        (url) =>
          new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 }),
      );
    const redlock = manager(clients);
    const lock = await redlock.acquire('c', { wait: 0 });
    await lock.release();
    await redlock.close();
    for (const client of clients) {
      expect(client.status).toBe('ready');
      client.disconnect();
    }
  });

  it('passes ACL credentials through (and a wrong password makes the node unavailable, not a hang)', async () => {
    for (const node of shared.fleet.nodes)
      // `&*`: Redis 7 gives a new user no channel; release notifications need them (issue 25:
      // without, ready() and the first lock fail naming +@pubsub).
      await node.command('ACL', 'SETUSER', 'locker', 'on', '>pw', '~*', '&*', '+@all');
    const urls = shared.fleet.nodes.map((n) => `redis://locker:pw@127.0.0.1:${n.port}`);
    const lock = await manager(urls).acquire('acl', { wait: 0 });
    await lock.release();
    const wrong = shared.fleet.nodes.map((n) => ({
      host: '127.0.0.1',
      port: n.port,
      username: 'locker',
      password: 'nope',
    }));
    const error = await manager(wrong)
      .acquire('acl', { wait: 0 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).reason).toBe('unavailable');
    expect(String(error)).not.toContain('nope');
    for (const node of shared.fleet.nodes) await node.command('ACL', 'DELUSER', 'locker');
  });
});
