import { setTimeout as delay } from 'node:timers/promises';
import { Injectable, Module, Scope, type INestApplication } from '@nestjs/common';
import { LazyModuleLoader } from '@nestjs/core';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { of, type Observable } from 'rxjs';
import {
  Locked,
  LockLostError,
  LockNotAcquiredError,
  Redlock,
  RedlockConfigError,
  RedlockModule,
  RedlockService,
  type Lock,
  type RedlockModuleOptions,
} from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * Every shape of `@Locked` provider method either runs under its lock or fails the bootstrap
 * (issue 6 item 7). Each case shows the lock is really taken: a rival — a separate Redlock on
 * the same nodes — holds the resource, and the method (with `wait: 0`) must be refused and
 * must not run; or two concurrent calls must never be inside at once.
 */

let fleet: RedisFleet;
let rival: Redlock;

/** What methods observed. */
const seen = { runs: 0, inside: 0, maxInside: 0 };
/** Counts a run and how many runs overlap it, for `ms`. */
async function work(ms = 0): Promise<void> {
  seen.runs++;
  seen.inside++;
  seen.maxInside = Math.max(seen.maxInside, seen.inside);
  try {
    await delay(ms);
  } finally {
    seen.inside--;
  }
}

const SETTLE = Symbol('settle');

@Injectable()
class SymbolNamed {
  @Locked('shape:symbol', { wait: 0 })
  async [SETTLE](): Promise<string> {
    await work();
    return 'settled';
  }
}

class Base {
  @Locked('shape:super', { wait: 0 })
  async save(): Promise<string> {
    await work();
    return 'saved';
  }
}

@Injectable()
class Derived extends Base {
  override async save(): Promise<string> {
    return `derived ${await super.save()}`;
  }
}

@Injectable()
class Generators {
  constructor(readonly redlock: RedlockService) {}

  @Locked('shape:gen:{args.0}', { wait: 1_000 })
  async *items(_id: string): AsyncGenerator<{ n: number; lock: Lock | undefined }, string> {
    await work();
    for (let n = 1; n <= 3; n++) {
      await delay(5);
      yield { n, lock: this.redlock.currentLock() };
    }
    return 'done';
  }

  @Locked('shape:gen-fails', { wait: 1_000 })
  async *failing(): AsyncGenerator<number> {
    yield 1;
    throw new Error('generator failed');
  }

  /** Its keys are deleted behind its back while the consumer holds it between two steps. */
  @Locked('shape:gen-lost', { ttl: 1_000 })
  async *losing(): AsyncGenerator<Lock> {
    yield this.redlock.currentLock()!;
    yield this.redlock.currentLock()!;
  }

  @Locked('shape:observable')
  async observable(): Promise<Observable<number>> {
    await work();
    return of(1);
  }
}

@Injectable()
class LazyService {
  @Locked('shape:lazy', { wait: 0 })
  async work(): Promise<string> {
    await work();
    return 'lazy';
  }
}

@Module({ providers: [LazyService] })
class LazyFeatureModule {}

@Injectable({ scope: Scope.REQUEST })
class PerRequest {
  @Locked('shape:request', { wait: 0 })
  async work(): Promise<string> {
    await work();
    return 'per request';
  }
}

@Injectable()
class Overlapping {
  @Locked('shape:overlap:{args.0}', { wait: 30_000 })
  async run(_id: string): Promise<void> {
    await work(20);
  }
}

const moduleOptions = (): RedlockModuleOptions => ({
  nodes: fleet.urls(),
  nodeTimeout: 250,
  retryDelay: 5,
  retryJitter: 10,
});

async function createApp(providers: unknown[], imports: unknown[] = []): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [...(imports as never[]), RedlockModule.forRoot(moduleOptions())],
    providers: providers as never[],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

