import { Injectable, Module, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import {
  RedlockConfigError,
  RedlockModule,
  RedlockService,
  type RedlockModuleOptions,
  type RedlockOptionsFactory,
} from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';

@Injectable()
class NeedsLock {
  constructor(readonly redlock: RedlockService) {}
}

/** A feature module that does NOT import RedlockModule: it resolves only if the module is global. */
@Module({ providers: [NeedsLock], exports: [NeedsLock] })
class FeatureModule {}

class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log() {}
  error(message: unknown, ...rest: unknown[]) {
    this.lines.push(`error ${String(message)} ${rest.join(' ')}`);
  }
  warn(message: unknown, ...rest: unknown[]) {
    this.lines.push(`warn ${String(message)} ${rest.join(' ')}`);
  }
}

describe('RedlockModule (3 real nodes)', () => {
  let fleet: RedisFleet;
  let options: RedlockModuleOptions;

  beforeAll(async () => {
    fleet = await startFleet(3);
    options = { nodes: fleet.urls(), ttl: 2_000 };
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  @Injectable()
  class OptionsFactory implements RedlockOptionsFactory {
    createRedlockOptions(): RedlockModuleOptions {
      return options;
    }
  }

  @Module({ providers: [OptionsFactory], exports: [OptionsFactory] })
  class OptionsModule {}

  const registrations: [string, () => unknown][] = [
    ['forRoot', () => RedlockModule.forRoot(options)],
    ['forRootAsync useFactory', () => RedlockModule.forRootAsync({ useFactory: () => options })],
    [
      'forRootAsync useFactory with inject',
      () =>
        RedlockModule.forRootAsync({
          imports: [OptionsModule],
          inject: [OptionsFactory],
          useFactory: (f: OptionsFactory) => f.createRedlockOptions(),
        }),
    ],
    ['forRootAsync useClass', () => RedlockModule.forRootAsync({ useClass: OptionsFactory })],
    [
      'forRootAsync useExisting',
      () => RedlockModule.forRootAsync({ imports: [OptionsModule], useExisting: OptionsFactory }),
    ],
    [
      'forRootAsync isGlobal: undefined',
      () => RedlockModule.forRootAsync({ useFactory: () => options, isGlobal: undefined }),
    ],
  ];

  it.each(registrations)('%s: is global by default and locks', async (_, register) => {
    const moduleRef = await Test.createTestingModule({
      imports: [register() as never, FeatureModule],
    }).compile();
    await moduleRef.init();
    const service = moduleRef.get(NeedsLock).redlock;
    expect(service).toBeInstanceOf(RedlockService);
    expect(moduleRef.get(RedlockService)).toBe(service);
    const result = await service.using('m', async () => service.currentLock()?.resources);
    expect(result).toEqual(['m']);
    await moduleRef.close();
  });

  describe('with isGlobal: false', () => {
    // A failed compile() runs no shutdown hook, so a RedlockService created before the failure
    // would keep its own connections open: give it clients this test owns and closes.
    let clients: Redis[];
    beforeEach(() => {
      clients = fleet
        .urls()
        .map((url) => new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 }));
    });
    afterEach(() => clients.forEach((client) => client.disconnect()));

    it.each([
      ['forRoot', () => RedlockModule.forRoot({ nodes: clients, isGlobal: false })],
      [
        'forRootAsync',
        () =>
          RedlockModule.forRootAsync({ useFactory: () => ({ nodes: clients }), isGlobal: false }),
      ],
    ])('%s is not visible to modules that do not import it', async (_, register) => {
      await expect(
        Test.createTestingModule({ imports: [register(), FeatureModule] }).compile(),
      ).rejects.toThrow(/RedlockService/);
      // while the importing module itself gets it
      const moduleRef = await Test.createTestingModule({ imports: [register()] }).compile();
      expect(moduleRef.get(RedlockService)).toBeInstanceOf(RedlockService);
      await moduleRef.close();
    });
  });

  it.each([
    ['forRoot, empty nodes', () => RedlockModule.forRoot({ nodes: [] }), 'nodes'],
    [
      'forRoot, bad ttl',
      () => RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'], ttl: -1 }),
      'ttl',
    ],
    [
      'forRootAsync, nodeTimeout ≥ ttl',
      () =>
        RedlockModule.forRootAsync({
          useFactory: async () => ({ nodes: ['redis://127.0.0.1:1'], ttl: 100, nodeTimeout: 100 }),
        }),
      'nodeTimeout',
    ],
    [
      'forRootAsync, no options',
      () => RedlockModule.forRootAsync({ useFactory: () => undefined as never }),
      'options',
    ],
  ])('fails at bootstrap with RedlockConfigError: %s', async (_, register, option) => {
    const error = await Test.createTestingModule({ imports: [register()] })
      .compile()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe(option);
  });

  it('logs through Nest, under the Redlock context', async () => {
    const logger = new CapturingLogger();
    const client = new Redis(fleet.nodes[0].url); // defaults that can queue: warned about
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [client, ...fleet.urls().slice(1)] })],
    })
      .setLogger(logger)
      .compile();
    // The core (and its node adapters, which check the clients' settings) is created at init.
    await moduleRef.init();
    expect(
      logger.lines.some(
        (l) => l.startsWith('warn') && l.includes('enableOfflineQueue') && l.includes('Redlock'),
      ),
    ).toBe(true);
    await moduleRef.close();
    client.disconnect();
  });

  it('on shutdown releases the locks still held and closes only the connections it opened', async () => {
    const userClient = new Redis(fleet.nodes[0].url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    await new Promise((resolve) => userClient.once('ready', resolve));
    const app = (
      await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: [userClient, ...fleet.urls().slice(1)] })],
      }).compile()
    ).createNestApplication();
    await app.init();
    const clientsBefore = await Promise.all(fleet.nodes.map((n) => n.command('CLIENT', 'LIST')));
    const lock = await app.get(RedlockService).acquire('held-at-shutdown');
    await app.close();

    for (const node of fleet.nodes)
      expect(await node.command('EXISTS', 'redlock:held-at-shutdown')).toBe(0);
    expect(lock.remainingMs()).toBe(0);
    // the user's client is untouched and still works
    expect(userClient.status).toBe('ready');
    expect(await userClient.ping()).toBe('PONG');
    // the module's own connections to nodes 1 and 2 are gone
    const count = (list: unknown) => String(list).trim().split('\n').length;
    const clientsAfter = await Promise.all(fleet.nodes.map((n) => n.command('CLIENT', 'LIST')));
    expect(count(clientsAfter[1])).toBe(count(clientsBefore[1]) - 1);
    expect(count(clientsAfter[2])).toBe(count(clientsBefore[2]) - 1);
    userClient.disconnect();
  });
});
