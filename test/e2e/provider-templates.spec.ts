import { setTimeout as delay } from 'node:timers/promises';
import {
  Controller,
  Get,
  HttpCode,
  Injectable,
  Module,
  Param,
  ParseIntPipe,
  Post,
  type INestApplication,
} from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  CurrentLock,
  Locked,
  Redlock,
  RedlockConfigError,
  RedlockModule,
  RedlockService,
  type Lock,
} from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * Templates are checked against their source at bootstrap (issue 6 item 8), and a handler can
 * name its lock from its piped arguments (item 9): `{args.N}` on a controller handler reads
 * the handler's parameters after pipes, so two spellings a pipe makes equal share one lock.
 */

let fleet: RedisFleet;

async function bootstrap(
  metadata: { controllers?: unknown[]; providers?: unknown[]; imports?: unknown[] },
  listen = false,
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({ nodes: fleet.urls(), nodeTimeout: 250, retryDelay: 5 }),
      ...((metadata.imports ?? []) as never[]),
    ],
    controllers: (metadata.controllers ?? []) as never[],
    providers: (metadata.providers ?? []) as never[],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  if (listen) await app.listen(0, '127.0.0.1');
  else await app.init();
  return app;
}

/** The error the bootstrap failed with, or undefined when it started. */
async function bootstrapError(metadata: Parameters<typeof bootstrap>[0]): Promise<unknown> {
  try {
    const app = await bootstrap(metadata);
    await app.close();
    return undefined;
  } catch (error) {
    return error;
  }
}

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await fleet?.stop();
});

describe('templates are checked against their source at bootstrap', () => {
  it('a route parameter on a provider method fails the bootstrap', async () => {
    @Injectable()
    class Service {
      @Locked('stock:{id}')
      async decrement(_id: string) {}
    }
    const error = await bootstrapError({ providers: [Service] });
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(String(error)).toMatch(/@Locked on Service\.decrement.*params\.id.*provider method/);
  });

  it('a request source on a provider method fails the bootstrap', async () => {
    @Injectable()
    class Service {
      @Locked('sku:{body.sku}')
      async create() {}
    }
    expect(String(await bootstrapError({ providers: [Service] }))).toMatch(
      /Service\.create.*body\.sku/,
    );
  });

  it('a payload source on a provider method that is not a message handler fails the bootstrap', async () => {
    @Injectable()
    class Service {
      @Locked('job:{data.id}')
      async run() {}
    }
    expect(String(await bootstrapError({ providers: [Service] }))).toMatch(
      /Service\.run.*data\.id.*not a message handler/,
    );
  });

  it('a route placeholder naming no parameter of the route fails the bootstrap', async () => {
    @Controller('stock')
    class StockController {
      @Post(':id')
      @Locked('stock:{sku}')
      async update() {}
    }
    const error = await bootstrapError({ controllers: [StockController] });
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(String(error)).toMatch(/StockController\.update.*params\.sku.*"\/stock\/:id".*id/);
  });

  it('a route placeholder missing from one of several paths fails the bootstrap', async () => {
    @Controller()
    class Paths {
      @Get([':id', 'all'])
      @Locked('r:{params.id}')
      async read() {}
    }
    expect(String(await bootstrapError({ controllers: [Paths] }))).toMatch(/"\/all"/);
  });

  it('a payload source on an HTTP route fails the bootstrap', async () => {
    @Controller()
    class Route {
      @Post()
      @Locked('r:{data.id}')
      async create() {}
    }
    expect(String(await bootstrapError({ controllers: [Route] }))).toMatch(
      /Route\.create.*data\.id.*HTTP route/,
    );
  });

  it('parameters of the controller path, the method path and a RouterModule path are known', async () => {
    @Controller('tenant/:tenant/stock')
    class Scoped {
      @Post(':id')
      @Locked(['stock:{tenant}:{id}', 'org:{params.org}'])
      async update() {}
    }
    @Module({ controllers: [Scoped] })
    class Feature {}
    const error = await bootstrapError({
      imports: [Feature, RouterModule.register([{ path: 'org/:org', module: Feature }])],
    });
    expect(error).toBeUndefined();
  });
});

