import { setTimeout as delay } from 'node:timers/promises';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Controller,
  Injectable,
  Param,
  Post,
  UseFilters,
  type INestApplication,
  type LoggerService,
} from '@nestjs/common';
import { Args, GraphQLModule, Mutation, Query, Resolver } from '@nestjs/graphql';
import {
  ClientProxyFactory,
  MessagePattern,
  Payload,
  Transport,
  type ClientProxy,
} from '@nestjs/microservices';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { firstValueFrom } from 'rxjs';
import { io, type Socket } from 'socket.io-client';
import request from 'supertest';
import { Locked, LockedErrorFilter, Redlock, RedlockModule, type Lock } from '../../lib';
import { RecordingLogger } from '../integration/helpers';
import { startFleet, type RedisFleet } from '../support/fleet';
import { releasePort, reservePort } from '../support/ports';

/**
 * What a caller sees of a busy lock and of an outage, in every transport (architecture.md §5.12, issue 17
 * item 2): HTTP 409 + Retry-After / 503 on Express and Fastify; RPC (TCP microservice), WebSocket
 * (socket.io gateway, with the ack) and GraphQL (Apollo) `{ code: 'LOCK_BUSY' |
 * 'LOCK_UNAVAILABLE', retryAfterMs? }` — also when the lock is taken by a `@Locked` provider
 * method deeper in the call (a command handler); never a resource name or a node address; a busy
 * lock is not logged as an error.
 */

/** A lease the handler outlives: no auto-extension, 1 s (4 × the nodeTimeout of 250 ms). */
const LOSES_LOCK = { ttl: 1_000, autoExtend: false };
const SLOW_MS = 1_600;

/** A resource name built from user data: it must never reach a caller. */
const ID = 'alice@example.com';

@Injectable()
class Accounts {
  /** A command handler deeper in the call: a provider method with its own lock. */
  @Locked('account:{args.0}', { wait: 0 })
  async debit(id: string): Promise<string> {
    return `debited ${id}`;
  }
}

@Controller('accounts')
class AccountsController {
  constructor(private readonly accounts: Accounts) {}

  @Post(':id/debit')
  @Locked('account:{id}', { wait: 0 })
  debit(@Param('id') id: string) {
    return { id };
  }

  /** Not locked itself: the provider method it calls is. */
  @Post(':id/command')
  command(@Param('id') id: string) {
    return this.accounts.debit(id);
  }

  @MessagePattern('debit')
  @Locked('account:{data.id}', { wait: 0 })
  rpcDebit(@Payload() data: { id: string }) {
    return { id: data.id };
  }

  /** Outlives its lease (no auto-extension): the lock is lost while it runs. */
  @Post(':id/slow')
  @Locked('slow:{id}', LOSES_LOCK)
  async slow(@Param('id') id: string) {
    await delay(SLOW_MS);
    return { id };
  }

  @MessagePattern('slow')
  @Locked('slow:{data.id}', LOSES_LOCK)
  async rpcSlow(@Payload() data: { id: string }) {
    await delay(SLOW_MS);
    return { id: data.id };
  }

  @MessagePattern('command')
  rpcCommand(@Payload() data: { id: string }) {
    return this.accounts.debit(data.id);
  }
}

/** Nest applies no global filter to gateways: the module's filter is bound here. */
@WebSocketGateway()
@UseFilters(new LockedErrorFilter())
class AccountsGateway {
  constructor(private readonly accounts: Accounts) {}

  @SubscribeMessage('debit')
  @Locked('account:{data.id}', { wait: 0 })
  debit(@MessageBody() data: { id: string }) {
    return { id: data.id };
  }

  @SubscribeMessage('slow')
  @Locked('slow:{data.id}', LOSES_LOCK)
  async slow(@MessageBody() data: { id: string }) {
    await delay(SLOW_MS);
    return { id: data.id };
  }

  @SubscribeMessage('command')
  command(@MessageBody() data: { id: string }) {
    return this.accounts.debit(data.id);
  }
}

@Resolver()
class AccountsResolver {
  constructor(private readonly accounts: Accounts) {}

  @Query(() => String)
  ping(): string {
    return 'pong';
  }

  @Mutation(() => String)
  @Locked('account:{args.0}', { wait: 0 })
  debit(@Args('id') id: string): string {
    return id;
  }

  @Mutation(() => String)
  @Locked('slow:{args.0}', LOSES_LOCK)
  async slow(@Args('id') id: string): Promise<string> {
    await delay(SLOW_MS);
    return id;
  }

