import { LockNotAcquiredError, RedlockPermissionError, type RedlockOptions } from '../../lib';
import { RecordingLogger, sharedFleet } from './helpers';

/**
 * Issue 25, friction 1: a Redis user without a permission the library needs booted without a
 * word, and every lock then failed as unavailable after its whole `wait`. Real ACL users on real
 * redis-server nodes: `ready()` fails naming the ACL category and the `ACL SETUSER` that grants
 * it, an acquisition fails at once, `health()` says why each answering node does not count, and
 * ioredis does not print its "Skipping the ready check" for every connection.
 */
const shared = sharedFleet(3);

/** Creates `user` (password `pw`) on every node with `rules`, and the URLs that log in as it. */
async function aclUser(user: string, ...rules: string[]): Promise<string[]> {
  for (const node of shared.fleet.nodes) {
    await node.command('ACL', 'SETUSER', user, 'reset', 'on', '>pw', '~*', '&*', ...rules);
  }
  shared.afterTest(async () => {
    for (const node of shared.fleet.nodes) await node.command('ACL', 'DELUSER', user);
  });
  return shared.fleet.nodes.map((n) => `redis://${user}:pw@127.0.0.1:${n.port}`);
}

function managerAs(urls: string[], options: RedlockOptions = {}, logger = new RecordingLogger()) {
  return shared.manager({ logger, nodeTimeout: 100, ...options }, urls);
}

describe('the Redis user may not run what the library needs', () => {
  it('without @scripting: ready() fails naming @scripting and the ACL SETUSER that grants it; a lock fails at once, not after wait', async () => {
    const urls = await aclUser('noscripts', '+@all', '-@scripting');
    const redlock = managerAs(urls);
    const error = await redlock.ready().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockPermissionError);
    const message = String((error as Error).message);
    expect(message.split('\n')[0]).toMatch(
      /^Redis user "noscripts" may not run what nestjs-redlock needs on /,
    );
    expect(message).toContain('@scripting');
    expect(message).toContain('ACL SETUSER noscripts +@scripting');

    const started = performance.now();
    const refused = await redlock.acquire('r', { wait: 10_000 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RedlockPermissionError);
    // Generous: the bug was the whole 10 s wait.
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('without INFO: ready() fails naming +info; with trustUnidentifiedNodes it starts, and says so once per node', async () => {
    const urls = await aclUser('noinfo', '+@all', '-info');
    const error = await managerAs(urls)
      .ready()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockPermissionError);
    expect(String(error)).toContain('ACL SETUSER noinfo +info');
    expect(String(error)).toContain('@dangerous');

    const logger = new RecordingLogger();
    const trusting = managerAs(urls, { trustUnidentifiedNodes: true }, logger);
    await trusting.ready();
    const lock = await trusting.acquire('r', { wait: 0 });
    await lock.release();
    expect(logger.lines.filter((l) => /may not run INFO.*\+info/.test(l))).toHaveLength(3);
  });

  it('without MGET: a fair lock manager fails to start naming +mget (its release reads the key and its marks in one MGET); fairness off starts', async () => {
    const urls = await aclUser('nomget', '+@all', '-mget');
    const error = await managerAs(urls, { fairness: 'queue' })
      .ready()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockPermissionError);
    expect(String(error)).toContain('ACL SETUSER nomget +mget');
    const plain = managerAs(urls, { fairness: 'off' });
    await plain.ready();
    await (await plain.acquire('r', { wait: 0 })).release();
  });

  it('without channel permissions: notifications need @pubsub; with notifications: false the start goes on with a warning', async () => {
    const urls = await aclUser('nochannels', '+@all', 'resetchannels');
    const error = await managerAs(urls)
      .ready()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockPermissionError);
    expect(String(error)).toMatch(/PUBLISH and SUBSCRIBE.*@pubsub/);
    expect(String(error)).toContain('ACL SETUSER nochannels +@pubsub &redlock:*');
    expect(String(error)).toContain('notifications: false');

    const logger = new RecordingLogger();
    const polling = managerAs(urls, { notifications: false }, logger);
    await polling.ready();
    const lock = await polling.acquire('r', { wait: 0 });
    await lock.release();
    expect(logger.lines.filter((l) => /may not PUBLISH/.test(l))).toHaveLength(3);
  });

  it('health() agrees with itself: nodes that answer but cannot count say why', async () => {
    const urls = await aclUser('noinfo2', '+@all', '-info');
    const redlock = managerAs(urls);
    await redlock.ready().catch(() => undefined);
    const health = await redlock.health();
    expect(health.up).toBe(false);
    for (const node of health.nodes) {
      expect(node).toMatchObject({ up: true, voting: false });
      expect(node.reason).toMatch(/INFO/);
    }
    const fine = shared.manager({ nodeTimeout: 100 });
    await fine.ready();
    const ok = await fine.health();
    expect(ok.up).toBe(true);
    expect(ok.nodes.every((node) => node.up && node.voting && node.reason === undefined)).toBe(
      true,
    );
  });

  it('ioredis prints "Skipping the ready check" at most once per node, not for every connection', async () => {
    const urls = await aclUser('noinfo3', '+@all', '-info');
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const redlock = managerAs(urls, { trustUnidentifiedNodes: true });
      await redlock.ready();
      // A waiter opens the subscriber connections too.
      const held = await redlock.acquire('busy');
      const waiting = redlock.acquire('busy', { wait: 1_000 }).catch((e: unknown) => e);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await held.release();
      const second = await waiting;
      if (!(second instanceof LockNotAcquiredError))
        await (second as { release(): Promise<void> }).release();
      const skipping = warn.mock.calls.filter((call) =>
        /Skipping the ready check/.test(String(call[0])),
      );
      expect(skipping.length).toBeLessThanOrEqual(3);
    } finally {
      warn.mockRestore();
    }
  });
});
