import {
  Controller,
  Injectable,
  Post,
  type INestApplication,
  type LoggerService,
} from '@nestjs/common';
import { Args, Query, Resolver } from '@nestjs/graphql';
import { EventPattern } from '@nestjs/microservices';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { Test } from '@nestjs/testing';
import {
  Locked,
  RedlockConfigError,
  RedlockError,
  RedlockModule,
  type RedlockModuleOptions,
} from '../../lib';
import { RecordingLogger } from '../integration/helpers';
import { startFleet, type RedisFleet } from '../support/fleet';
import { releasePort, reservePort } from '../support/ports';

/**
 * Bootstrap checks in every context (issue 17 items 3 and 4): resolver templates are checked
 * like the others, a missing RedlockModule says to import it, one node is logged as having no
 * fault tolerance, `awaitQuorum` makes the bootstrap wait for (or fail without) a quorum, and
 * `onBusy: 'skip'` is refused on queue consumers.
 */

let fleet: RedisFleet;

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await fleet?.stop();
});

/** The bootstrap's error, or undefined when the app started (it is then closed). */
async function bootstrapError(
  metadata: { controllers?: unknown[]; providers?: unknown[] },
  options: Partial<RedlockModuleOptions> | false = {},
  logger: LoggerService | false = false,
): Promise<unknown> {
  let app: INestApplication | undefined;
  try {
    const moduleRef = await Test.createTestingModule({
      imports:
        options === false
          ? []
          : [RedlockModule.forRoot({ nodes: fleet.urls(), nodeTimeout: 250, ...options })],
      controllers: (metadata.controllers ?? []) as never[],
      providers: (metadata.providers ?? []) as never[],
    }).compile();
    app = moduleRef.createNestApplication({ logger });
    await app.init();
    return undefined;
  } catch (error) {
    return error;
  } finally {
    // Also after a failed init: the lock manager's connections are open by then.
    await app?.close().catch(() => undefined);
  }
}

describe('GraphQL resolvers', () => {
  it('{data…} on a resolver fails the bootstrap, naming {args.N}', async () => {
    @Resolver()
    class ByData {
      @Query(() => String)
      @Locked('item:{data.id}')
      item(@Args('id') id: string): string {
        return id;
      }
    }
    const error = await bootstrapError({ providers: [ByData] });
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(String(error)).toMatch(/@Locked on ByData\.item.*GraphQL resolver.*\{args\.0\}/);
  });

  it('{args.N} on a plain (non-async) resolver boots', async () => {
    @Resolver()
    class ByArgs {
      @Query(() => String)
      @Locked('item:{args.0}')
      item(@Args('id') id: string): string {
        return id;
      }
    }
    expect(await bootstrapError({ providers: [ByArgs] })).toBeUndefined();
  });
});

describe('without RedlockModule', () => {
  it('a @Locked controller fails the bootstrap with a message saying to import RedlockModule.forRoot()', async () => {
    @Controller('x')
    class Orphan {
      @Post()
      @Locked('x')
      run() {}
    }
    expect(String(await bootstrapError({ controllers: [Orphan] }, false))).toMatch(
      /import RedlockModule\.forRoot/,
    );
  });

  it('a @Locked provider too', async () => {
    @Injectable()
    class OrphanService {
      @Locked('x')
      async run() {}
    }
    expect(String(await bootstrapError({ providers: [OrphanService] }, false))).toMatch(
      /import RedlockModule\.forRoot/,
    );
  });
});

describe('module diagnostics', () => {
  it('one node: a warning that there is no fault tolerance', async () => {
    const logger = new RecordingLogger();
    const error = await bootstrapError(
      {},
      { nodes: [fleet.urls()[0]] },
      logger as unknown as LoggerService,
    );
    expect(error).toBeUndefined();
    expect(
      logger.lines.filter((l) => l.startsWith('warn') && /one node.*no fault tolerance/.test(l)),
    ).toHaveLength(1);
  });

  it('three nodes: no such warning', async () => {
    const logger = new RecordingLogger();
    expect(await bootstrapError({}, {}, logger as unknown as LoggerService)).toBeUndefined();
    expect(logger.lines.filter((l) => /fault tolerance/.test(l))).toEqual([]);
  });

  it('awaitQuorum: boots once a quorum answers, fails the bootstrap when none does in time', async () => {
    expect(await bootstrapError({}, { awaitQuorum: 5_000 })).toBeUndefined();
    const dead: number[] = [];
    try {
      for (let i = 0; i < 3; i++) dead.push(await reservePort());
      const started = performance.now();
      const error = await bootstrapError(
        {},
        { nodes: dead.map((port) => `redis://127.0.0.1:${port}`), awaitQuorum: 1_500 },
      );
      expect(error).toBeInstanceOf(RedlockError);
      expect(String(error)).toMatch(
        /No quorum of lock nodes answered within awaitQuorum \(1500 ms\)/,
      );
      expect(performance.now() - started).toBeGreaterThanOrEqual(1_400);
    } finally {
      for (const port of dead) releasePort(port);
    }
  });

  it.each([-1, 'soon', Number.NaN])(
    'awaitQuorum %p is a RedlockConfigError naming it',
    async (value) => {
      const error = await bootstrapError({}, { awaitQuorum: value as number });
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect(String(error)).toMatch(/Invalid option awaitQuorum/);
    },
  );

  it('lockErrorFilter that is not a boolean is a RedlockConfigError naming it', () => {
    expect(() =>
      RedlockModule.forRoot({ nodes: fleet.urls(), lockErrorFilter: 'no' as unknown as boolean }),
    ).toThrow(/Invalid option lockErrorFilter/);
  });
});

describe("onBusy: 'skip' on queue consumers", () => {
  it('a BullMQ @Processor fails the bootstrap: a skipped job would be marked completed', async () => {
    @Processor('reports')
    class ReportsProcessor extends WorkerHost {
      @Locked('report:{args.0.id}', { onBusy: 'skip' })
      async process(job: Job): Promise<void> {
        void job;
      }
    }
    const error = await bootstrapError({ providers: [ReportsProcessor] });
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(String(error)).toMatch(/options\.onBusy.*BullMQ @Processor.*onBusy: 'throw'/);
  });

  it('an @EventPattern handler fails the bootstrap too; onBusy: throw boots', async () => {
    @Controller()
    class Events {
      @EventPattern('order.placed')
      @Locked('order:{data.id}', { onBusy: 'skip' })
      placed() {}
    }
    expect(String(await bootstrapError({ controllers: [Events] }))).toMatch(
      /@EventPattern handler/,
    );
    @Processor('reports')
    class Throwing extends WorkerHost {
      @Locked('report:{args.0.id}', { onBusy: 'throw' })
      async process(): Promise<void> {}
    }
    expect(await bootstrapError({ providers: [Throwing] })).toBeUndefined();
  });
});
