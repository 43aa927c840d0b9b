import { setTimeout as delay } from 'node:timers/promises';
import {
  Body,
  Controller,
  Get,
  HttpException,
  Injectable,
  NotFoundException,
  Param,
  Post,
  Scope,
  SetMetadata,
  type INestApplication,
  type LoggerService,
} from '@nestjs/common';
import { APP_INTERCEPTOR, ExternalContextCreator, Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { defer, lastValueFrom, Observable } from 'rxjs';
import request from 'supertest';
import {
  CurrentLock,
  Locked,
  LOCKED_METADATA,
  LockedCallException,
  LockedInterceptor,
  LockNotAcquiredError,
  LockResourceError,
  RedlockConfigError,
  RedlockModule,
  RedlockService,
  type Lock,
  type LockedContext,
  type RedlockModuleOptions,
} from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * @Locked end to end: real Nest apps (Express) over a real 3-node Redis fleet. Two app
 * instances in one process, each with its own RedlockService and connections, stand in for a
 * cluster of app instances.
 */

/** Resolves true when the signal aborts within `ms`, false otherwise. */
const abortedWithin = (signal: AbortSignal, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (signal.aborted) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      { once: true },
    );
  });

/** Shared by both apps, like an external resource would be. */
let store: Redis;
let fleet: RedisFleet;

/** A deliberately non-atomic read-modify-write: two round trips with a pause between. */
async function increment(key: string): Promise<void> {
  const value = Number((await store.get(key)) ?? 0);
  await delay(2);
  await store.set(key, value + 1);
}

/** What handlers observed, for assertions; reset per test where it matters. */
const seen = {
  runs: new Map<string, number>(),
  inside: new Set<string>(),
  lostAborted: [] as boolean[],
  lockValues: [] as string[],
  fnContext: undefined as undefined | Record<string, unknown>,
};
const ran = (name: string) => seen.runs.set(name, (seen.runs.get(name) ?? 0) + 1);
const runs = (name: string) => seen.runs.get(name) ?? 0;

@Controller()
class LockedController {
  constructor(private readonly redlock: RedlockService) {}

  @Post('counter/:id/locked')
  @Locked('counter:{id}', { wait: 30_000 })
  async lockedIncrement(@Param('id') id: string) {
    await increment(`count:${id}`);
    return { ok: true };
  }

  @Post('counter/:id/unlocked')
  async unlockedIncrement(@Param('id') id: string) {
    await increment(`count:${id}`);
    return { ok: true };
  }

  /** Returns whether another key's handler was inside at the same time. */
  @Post('overlap/:id')
  @Locked('overlap:{id}', { wait: 0 })
  async overlap(@Param('id') id: string) {
    seen.inside.add(id);
    const until = Date.now() + 3_000;
    while (seen.inside.size < 2 && Date.now() < until) await delay(5);
    const overlapped = seen.inside.size >= 2;
    await delay(20);
    seen.inside.delete(id);
    return { overlapped };
  }

  @Get('stock/:id')
  @Locked('stock:{id}', { wait: 0 })
  stock(@Param('id') id: string) {
    ran('stock');
    return { id };
  }

  @Get('teapot/:id')
  @Locked('stock:{id}', {
    wait: 0,
    mapError: (error) =>
      error instanceof LockNotAcquiredError ? new HttpException('busy, try later', 423) : undefined,
  })
  teapot() {
    ran('teapot');
    return 'ok';
  }

  @Post('sku')
  @Locked('sku:{body.sku}')
  sku(@Body() body: { sku: string }) {
    ran('sku');
    return { sku: body.sku };
  }

  @Get('missing/:id')
  @Locked('missing:{id}', { wait: 0 })
  missing() {
    ran('missing');
    throw new NotFoundException('no such thing');
  }

  /** Emits at once and after 400 ms, then completes: the lock must be held until completion. */
  @Get('stream/:id')
  @Locked('stream:{id}')
  stream() {
    return new Observable<unknown>((subscriber) => {
      subscriber.next({ early: true });
      const timer = setTimeout(() => {
        subscriber.next({ resources: this.redlock.currentLock()?.resources });
        subscriber.complete();
      }, 400);
      return () => clearTimeout(timer);
    });
  }

