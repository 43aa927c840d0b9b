import {
  Body,
  Controller,
  Param,
  Post,
  type INestApplication,
  type LoggerService,
} from '@nestjs/common';
import { BullModule, Processor, WorkerHost } from '@nestjs/bullmq';
import { Test } from '@nestjs/testing';
import { Queue, QueueEvents, type Job } from 'bullmq';
import request from 'supertest';
import { Locked, Redlock, RedlockModule, type RedlockModuleOptions } from '../../lib';
import { RecordingLogger } from '../integration/helpers';
import { startFleet, type RedisFleet } from '../support/fleet';
import { releasePort, reservePort } from '../support/ports';

/**
 * A new user's first hour (issue 25): what the start says, what a caller and a queue's dashboard
 * read, on real redis-server nodes and a real BullMQ queue.
 */

let fleet: RedisFleet;
let rival: Redlock;

beforeAll(async () => {
  fleet = await startFleet(3);
  rival = new Redlock(fleet.urls(), { nodeTimeout: 250, logger: new RecordingLogger() });
});

afterAll(async () => {
  await rival?.close();
  await fleet?.stop();
});

@Controller('v')
class ValuesController {
  @Post()
  @Locked('v:{body.x}', { wait: 0 })
  put(@Body() body: { x: string }) {
    return { x: body.x };
  }

  @Post(':id')
  @Locked('first-hour:{id}', { wait: 0 })
  run(@Param('id') id: string) {
    return { id };
  }
}

async function startApp(
  options: Partial<RedlockModuleOptions>,
  logger: LoggerService | false = false,
  metadata: { controllers?: unknown[]; providers?: unknown[]; imports?: unknown[] } = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({ nodes: fleet.urls(), nodeTimeout: 250, ...options }),
      ...((metadata.imports ?? []) as never[]),
    ],
    controllers: (metadata.controllers ?? []) as never[],
    providers: (metadata.providers ?? []) as never[],
  }).compile();
  const app = moduleRef.createNestApplication({ logger });
  await app.init();
  return app;
}

