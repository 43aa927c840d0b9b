import { once } from 'node:events';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import {
  IoredisNode,
  LockKeyConflictError,
  LockResourceError,
  RedlockConfigError,
  RedlockModule,
} from '../../lib';
import { LOCK_SCRIPTS } from '../../lib/core/protocol/scripts';
import { eventually, RecordingLogger, sharedFleet } from './helpers';

/** Issue 6 items 1-3 and two script mutants, against real redis-server processes. */
describe('node hardening (real nodes)', () => {
  const shared = sharedFleet(3);
  const quiet = new RecordingLogger();

  describe('item 2: one server listed twice under two spellings', () => {
    const spellings = (port: number) => [
      [`redis://127.0.0.1:${port}`, `redis://localhost:${port}`],
      [`redis://127.0.0.1:${port}`, { host: '::ffff:127.0.0.1', port }],
    ];

    it.each([0, 1])('is refused by ready() (spelling %p)', async (which) => {
      const fleet = shared.fleet;
      const [a, b] = spellings(fleet.nodes[0].port)[which];
      const redlock = shared.manager({}, [a, b, fleet.urls()[1]] as never);
      await expect(redlock.ready()).rejects.toThrow(RedlockConfigError);
      await expect(redlock.ready()).rejects.toThrow(
        /nodes\[1\].*same Redis server as nodes\[0\].*run_id/,
      );
    });

    it('fails the Nest bootstrap', async () => {
      const fleet = shared.fleet;
      const moduleRef = Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({
            nodes: [fleet.urls()[0], `redis://localhost:${fleet.nodes[0].port}`, fleet.urls()[1]],
          }),
        ],
      });
      const app = (await moduleRef.compile()).createNestApplication({ logger: false });
      try {
        await expect(app.init()).rejects.toThrow(/same Redis server/);
      } finally {
        await app.close().catch(() => undefined);
      }
    });

    it('a server listed twice is never counted twice: a rival holding the others keeps the lock', async () => {
      const fleet = shared.fleet;
      // Three entries, two of them one server: a rival holding the third entry's node...
      const redlock = shared.manager({}, [
        fleet.urls()[0],
        `redis://localhost:${fleet.nodes[0].port}`,
        fleet.urls()[1],
      ]);
      await redlock.ready().catch(() => undefined);
      await fleet.nodes[1].command('SET', 'redlock:r', 'rival', 'PX', 10_000);
      // ...means one "yes" from the doubled server and one "no": no quorum of 3.
      await expect(redlock.tryAcquire('r')).resolves.toBeNull();
    });
  });

  describe('item 3: input that must be rejected', () => {
    it('a non-string value at a lock key is a LockKeyConflictError, not "unavailable"', async () => {
      const fleet = shared.fleet;
      for (const node of fleet.nodes) await node.command('HSET', 'redlock:conf', 'f', 'v');
      const redlock = shared.manager();
      const error = await redlock.acquire('conf', { wait: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockKeyConflictError);
      expect((error as Error).message).toMatch(/non-string value.*keyPrefix/);
    });

    it('a resource name over maxResourceLength is rejected before any node is asked', async () => {
      const redlock = shared.manager({ maxResourceLength: 256 });
      // Connected and its nodes decided on first: what it sends at start-up is not the point.
      await redlock.ready();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const before = Number(
        /total_commands_processed:(\d+)/.exec(
          String(await shared.fleet.nodes[0].command('INFO', 'stats')),
        )![1],
      );
      await expect(redlock.acquire('x'.repeat(90_000))).rejects.toThrow(LockResourceError);
      await expect(redlock.acquire('é'.repeat(129))).rejects.toThrow(/at most 256 bytes/);
      const after = Number(
        /total_commands_processed:(\d+)/.exec(
          String(await shared.fleet.nodes[0].command('INFO', 'stats')),
        )![1],
      );
      expect(after - before).toBe(1); // only our INFO
      // the default cap is 1024 bytes
      await expect(shared.manager().acquire('y'.repeat(1025))).rejects.toThrow(LockResourceError);
    });

    it('names with lone surrogates are rejected instead of collapsing into one key', async () => {
      const redlock = shared.manager();
      await expect(redlock.acquire('a\uD800')).rejects.toThrow(/lone surrogate/);
      await expect(redlock.acquire('a\uDC00')).rejects.toThrow(LockResourceError);
      const pair = await redlock.acquire('a\uD83D\uDE00');
      await pair.release();
    });

    it('a resource name cannot forge a log line', async () => {
      const logger = new RecordingLogger();
      const redlock = shared.manager({ ttl: 400, nodeTimeout: 50, logger });
      await redlock.acquire('stock:1\n[redlock] forged line', { ttl: 400 });
      expect(await eventually(() => logger.lines.some((l) => l.includes('was lost')), 3_000)).toBe(
        true,
      );
      const line = logger.lines.find((l) => l.includes('was lost'))!;
      expect(line).not.toContain('\n');
      expect(line).toContain('stock:1\\n[redlock] forged line');
    });
  });

  describe('item 1: scripts are loaded whenever a connection becomes ready', () => {
    it('after SCRIPT FLUSH and a reconnect, every script is cached before the first command', async () => {
      const fleet = shared.fleet;
      const client = new Redis(fleet.urls()[0], {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
      });
      const node = IoredisNode.from(client, 200, quiet);
      try {
        await node.whenReady(2_000);
        await fleet.nodes[0].command('SCRIPT', 'FLUSH');
        const reconnected = once(client, 'ready');
        await fleet.nodes[0].command('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
        await reconnected;
        await node.whenReady(2_000);
        const exists = (await fleet.nodes[0].command(
          'SCRIPT',
          'EXISTS',
          ...LOCK_SCRIPTS.map((s) => s.sha),
        )) as number[];
        expect(exists).toEqual(LOCK_SCRIPTS.map(() => 1));
      } finally {
        client.disconnect();
      }
    });
  });

  describe('script mutants', () => {
    it('extend never re-creates a key that expired or was deleted', async () => {
      const redlock = shared.manager();
      const lock = await redlock.acquire('gone');
      for (const node of shared.fleet.nodes) await node.command('DEL', 'redlock:gone');
      await expect(lock.extend()).rejects.toThrow(/no longer holds it/);
      for (const node of shared.fleet.nodes) {
        expect(await node.command('EXISTS', 'redlock:gone')).toBe(0);
      }
    });

    it.each([[['redlock:dup']], [['redlock:dup', 'redlock:dup2']]])(
      'an acquire finding its own value already there never counts it without a fresh lease (keys %p)',
      async (keys) => {
        // A duplicate delivery of one acquire: the keys hold this very value with 100 ms left.
        const client = new Redis(shared.fleet.urls()[0], { maxRetriesPerRequest: 0 });
        const node = IoredisNode.from(client, 200, quiet);
        try {
          await node.whenReady(2_000);
          for (const key of keys) await client.set(key, 'v1', 'PX', 100);
          const reply = await node.acquire(keys, 'v1', 10_000);
          const pttl = await client.pttl(keys[0]);
          // Either it is not a vote, or it is one with the lease it promises.
          if (reply.acquired) expect(pttl).toBeGreaterThan(9_000);
          else expect(reply.pttl).toBeLessThanOrEqual(100);
        } finally {
          client.disconnect();
        }
      },
    );
  });
});