  @Get('current/:id')
  @Locked('current:{id}')
  async current(@CurrentLock() lock: Lock) {
    await delay(5);
    return {
      resources: lock.resources,
      same: lock === this.redlock.currentLock(),
      valid: lock.remainingMs() > 0,
    };
  }

  @Get('unlocked-current')
  unlockedCurrent(@CurrentLock() lock: Lock | undefined) {
    return { hasLock: lock !== undefined, service: this.redlock.currentLock() !== undefined };
  }

  /** Deletes its own keys behind the lock's back, so the next extension finds them gone. */
  @Post('lost/:id')
  @Locked('lost:{id}', { ttl: 300 })
  async lost(@Param('id') id: string, @CurrentLock() lock: Lock) {
    seen.lockValues.push(lock.value);
    await Promise.all(fleet.nodes.map((n) => n.command('DEL', `redlock:lost:${id}`)));
    seen.lostAborted.push(await abortedWithin(lock.signal, 3_000));
    return { done: true };
  }

  @Post('lost-then-fail/:id')
  @Locked('lost:{id}', { ttl: 300 })
  async lostThenFail(@Param('id') id: string, @CurrentLock() lock: Lock) {
    await Promise.all(fleet.nodes.map((n) => n.command('DEL', `redlock:lost:${id}`)));
    seen.lostAborted.push(await abortedWithin(lock.signal, 3_000));
    throw new NotFoundException('gone meanwhile');
  }

  @Get('fn/:id')
  @Locked((ctx: LockedContext) => [`fn:${ctx.request.params.id}`, 'fn:all'])
  fn() {
    return { resources: this.redlock.currentLock()?.resources };
  }

  @Get('fn-context/:id')
  @Locked((ctx: LockedContext) => {
    seen.fnContext = {
      args: ctx.args.length,
      isRequest: ctx.args[0] === ctx.request,
      data: ctx.data,
      type: ctx.executionContext?.getType(),
      handler: ctx.executionContext?.getHandler().name,
    };
    return `fn:${ctx.request.params.id}`;
  })
  fnContext() {
    return 'ok';
  }
}

/** A custom decorator of another library, to check its metadata survives the wrapping. */
const Tagged = (tag: string): MethodDecorator => SetMetadata('test:tag', tag);

@Injectable()
class CounterService {
  readonly prefix = 'svc-count:';
  constructor(private readonly redlock: RedlockService) {}

  @Tagged('kept-above')
  @Locked('svc:{args.0}', { wait: 30_000 })
  @Tagged('kept-below')
  async increment(id: string, _by = 1) {
    await increment(`${this.prefix}${id}`);
    return this.redlock.currentLock()?.resources;
  }

  async incrementUnlocked(id: string) {
    await increment(`${this.prefix}${id}`);
  }

  @Locked('busy:{args.0}', { wait: 0 })
  async tryWork(id: string) {
    return id;
  }

  /**
   * Reached through ExternalContextCreator below, as a gateway method would be; marked as one
   * with the metadata @SubscribeMessage sets (a payload template needs a message handler).
   */
  @SetMetadata('message', 'msg')
  @Locked('msg:{data.id}', { wait: 0 })
  handleMessage(data: { id: string }) {
    return { id: data.id, resources: this.redlock.currentLock()?.resources };
  }
}

const fleetOptions = (): RedlockModuleOptions => ({
  nodes: fleet.urls(),
  nodeTimeout: 50,
  retryDelay: 5,
  retryJitter: 10,
});

async function createApp(
  options: Partial<RedlockModuleOptions> = {},
  extra: { providers?: unknown[]; logger?: LoggerService | false } = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ ...fleetOptions(), ...options })],
    controllers: [LockedController],
    providers: [CounterService, ...((extra.providers ?? []) as never[])],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: extra.logger ?? false });
  await app.listen(0, '127.0.0.1');
  return app;
}