/** Runs `call` while the rival holds `resource`: it must be refused, and the work not run. */
async function refusedWhileHeld(resource: string, call: () => Promise<unknown>): Promise<void> {
  const held = await rival.acquire(resource, { ttl: 10_000 });
  try {
    const runsBefore = seen.runs;
    const error = await call().then(
      (value) => ({ ranWithoutLock: value }),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect(seen.runs).toBe(runsBefore);
  } finally {
    await held.release();
  }
}

/**
 * Runs a `wait: 0` call that should succeed, again if the nodes did not answer in time: on a
 * loaded machine one attempt can miss its node timeouts (`unavailable`), which says nothing
 * about the lock. Contention (`held`) is never retried.
 */
async function succeeds<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const unavailable =
        error instanceof LockNotAcquiredError && error.reason === 'unavailable' && attempt < 5;
      if (!unavailable) throw error;
      await delay(100);
    }
  }
}

beforeAll(async () => {
  fleet = await startFleet(3);
  rival = new Redlock(fleet.urls(), {
    nodeTimeout: 250,
    logger: { log() {}, warn() {}, error() {} },
  });
});

afterAll(async () => {
  await rival?.close();
  await fleet?.stop();
});

beforeEach(() => {
  seen.runs = 0;
  seen.inside = 0;
  seen.maxInside = 0;
});