describe('start-up tells the truth', () => {
  it('one line per lock manager with each node, and a warning naming awaitQuorum when no quorum is reachable', async () => {
    const logger = new RecordingLogger();
    const app = await startApp({}, logger as unknown as LoggerService);
    await app.close();
    const ports = fleet.nodes.map((node) => node.port);
    expect(logger.lines).toContain(
      `log 3 nodes, quorum 2: ${ports.map((port) => `127.0.0.1:${port} up`).join(', ')}`,
    );
    expect(logger.lines.filter((l) => /awaitQuorum/.test(l))).toEqual([]);

    const dead: number[] = [];
    try {
      for (let i = 0; i < 2; i++) dead.push(await reservePort());
      const down = new RecordingLogger();
      const nodes = [fleet.urls()[0], ...dead.map((port) => `redis://127.0.0.1:${port}`)];
      const started = await startApp({ nodes }, down as unknown as LoggerService);
      await started.close();
      expect(down.lines).toContain(
        // The one node up is young and its peers are silent: it cannot be told from a node that
        // restarted empty a moment ago, so it does not vote yet (docs/guarantees.md).
        `log 3 nodes, quorum 2: 127.0.0.1:${ports[0]} up (not voting), 127.0.0.1:${dead[0]} down, 127.0.0.1:${dead[1]} down — no quorum reachable`,
      );
      expect(
        down.lines.filter((l) => l.startsWith('warn No quorum of lock nodes is reachable')),
      ).toEqual([expect.stringMatching(/set awaitQuorum/)]);
    } finally {
      for (const port of dead) releasePort(port);
    }
  });

  it('a Redis user without @scripting fails the bootstrap, naming the category and the ACL SETUSER', async () => {
    for (const node of fleet.nodes) {
      await node.command(
        'ACL',
        'SETUSER',
        'app',
        'reset',
        'on',
        '>pw',
        '~*',
        '&*',
        '+@all',
        '-@scripting',
      );
    }
    try {
      const nodes = fleet.nodes.map((node) => `redis://app:pw@127.0.0.1:${node.port}`);
      const error = await startApp({ nodes }).then(
        async (app) => {
          await app.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(String((error as Error).message).split('\n')[0]).toMatch(
        /^Redis user "app" may not run what nestjs-redlock needs on /,
      );
      expect(String(error)).toContain('ACL SETUSER app +@scripting');
    } finally {
      for (const node of fleet.nodes) await node.command('ACL', 'DELUSER', 'app');
    }
  });
});

describe('what an HTTP caller reads', () => {
  let app: INestApplication;

  beforeAll(async () => {
    app = await startApp({}, false, { controllers: [ValuesController] });
  });

  afterAll(async () => {
    await app?.close();
  });

  it('a missing or whitespace-only template value: 400 naming neither the template nor the option', async () => {
    const expected = {
      statusCode: 400,
      error: 'Bad Request',
      message: 'The lock resource could not be named from the request',
    };
    const missing = await request(app.getHttpServer()).post('/v').send({});
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual(expected);
    const blank = await request(app.getHttpServer()).post('/v').send({ x: '   ' });
    expect(blank.status).toBe(400);
    expect(blank.body).toEqual(expected);
    const long = await request(app.getHttpServer())
      .post('/v')
      .send({ x: 'y'.repeat(2_000) });
    expect(long.status).toBe(400);
    expect(long.body).toEqual(expected);
  });

  it('409 and 503 bodies are spelt out', async () => {
    const held = await rival.acquire('first-hour:1');
    try {
      const busy = await request(app.getHttpServer()).post('/v/1');
      expect(busy.status).toBe(409);
      expect(busy.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: 'The resource is locked by another request; retry later',
      });
    } finally {
      await held.release();
    }
  });
});

const BULL_QUEUE = 'first-hour-jobs';

@Processor(BULL_QUEUE)
class Reports extends WorkerHost {
  @Locked('ctx:{args.0.data.id}', { wait: 0 })
  async process(job: Job<{ id?: string }>): Promise<string> {
    return `done ${job.data.id}`;
  }
}

describe("what a queue's dashboard reads", () => {
  it("a failed job's failedReason and stacktrace carry no resource, template, node address or option", async () => {
    const connection = { host: '127.0.0.1', port: fleet.nodes[0].port };
    const app = await startApp({}, false, {
      imports: [BullModule.forRoot({ connection }), BullModule.registerQueue({ name: BULL_QUEUE })],
      providers: [Reports],
    });
    const queue = new Queue(BULL_QUEUE, { connection });
    const events = new QueueEvents(BULL_QUEUE, { connection });
    try {
      await events.waitUntilReady();
      const held = await rival.acquire('ctx:2');
      let busy: Job;
      let blank: Job;
      try {
        busy = await queue.add('report', { id: '2' });
        blank = await queue.add('report', { id: ' ' });
        for (const job of [busy, blank]) {
          await expect(job.waitUntilFinished(events, 20_000)).rejects.toBeDefined();
        }
      } finally {
        await held.release();
      }
      for (const job of [busy, blank]) {
        const failed = (await queue.getJob(job.id!))!;
        const record = `${failed.failedReason}\n${(failed.stacktrace ?? []).join('\n')}`;
        expect(failed.failedReason).toBeTruthy();
        expect(record).not.toMatch(/ctx:|\{args|127\.0\.0\.1|maxResourceLength/);
        for (const node of fleet.nodes) expect(record).not.toContain(String(node.port));
      }
      expect((await queue.getJob(busy!.id!))!.failedReason).toBe(
        'The lock is held by another owner (1 attempt)',
      );
    } finally {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await Promise.all([queue.close(), events.close()]);
      await app.close();
    }
  });
});