describe('@Locked end to end (2 Nest apps, 3 real Redis nodes)', () => {
  let a: INestApplication;
  let b: INestApplication;
  let http: () => ReturnType<typeof request>;

  beforeAll(async () => {
    fleet = await startFleet(3);
    store = new Redis(fleet.nodes[0].url, { maxRetriesPerRequest: 1 });
    [a, b] = await Promise.all([createApp(), createApp()]);
    http = () => request(a.getHttpServer());
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    store?.disconnect();
    await fleet?.stop();
  });

  beforeEach(() => {
    seen.runs.clear();
    seen.inside.clear();
    seen.lostAborted.length = 0;
    seen.lockValues.length = 0;
  });

  describe('HTTP handlers', () => {
    const hammer = (path: string, count: number) =>
      Promise.all(
        Array.from({ length: count }, (_, i) =>
          request((i % 2 ? b : a).getHttpServer()).post(path),
        ),
      );

    it('control: the same requests without the lock lose updates', async () => {
      await store.set('count:control', 0);
      const responses = await hammer('/counter/control/unlocked', 40);
      expect(responses.every((r) => r.status === 201)).toBe(true);
      expect(Number(await store.get('count:control'))).toBeLessThan(40);
    });

    it('serializes concurrent requests on the same key across two app instances: exact count', async () => {
      await store.set('count:1', 0);
      const responses = await hammer('/counter/1/locked', 40);
      expect(responses.map((r) => r.status)).toEqual(Array(40).fill(201));
      expect(Number(await store.get('count:1'))).toBe(40);
    });

    it('does not serialize different keys: both handlers are inside at once', async () => {
      const [x, y] = await Promise.all([
        http().post('/overlap/x'),
        request(b.getHttpServer()).post('/overlap/y'),
      ]);
      expect([x.status, y.status]).toEqual([201, 201]);
      expect([x.body.overlapped, y.body.overlapped]).toEqual([true, true]);
    });

    it('busy lock with wait: 0 → 409 Conflict with Retry-After (seconds, rounded up); the handler does not run', async () => {
      const holder = await b.get(RedlockService).acquire('stock:1', { ttl: 5_000 });
      try {
        const res = await http().get('/stock/1');
        expect(res.status).toBe(409);
        expect(['4', '5']).toContain(res.headers['retry-after']);
        expect(JSON.stringify(res.body)).not.toContain(holder.value);
        expect(runs('stock')).toBe(0);
      } finally {
        await holder.release();
      }
      const free = await http().get('/stock/1');
      expect(free.status).toBe(200);
      expect(runs('stock')).toBe(1);
    });

    it('a decorator mapError override replaces the 409', async () => {
      const holder = await b.get(RedlockService).acquire('stock:3');
      try {
        const res = await http().get('/teapot/3');
        expect(res.status).toBe(423);
        expect(res.body.message).toBe('busy, try later');
        expect(res.headers['retry-after']).toBeUndefined();
        expect(runs('teapot')).toBe(0);
      } finally {
        await holder.release();
      }
    });

    it('unresolvable template value from the request → 400, and the handler did not run', async () => {
      const missing = await http().post('/sku').send({});
      expect(missing.status).toBe(400);
      // The body names neither the template nor the placeholder (issue 25); logs may.
      expect(missing.body.message).toBe('The lock resource could not be named from the request');
      const object = await http()
        .post('/sku')
        .send({ sku: { $ne: 1 } });
      expect(object.status).toBe(400);
      const empty = await http().post('/sku').send({ sku: '' });
      expect(empty.status).toBe(400);
      expect(runs('sku')).toBe(0);
      const ok = await http().post('/sku').send({ sku: 'A-1' });
      expect(ok.status).toBe(201);
      expect(runs('sku')).toBe(1);
      // Nothing was ever locked under an "undefined" key.
      expect(await store.keys('redlock:sku:*')).toEqual([]);
    });

    it("the handler's own 404 stays a 404, and the lock is released", async () => {
      const res = await http().get('/missing/1');
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('no such thing');
      expect(runs('missing')).toBe(1);
      const after = await b.get(RedlockService).tryAcquire('missing:1');
      expect(after).not.toBeNull();
      await after!.release();
    });

    it('an Observable handler holds the lock until it completes; released before the response', async () => {
      const other = b.get(RedlockService);
      const pending = http()
        .get('/stream/1')
        .then((r) => r);
      await delay(150);
      expect(await other.tryAcquire('stream:1')).toBeNull();
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.body.resources).toEqual(['stream:1']);
      // The response came after the release: the very next attempt gets the lock.
      const next = await other.tryAcquire('stream:1');
      expect(next).not.toBeNull();
      await next!.release();
    });

    it('@CurrentLock() and RedlockService.currentLock() see the same lock inside the handler', async () => {
      const res = await http().get('/current/9');
      expect(res.body).toEqual({ resources: ['current:9'], same: true, valid: true });
      const none = await http().get('/unlocked-current');
      expect(none.body).toEqual({ hasLock: false, service: false });
    });

    it('a lock lost while a successful handler ran → 500 saying so; lock.signal aborted in the handler', async () => {
      const res = await http().post('/lost/1');
      expect(res.status).toBe(500);
      expect(res.body.message).toMatch(/lock was lost while the handler ran/);
      expect(seen.lostAborted).toEqual([true]);
      expect(JSON.stringify(res.body)).not.toContain(seen.lockValues[0]);
    });

    it("a lock lost while a failing handler ran → the handler's own error", async () => {
      const res = await http().post('/lost-then-fail/2');
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('gone meanwhile');
      expect(seen.lostAborted).toEqual([true]);
    });

    it('the resource function names the lock from the request', async () => {
      const res = await http().get('/fn/7');
      expect(res.status).toBe(200);
      expect(res.body.resources).toEqual(['fn:7', 'fn:all']);
    });

    it('the resource function gets the raw execution-context args, the request and the context', async () => {
      await http().get('/fn-context/1').expect(200);
      expect(seen.fnContext).toEqual({
        args: 3,
        isRequest: true,
        data: undefined,
        type: 'http',
        handler: 'fnContext',
      });
    });

    it('locks a controller handler once: no double locking by the explorer', async () => {
      const service = a.get(RedlockService);
      const acquire = jest.spyOn(service, 'hold');
      try {
        const res = await http().get('/stock/2');
        expect(res.status).toBe(200);
        expect(acquire).toHaveBeenCalledTimes(1);
        expect(acquire.mock.calls[0][0]).toEqual(['stock:2']);
      } finally {
        acquire.mockRestore();
      }
      // The controller instance was left alone: the interceptor does the locking.
      expect(Object.hasOwn(a.get(LockedController), 'stock')).toBe(false);
    });
  });

  describe('provider methods', () => {
    it('control: the same calls without the lock lose updates', async () => {
      await store.set('svc-count:control', 0);
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 ? b : a).get(CounterService).incrementUnlocked('control'),
        ),
      );
      expect(Number(await store.get('svc-count:control'))).toBeLessThan(40);
    });

    it('@Locked provider method called from two app instances keeps an exact count', async () => {
      await store.set('svc-count:1', 0);
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? b : a).get(CounterService).increment('1')),
      );
      expect(Number(await store.get('svc-count:1'))).toBe(40);
      expect(results.every((r) => JSON.stringify(r) === '["svc:1"]')).toBe(true);
    });

    it("keeps the method's name, this, and every other decorator's metadata", () => {
      const service = a.get(CounterService);
      const wrapper = CounterService.prototype.increment;
      // Wrapped once, on the prototype, when the decorator was applied: both apps' instances
      // share it, and each finds its own RedlockService through `this`.
      expect(Object.hasOwn(service, 'increment')).toBe(false);
      expect(b.get(CounterService).increment).toBe(wrapper);
      expect(wrapper.name).toBe('increment');
      expect(wrapper.length).toBe(1);
      // Decorators applied before @Locked (below it) and after it (above) both stay readable.
      expect(Reflect.getMetadata('test:tag', wrapper)).toBe('kept-above');
      expect(Reflect.getMetadata(LOCKED_METADATA, wrapper)).toBeDefined();
      expect(Reflect.getMetadataKeys(wrapper)).toEqual(expect.arrayContaining(['test:tag']));
    });

    it('rethrows typed errors for a provider method (no HTTP mapping)', async () => {
      const holder = await b.get(RedlockService).acquire('busy:1');
      try {
        const busy = await a
          .get(CounterService)
          .tryWork('1')
          .catch((e: unknown) => e);
        expect(busy).toBeInstanceOf(LockNotAcquiredError);
        expect((busy as LockNotAcquiredError).reason).toBe('held');
      } finally {
        await holder.release();
      }
      await expect(a.get(CounterService).tryWork('1')).resolves.toBe('1');
      // Called directly, a synchronous message handler cannot be locked: it throws, unrun.
      expect(() => a.get(CounterService).handleMessage({ id: 'x' })).toThrow(RedlockConfigError);
    });

    it('a method Nest calls through the instance with interceptors is locked once, by the interceptor', async () => {
      const service = a.get(CounterService);
      const redlock = a.get(RedlockService);
      const acquire = jest.spyOn(redlock, 'hold');
      try {
        // What a WebSocket gateway or GraphQL resolver does: the instance's (wrapped) method,
        // run through the enhancer pipeline, here as an 'rpc' call with the payload first.
        const handler = a
          .get(ExternalContextCreator)
          .create(
            service,
            service.handleMessage as (...args: unknown[]) => unknown,
            'handleMessage',
            undefined,
            undefined,
            undefined,
            undefined,
            { interceptors: true, guards: false, filters: false },
            'rpc',
          );
        const result = await handler({ id: 'ext' }, {});
        expect(result).toEqual({ id: 'ext', resources: ['msg:ext'] });
        expect(acquire).toHaveBeenCalledTimes(1);
      } finally {
        acquire.mockRestore();
      }
    });
  });

  describe('RPC context (interceptor with a fake ExecutionContext)', () => {
    class RpcHandlers {
      @Locked('rpc:{data.id}', { wait: 0 })
      plain() {}

      @Locked('rpc:{data.id}', {
        wait: 0,
        mapError: (error) =>
          error instanceof LockNotAcquiredError ? new Error('decorator-mapped') : undefined,
      })
      mapped() {}
    }

    const rpcCall = (interceptor: LockedInterceptor, method: keyof RpcHandlers, data: unknown) => {
      const context = new ExecutionContextHost(
        [data, {}],
        RpcHandlers,
        RpcHandlers.prototype[method],
      );
      context.setType('rpc');
      // The chain Nest builds: on subscription it invokes the (wrapped) method, which takes the
      // lock through the interceptor's call.
      const handlers = new RpcHandlers();
      const handle = () =>
        defer(async () => {
          await (handlers[method] as (payload: unknown) => unknown)(data);
          return 'ran';
        });
      return lastValueFrom(interceptor.intercept(context, { handle }));
    };

    it('answers with LockedCallException codes, not HTTP exceptions', async () => {
      const interceptor = new LockedInterceptor(
        new Reflector(),
        a.get(RedlockService),
        fleetOptions(),
      );
      const holder = await b.get(RedlockService).acquire('rpc:1');
      try {
        const busy = await rpcCall(interceptor, 'plain', { id: 1 }).catch((e: unknown) => e);
        expect(busy).toBeInstanceOf(LockedCallException);
        expect((busy as LockedCallException).payload.code).toBe('LOCK_BUSY');
        expect((busy as LockedCallException).cause).toBeInstanceOf(LockNotAcquiredError);
        expect(busy).not.toBeInstanceOf(HttpException);
        await expect(rpcCall(interceptor, 'mapped', { id: 1 })).rejects.toThrow('decorator-mapped');
      } finally {
        await holder.release();
      }
      await expect(rpcCall(interceptor, 'plain', {})).rejects.toMatchObject({
        payload: { code: 'LOCK_RESOURCE_INVALID' },
        cause: expect.any(LockResourceError),
      });
      await expect(rpcCall(interceptor, 'plain', { id: 1 })).resolves.toBe('ran');
    });

    it("applies the module's mapLockedError outside HTTP", async () => {
      const interceptor = new LockedInterceptor(new Reflector(), a.get(RedlockService), {
        ...fleetOptions(),
        mapLockedError: (error, ctx) =>
          ctx.type === 'rpc' && ctx.stage === 'resolve' ? new Error(`module-mapped`) : undefined,
      });
      await expect(rpcCall(interceptor, 'plain', {})).rejects.toThrow('module-mapped');
    });
  });

  describe('scopes and bootstrap', () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequestService {
      @Locked('per-request')
      async work() {}
    }

    @Injectable({ scope: Scope.TRANSIENT })
    class TransientHelper {
      constructor(private readonly redlock: RedlockService) {}
      @Locked('transient:{args.0}')
      async work(_id: string) {
        return this.redlock.currentLock()?.resources;
      }
    }

    @Injectable()
    class UsesTransient {
      constructor(readonly helper: TransientHelper) {}
    }

    @Injectable({ scope: Scope.REQUEST })
    class RequestScopedUsesTransient {
      constructor(readonly helper: TransientHelper) {}
    }

    class Recorder implements LoggerService {
      readonly warnings: string[] = [];
      log() {}
      error() {}
      warn(message: unknown) {
        this.warnings.push(String(message));
      }
    }

    it('locks request-scoped and transient instances (no warning), applies the module mapper', async () => {
      const logger = new Recorder();
      const app = await createApp(
        {
          mapLockedError: (error, ctx) =>
            ctx.type === 'provider' && error instanceof LockResourceError
              ? new Error('module-mapped provider error')
              : undefined,
        },
        {
          providers: [
            PerRequestService,
            TransientHelper,
            UsesTransient,
            RequestScopedUsesTransient,
          ],
          logger,
        },
      );
      try {
        // No warning about how these instances are covered. A node answering late on a busy
        // machine warns too: that one says nothing about coverage, so it is left out.
        const loadWarning = /did not answer a command in time/;
        expect(logger.warnings.filter((w) => !loadWarning.test(w))).toEqual([]);
        await expect(app.get(UsesTransient).helper.work('5')).resolves.toEqual(['transient:5']);
        const perRequest = await app.resolve(RequestScopedUsesTransient);
        await expect(perRequest.helper.work('6')).resolves.toEqual(['transient:6']);
        await expect((await app.resolve(PerRequestService)).work()).resolves.toBeUndefined();
        await expect(app.get(CounterService).increment(undefined as never)).rejects.toThrow(
          'module-mapped provider error',
        );
      } finally {
        await app.close();
      }
    });

    it('LockedInterceptor registered globally as well still locks a handler once', async () => {
      const app = await createApp(
        {},
        {
          providers: [{ provide: APP_INTERCEPTOR, useClass: LockedInterceptor }],
        },
      );
      const acquire = jest.spyOn(app.get(RedlockService), 'hold');
      try {
        await request(app.getHttpServer()).get('/stock/5').expect(200);
        await request(app.getHttpServer()).get('/unlocked-current').expect(200);
        expect(acquire).toHaveBeenCalledTimes(1);
      } finally {
        acquire.mockRestore();
        await app.close();
      }
    });

    it("a ttl not above the module's nodeTimeout fails the bootstrap", async () => {
      @Controller()
      class ShortTtl {
        @Get()
        @Locked('r', { ttl: 40 })
        get() {}
      }
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot(fleetOptions())],
        controllers: [ShortTtl],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await expect(app.init()).rejects.toThrow(/options\.ttl.*nodeTimeout \(50 ms\)/);
      await app.close();
    });
  });
});

describe('@Locked when a majority of nodes is down', () => {
  let downFleet: RedisFleet;
  let app: INestApplication;

  beforeAll(async () => {
    downFleet = await startFleet(3);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: downFleet.urls(), nodeTimeout: 50 })],
      controllers: [LockedController],
      providers: [CounterService],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    await downFleet?.stop();
  });

  it('→ 503 Service Unavailable, and the handler does not run', async () => {
    seen.runs.clear();
    await request(app.getHttpServer()).get('/stock/1').expect(200);
    await Promise.all([downFleet.nodes[0].kill(), downFleet.nodes[1].kill()]);
    const res = await request(app.getHttpServer()).get('/stock/1');
    expect(res.status).toBe(503);
    expect(runs('stock')).toBe(1);
  });
});
