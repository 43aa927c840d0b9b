import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { RedlockModule, RedlockService } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { onEveryNode } from '../support/eventually';

/**
 * The README's pattern for reusing the app's own Redis connections (issue 10 item 4): a module
 * of the app provides the clients, `forRootAsync` injects them. The lock manager uses them as
 * they are (no connection of its own on the lock path), warns about nothing when they are
 * fail-fast, and leaves closing them to their owner.
 */

let fleet: RedisFleet;

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await fleet?.stop();
});

const LOCK_CLIENTS = Symbol('LOCK_CLIENTS');

@Module({
  providers: [
    {
      provide: LOCK_CLIENTS,
      useFactory: () =>
        fleet.urls().map(
          (url) =>
            new Redis(url, {
              enableOfflineQueue: false,
              maxRetriesPerRequest: 0,
              autoResendUnfulfilledCommands: false,
              commandTimeout: 200,
            }),
        ),
    },
  ],
  exports: [LOCK_CLIENTS],
})
class AppRedisModule implements OnApplicationShutdown {
  constructor(@Inject(LOCK_CLIENTS) private readonly clients: Redis[]) {}
  closed = false;
  onApplicationShutdown() {
    this.closed = true;
    for (const client of this.clients) client.disconnect();
  }
}

it('forRootAsync with clients injected from an app module: used as they are, no warning, not closed by the lock module', async () => {
  const warnings: string[] = [];
  const moduleRef = await Test.createTestingModule({
    imports: [
      AppRedisModule,
      RedlockModule.forRootAsync({
        imports: [AppRedisModule],
        inject: [LOCK_CLIENTS],
        useFactory: (clients: Redis[]) => ({ nodes: clients, nodeTimeout: 200 }),
      }),
    ],
  })
    .setLogger({ log() {}, error() {}, warn: (m: string) => void warnings.push(m) })
    .compile();
  const app = moduleRef.createNestApplication();
  await app.init();
  const clients = app.get<Redis[]>(LOCK_CLIENTS);
  const before = await Promise.all(fleet.nodes.map((n) => n.command('CLIENT', 'LIST')));

  const lock = await app.get(RedlockService).acquire('di-clients');
  expect(await onEveryNode(fleet, 'redlock:di-clients', true)).toBe(true);
  await lock.release();

  const after = await Promise.all(fleet.nodes.map((n) => n.command('CLIENT', 'LIST')));
  expect(after.map((l) => String(l).trim().split('\n').length)).toEqual(
    before.map((l) => String(l).trim().split('\n').length),
  ); // no connection of the lock manager's own
  expect(warnings.filter((w) => w.includes('Redis node'))).toEqual([]);

  // The lock module does not close them; their owner does, in its own shutdown hook.
  await app.get(RedlockService).onApplicationShutdown();
  expect(clients.every((c) => c.status === 'ready')).toBe(true);
  await app.close();
  expect(app.get(AppRedisModule).closed).toBe(true);
});

it('a client with settings that can wait gets one warning line per node, naming what to set', async () => {
  const warnings: string[] = [];
  const client = new Redis(fleet.nodes[0].url);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: [client, ...fleet.urls().slice(1)] })],
  })
    .setLogger({ log() {}, error() {}, warn: (m: string) => void warnings.push(m) })
    .compile();
  await moduleRef.init();
  const lines = warnings.filter((w) => w.includes('Redis node'));
  expect(lines).toEqual([
    `Redis node 127.0.0.1:${fleet.nodes[0].port}: your client can make commands wait while the node is down or hung; ` +
      'create it with { enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false } ' +
      '(lock attempts stay bounded by nodeTimeout)',
  ]);
  await moduleRef.close();
  client.disconnect();
});