describe('@Locked provider methods of every shape run under the lock (2 apps, 3 real nodes)', () => {
  let a: INestApplication;
  let b: INestApplication;
  const providers = [SymbolNamed, Derived, Generators, PerRequest, Overlapping];

  beforeAll(async () => {
    a = await createApp(providers);
    b = await createApp(providers);
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('a symbol-named method is locked', async () => {
    await refusedWhileHeld('shape:symbol', () => a.get(SymbolNamed)[SETTLE]());
    await expect(succeeds(() => a.get(SymbolNamed)[SETTLE]())).resolves.toBe('settled');
  });

  it('an override calling super.save() runs the base method under its lock', async () => {
    await refusedWhileHeld('shape:super', () => a.get(Derived).save());
    await expect(succeeds(() => a.get(Derived).save())).resolves.toBe('derived saved');
  });

  it('an async generator method still works with for await, and holds the lock until it finishes', async () => {
    const got: number[] = [];
    const heldDuring: boolean[] = [];
    const generator = a.get(Generators).items('1');
    for await (const { n, lock } of generator) {
      got.push(n);
      expect(lock?.resources).toEqual(['shape:gen:1']);
      heldDuring.push((await rival.tryAcquire('shape:gen:1')) === null);
    }
    expect(got).toEqual([1, 2, 3]);
    expect(heldDuring).toEqual([true, true, true]);
    const after = await rival.tryAcquire('shape:gen:1');
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('an async generator keeps its return value, and a break releases the lock', async () => {
    const generator = a.get(Generators).items('2');
    const steps = [];
    for (let step = await generator.next(); ; step = await generator.next()) {
      steps.push(step.value);
      if (step.done) break;
    }
    expect(steps.at(-1)).toBe('done');

    for await (const { n } of a.get(Generators).items('3')) {
      expect(n).toBe(1);
      break;
    }
    const after = await rival.tryAcquire('shape:gen:3');
    expect(after).not.toBeNull();
    await after!.release();
  });

  it("an async generator's own error passes through, and the lock is released", async () => {
    const seenValues: number[] = [];
    const failure = await (async () => {
      for await (const n of a.get(Generators).failing()) seenValues.push(n);
    })().catch((e: unknown) => e);
    expect(seenValues).toEqual([1]);
    expect(failure).toEqual(new Error('generator failed'));
    const after = await rival.tryAcquire('shape:gen-fails');
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('an async generator that lost its lock between two steps fails with LockLostError', async () => {
    const generator = a.get(Generators).losing();
    const first = await generator.next();
    const lock = first.value as Lock;
    await Promise.all(fleet.nodes.map((n) => n.command('DEL', 'redlock:shape:gen-lost')));
    const until = Date.now() + 5_000;
    while (!lock.signal.aborted && Date.now() < until) await delay(20);
    expect(lock.signal.aborted).toBe(true);
    await generator.next();
    await expect(generator.next()).rejects.toBeInstanceOf(LockLostError);
  });

  it('an async method resolving to an Observable fails (its work would run unlocked), and releases', async () => {
    await expect(a.get(Generators).observable()).rejects.toThrow(
      /Generators\.observable.*Observable/,
    );
    const after = await rival.tryAcquire('shape:observable');
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('an async generator is refused on its first step while the lock is held', async () => {
    await refusedWhileHeld('shape:gen:4', () => a.get(Generators).items('4').next());
  });

  it('a request-scoped provider is locked', async () => {
    const instance = await a.resolve(PerRequest);
    await refusedWhileHeld('shape:request', () => instance.work());
    await expect(succeeds(() => instance.work())).resolves.toBe('per request');
  });

  it('a provider of a lazily loaded module is locked', async () => {
    const lazy = await a.get(LazyModuleLoader).load(() => LazyFeatureModule);
    await refusedWhileHeld('shape:lazy', () => lazy.get(LazyService).work());
    await expect(succeeds(() => lazy.get(LazyService).work())).resolves.toBe('lazy');
  });

  it('each app locks through its own RedlockService', async () => {
    const spyA = jest.spyOn(a.get(RedlockService), 'hold');
    const spyB = jest.spyOn(b.get(RedlockService), 'hold');
    try {
      await a.get(SymbolNamed)[SETTLE]();
      expect([spyA.mock.calls.length, spyB.mock.calls.length]).toEqual([1, 0]);
      await b.get(SymbolNamed)[SETTLE]();
      expect([spyA.mock.calls.length, spyB.mock.calls.length]).toEqual([1, 1]);
    } finally {
      spyA.mockRestore();
      spyB.mockRestore();
    }
  });

  it('concurrent calls from both apps never overlap', async () => {
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? b : a).get(Overlapping).run('x')),
    );
    expect(seen.runs).toBe(10);
    expect(seen.maxInside).toBe(1);
  });

  it('an instance no app created fails closed with RedlockConfigError, and does not run', async () => {
    const orphan = new SymbolNamed();
    await expect(orphan[SETTLE]()).rejects.toBeInstanceOf(RedlockConfigError);
    await expect(orphan[SETTLE]()).rejects.toThrow(/SymbolNamed\.Symbol\(settle\)/);
    expect(seen.runs).toBe(0);
  });
});

describe('@Locked shapes that cannot be locked fail the bootstrap', () => {
  it('a synchronous provider method: RedlockConfigError naming it, asking for async', async () => {
    @Injectable()
    class SyncMethod {
      @Locked('shape:sync')
      double(n: number): number {
        return n * 2;
      }
    }
    const failed = await createApp([SyncMethod]).then(
      async (app) => {
        await app.close();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(RedlockConfigError);
    expect(String((failed as Error).message)).toMatch(/@Locked on SyncMethod\.double.*async/);
  });

  it('a synchronous generator method fails when the decorator is applied', () => {
    expect(() => {
      class SyncGenerator {
        @Locked('shape:sync-gen')
        *items() {
          yield 1;
        }
      }
      return SyncGenerator;
    }).toThrow(/@Locked on SyncGenerator\.items.*async/);
  });
});

describe('@Cron/@Interval with ScheduleModule imported before RedlockModule', () => {
  @Injectable()
  class Job {
    @Interval(40)
    @Locked('shape:job', { wait: 30_000 })
    async tick(): Promise<void> {
      await work(60);
    }
  }

  it('the job never runs on two instances at once', async () => {
    const apps = [
      await createApp([Job], [ScheduleModule.forRoot()]),
      await createApp([Job], [ScheduleModule.forRoot()]),
    ];
    try {
      const until = Date.now() + 10_000;
      while (seen.runs < 6 && Date.now() < until) await delay(20);
    } finally {
      await Promise.all(apps.map((app) => app.close()));
    }
    expect(seen.runs).toBeGreaterThanOrEqual(6);
    expect(seen.maxInside).toBe(1);
  });
});