  @Mutation(() => String)
  command(@Args('id') id: string): Promise<string> {
    return this.accounts.debit(id);
  }
}

let fleet: RedisFleet;
let rival: Redlock;
let held: Lock;
const deadPorts: number[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

interface Transports {
  http: string;
  rpc: ClientProxy;
  ws: Socket;
  logger: RecordingLogger;
}

/** An Express app with every transport: HTTP, a TCP microservice, a gateway, a resolver. */
async function expressApp(nodes: string[]): Promise<Transports> {
  const logger = new RecordingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({ nodes, nodeTimeout: 250, quarantine: false }),
      GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
    ],
    controllers: [AccountsController],
    providers: [Accounts, AccountsGateway, AccountsResolver],
  }).compile();
  const app: INestApplication = moduleRef.createNestApplication({
    logger: logger as LoggerService,
  });
  const rpcPort = await reservePort();
  deadPorts.push(rpcPort);
  app.connectMicroservice(
    { transport: Transport.TCP, options: { host: '127.0.0.1', port: rpcPort } },
    { inheritAppConfig: true },
  );
  await app.startAllMicroservices();
  await app.listen(0, '127.0.0.1');
  cleanups.push(() => app.close());
  const http = await app.getUrl();
  const rpc = ClientProxyFactory.create({
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port: rpcPort },
  });
  await rpc.connect();
  cleanups.push(async () => rpc.close());
  const ws = io(http, { transports: ['websocket'], forceNew: true });
  await new Promise<void>((resolve, reject) => {
    ws.once('connect', () => resolve());
    ws.once('connect_error', reject);
  });
  cleanups.push(async () => ws.close());
  return { http, rpc, ws, logger };
}

async function fastifyApp(
  nodes: string[],
): Promise<{ app: NestFastifyApplication; logger: RecordingLogger }> {
  const logger = new RecordingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes, nodeTimeout: 250, quarantine: false })],
    controllers: [AccountsController],
    providers: [Accounts],
  }).compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), {
    logger: logger as LoggerService,
  });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  cleanups.push(() => app.close());
  return { app, logger };
}

/** Nothing a caller receives names the resource or a node. */
function expectNoSecrets(received: unknown): void {
  const text = JSON.stringify(received);
  expect(text).not.toContain('alice');
  expect(text).not.toContain('account:');
  expect(text).not.toMatch(/127\.0\.0\.1|localhost|::1/);
}

function expectNoErrorLines(logger: RecordingLogger): void {
  expect(logger.lines.filter((line) => line.startsWith('error'))).toEqual([]);
}

let up: Transports;
let down: Transports;
let fastifyUp: { app: NestFastifyApplication; logger: RecordingLogger };
let fastifyDown: { app: NestFastifyApplication; logger: RecordingLogger };

beforeAll(async () => {
  fleet = await startFleet(3);
  rival = new Redlock(fleet.urls(), {
    nodeTimeout: 250,
    quarantine: false,
    logger: { log() {}, warn() {}, error() {} },
  });
  // Nothing listens on these: every lock node of the "down" apps is unreachable.
  const dead: string[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await reservePort();
    deadPorts.push(port);
    dead.push(`redis://127.0.0.1:${port}`);
  }
  up = await expressApp(fleet.urls());
  down = await expressApp(dead);
  fastifyUp = await fastifyApp(fleet.urls());
  fastifyDown = await fastifyApp(dead);
  held = await rival.acquire(`account:${ID}`, { ttl: 60_000 });
});

afterAll(async () => {
  await held?.release();
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await rival?.close();
  await fleet?.stop();
  for (const port of deadPorts) releasePort(port);
});

const path = (what: string) => `/accounts/${encodeURIComponent(ID)}/${what}`;