describe('a handler locked on its piped arguments ({args.N})', () => {
  const inside = new Set<string>();
  let overlaps = 0;

  @Controller('items')
  class Items {
    constructor(private readonly redlock: RedlockService) {}

    /** ParseIntPipe makes /items/42 and /items/042 the same item: they must share the lock. */
    @Post(':id')
    @HttpCode(200)
    @Locked('item:{args.0}', { wait: 10_000 })
    async touch(@Param('id', ParseIntPipe) id: number, @CurrentLock() lock: Lock) {
      if (inside.has(String(id))) overlaps++;
      inside.add(String(id));
      await delay(10);
      inside.delete(String(id));
      return { id, resources: lock.resources, same: lock === this.redlock.currentLock() };
    }

    @Get(':id')
    @Locked('item:{args.0}', { wait: 0 })
    async read(@Param('id', ParseIntPipe) id: number) {
      return { id };
    }

    @Post(':id/patient')
    @Locked('item:{args.0}', { wait: 10_000 })
    async patient(@Param('id', ParseIntPipe) id: number) {
      patientRuns++;
      return { id };
    }
  }
  let patientRuns = 0;

  let app: INestApplication;
  let rival: Redlock;

  beforeAll(async () => {
    app = await bootstrap({ controllers: [Items] }, true);
    rival = new Redlock(fleet.urls(), {
      nodeTimeout: 250,
      logger: { log() {}, warn() {}, error() {} },
    });
  });

  afterAll(async () => {
    await app?.close();
    await rival?.close();
  });

  it('/items/42 and /items/042 take the same lock, after the pipe: never inside at once', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        request(app.getHttpServer()).post(i % 2 ? '/items/42' : '/items/042'),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(overlaps).toBe(0);
    expect(responses[0].body).toEqual({ id: 42, resources: ['item:42'], same: true });
  });

  it('a busy lock is still 409 with Retry-After, and the pipe rejects a bad value (400) before any lock', async () => {
    const held = await rival.acquire('item:7', { ttl: 5_000 });
    try {
      const busy = await request(app.getHttpServer()).get('/items/007');
      expect(busy.status).toBe(409);
      expect(['4', '5']).toContain(busy.headers['retry-after']);
    } finally {
      await held.release();
    }
    await request(app.getHttpServer()).get('/items/007').expect(200, { id: 7 });
    await request(app.getHttpServer()).get('/items/x').expect(400);
  });

  it('a client that goes away while waiting for the lock stops waiting: the handler never runs', async () => {
    const held = await rival.acquire('item:9', { ttl: 10_000 });
    try {
      const gaveUp = await request(app.getHttpServer())
        .post('/items/09/patient')
        .timeout(300)
        .then(
          () => false,
          (error: { timeout?: number }) => error.timeout === 300,
        );
      expect(gaveUp).toBe(true);
      await delay(200); // the server sees the closed connection
    } finally {
      await held.release();
    }
    await delay(500); // a waiter still queued would take the lock and run now
    expect(patientRuns).toBe(0);
    await request(app.getHttpServer()).post('/items/9/patient').expect(201);
    expect(patientRuns).toBe(1);
  });

  it('a synchronous handler locked on its arguments boots (Nest awaits what a handler returns)', async () => {
    @Controller()
    class Sync {
      @Get(':id')
      @Locked('item:{args.0}')
      read(@Param('id') id: string) {
        return id;
      }
    }
    expect(await bootstrapError({ controllers: [Sync] })).toBeUndefined();
  });

  it('mixing {args.N} with request placeholders is allowed: both are read after the pipes', () => {
    expect(() => {
      class Mixed {
        @Locked('item:{args.0}:{id}')
        async read() {}
      }
      return Mixed;
    }).not.toThrow();
  });
});