describe.each(['debit', 'command'])(
  '%s (the lock on the handler, or on a provider method it calls)',
  (what) => {
    it('HTTP on Express: 409 with Retry-After when busy, 503 when the nodes are down', async () => {
      const busy = await request(up.http).post(path(what));
      expect(busy.status).toBe(409);
      expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
      const outage = await request(down.http).post(path(what));
      expect(outage.status).toBe(503);
      expectNoSecrets([busy.body, busy.headers, outage.body, outage.headers]);
      expectNoErrorLines(up.logger);
    });

    it('HTTP on Fastify: 409 with Retry-After when busy, 503 when the nodes are down', async () => {
      const busy = await fastifyUp.app.inject({ method: 'POST', url: path(what) });
      expect(busy.statusCode).toBe(409);
      expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
      const outage = await fastifyDown.app.inject({ method: 'POST', url: path(what) });
      expect(outage.statusCode).toBe(503);
      expectNoSecrets([busy.body, busy.headers, outage.body, outage.headers]);
      expectNoErrorLines(fastifyUp.logger);
    });

    it('RPC (TCP microservice): { status, code: LOCK_BUSY, retryAfterMs } / LOCK_UNAVAILABLE', async () => {
      const busy: unknown = await firstValueFrom(up.rpc.send(what, { id: ID })).catch((e) => e);
      expect(busy).toEqual({
        status: 'error',
        code: 'LOCK_BUSY',
        message: expect.any(String),
        retryAfterMs: expect.any(Number),
      });
      const outage: unknown = await firstValueFrom(down.rpc.send(what, { id: ID })).catch((e) => e);
      expect(outage).toEqual({
        status: 'error',
        code: 'LOCK_UNAVAILABLE',
        message: expect.any(String),
      });
      expectNoSecrets([busy, outage]);
      expectNoErrorLines(up.logger);
    });

    it('WebSocket (socket.io gateway): the ack and the exception event carry the code', async () => {
      const events: unknown[] = [];
      const onException = (payload: unknown) => events.push(payload);
      up.ws.on('exception', onException);
      const busy: unknown = await up.ws.timeout(10_000).emitWithAck(what, { id: ID });
      const outage: unknown = await down.ws.timeout(10_000).emitWithAck(what, { id: ID });
      up.ws.off('exception', onException);
      expect(busy).toEqual({
        status: 'error',
        code: 'LOCK_BUSY',
        message: expect.any(String),
        retryAfterMs: expect.any(Number),
      });
      expect(outage).toMatchObject({ status: 'error', code: 'LOCK_UNAVAILABLE' });
      expect(events).toEqual([busy]);
      expectNoSecrets([busy, outage, events]);
      expectNoErrorLines(up.logger);
    });

    it('GraphQL (Apollo): errors[0].extensions.code LOCK_BUSY / LOCK_UNAVAILABLE', async () => {
      const query = { query: `mutation { ${what}(id: ${JSON.stringify(ID)}) }` };
      const busy = await request(up.http).post('/graphql').send(query);
      const outage = await request(down.http).post('/graphql').send(query);
      expect(busy.body.errors[0].extensions).toMatchObject({
        code: 'LOCK_BUSY',
        retryAfterMs: expect.any(Number),
      });
      expect(outage.body.errors[0].extensions).toMatchObject({ code: 'LOCK_UNAVAILABLE' });
      expectNoSecrets([
        busy.body.errors[0].message,
        busy.body.errors[0].extensions.code,
        outage.body.errors[0].message,
      ]);
      expect(JSON.stringify([busy.body, outage.body])).not.toMatch(/alice@example|127\.0\.0\.1/);
      expectNoErrorLines(up.logger);
    });
  },
);

it('a lock lost while the handler ran: 500 / LOCK_LOST in every transport', async () => {
  const http = await request(up.http).post(path('slow'));
  const rpc: unknown = await firstValueFrom(up.rpc.send('slow', { id: ID })).catch((e) => e);
  const ws: unknown = await up.ws.timeout(10_000).emitWithAck('slow', { id: ID });
  const graphql = await request(up.http)
    .post('/graphql')
    .send({ query: `mutation { slow(id: ${JSON.stringify(ID)}) }` });
  expect(http.status).toBe(500);
  const lostPayload = { status: 'error', code: 'LOCK_LOST', message: expect.any(String) };
  expect(rpc).toEqual(lostPayload);
  expect(ws).toEqual(lostPayload);
  expect(graphql.body.errors[0].extensions).toMatchObject({ code: 'LOCK_LOST' });
  expectNoSecrets([http.body, rpc, ws, graphql.body.errors[0].message]);
});

it('a free lock runs the handler in every transport', async () => {
  await held.release();
  try {
    await request(up.http).post(path('debit')).expect(201, { id: ID });
    await expect(firstValueFrom(up.rpc.send('command', { id: ID }))).resolves.toBe(`debited ${ID}`);
    await expect(up.ws.timeout(10_000).emitWithAck('debit', { id: ID })).resolves.toEqual({
      id: ID,
    });
    const graphql = await request(up.http)
      .post('/graphql')
      .send({ query: `mutation { debit(id: ${JSON.stringify(ID)}) }` });
    expect(graphql.body).toEqual({ data: { debit: ID } });
  } finally {
    held = await rival.acquire(`account:${ID}`, { ttl: 60_000 });
  }
});
