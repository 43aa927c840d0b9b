import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Controller,
  Get,
  Injectable,
  Res,
  SetMetadata,
  StreamableFile,
  type INestApplication,
} from '@nestjs/common';
import { ExternalContextCreator } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import type { ServerResponse } from 'node:http';
import { Locked, RedlockConfigError, RedlockModule } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { eventually, HolderProbe, nodesHolding, slowBody } from './locked-hold-aids';

/**
 * Issue 6 item 6: a streamed response is part of the work. The lock of a handler returning a
 * StreamableFile (or piping to @Res()) is held until the body has been streamed (or the stream
 * failed, or the client went away), not released when the handler returned.
 */

let fleet: RedisFleet;
const probe = new HolderProbe();
/** 12 chunks, one every 50 ms: a 600 ms body. */
const CHUNKS = 12;
const EVERY_MS = 50;
/** 60 chunks: a 3 s body, against a first extension ~⅓ of the 1 s ttl in. */
const LONG_CHUNKS = 60;

@Controller('stream')
class StreamController {
  @Get('file')
  @Locked('stream:file', { wait: 20_000 })
  async file() {
    return new StreamableFile(slowBody(probe, CHUNKS, EVERY_MS));
  }

  @Get('piped')
  @Locked('stream:piped', { wait: 20_000 })
  piped(@Res() res: ServerResponse) {
    res.setHeader('content-type', 'text/plain');
    slowBody(probe, CHUNKS, EVERY_MS).pipe(res);
  }

  /** A body far longer than the first extension: the lock can be lost while it streams. */
  @Get('long-file')
  @Locked('stream:long-file')
  async longFile() {
    return new StreamableFile(slowBody(probe, LONG_CHUNKS, EVERY_MS));
  }

  @Get('long-piped')
  @Locked('stream:long-piped')
  longPiped(@Res() res: ServerResponse) {
    res.setHeader('content-type', 'text/plain');
    slowBody(probe, LONG_CHUNKS, EVERY_MS).pipe(res);
  }
}

/** A microservice-like handler returning a stream: nothing would read it under the lock. */
@Injectable()
class RpcFiles {
  @SetMetadata('message', 'file')
  @Locked('stream:rpc', { wait: 20_000 })
  async file() {
    return new StreamableFile(slowBody(probe, CHUNKS, EVERY_MS));
  }
}

/** Reads a body; `onChunk(n)` after each chunk, n counted from 1. */
function fetchBody(
  app: INestApplication,
  path: string,
  onChunk: (n: number, req: http.ClientRequest) => void | Promise<void> = () => undefined,
): Promise<{ status: number; body: string; aborted: boolean }> {
  const { port } = app.getHttpServer().address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      let chunks = 0;
      res.setEncoding('utf8');
      res.on('data', (data: string) => {
        body += data;
        chunks += data.split('\n').length - 1;
        void onChunk(chunks, req);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, aborted: false }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, body, aborted: true }));
      res.on('aborted', () => resolve({ status: res.statusCode ?? 0, body, aborted: true }));
    });
    req.on('error', (error) => {
      if (req.destroyed) resolve({ status: 0, body: '', aborted: true });
      else reject(error);
    });
  });
}

describe('@Locked holds the lock while a response streams (issue 6 item 6)', () => {
  let app: INestApplication;

  beforeAll(async () => {
    fleet = await startFleet(3);
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          nodes: fleet.urls(),
          ttl: 1_000,
          nodeTimeout: 50,
          retryDelay: 5,
          retryJitter: 10,
        }),
      ],
      controllers: [StreamController],
      providers: [RpcFiles],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
  });

  beforeEach(() => probe.reset());

  // Nest destroys a StreamableFile's stream when the client goes away; a body the handler piped
  // to @Res() itself is only unpiped (Node's pipe()), which stops a pull stream from reading.
  for (const [kind, path, resource, destroyedOnAbort] of [
    ['a StreamableFile', '/stream/file', 'stream:file', true],
    ['a body piped to @Res()', '/stream/piped', 'stream:piped', false],
  ] as const) {
    it(`${kind}: the lock is on a quorum halfway through the body, and released after it`, async () => {
      let halfway: Promise<number> | undefined;
      const response = await fetchBody(app, path, (n) => {
        if (n === CHUNKS / 2 && halfway === undefined) halfway = nodesHolding(fleet, resource);
      });
      expect(response.status).toBe(200);
      expect(response.body.split('\n').length - 1).toBe(CHUNKS);
      expect(await halfway).toBeGreaterThanOrEqual(2);
      expect(await eventually(async () => (await nodesHolding(fleet, resource)) === 0)).toBe(true);
    });

    it(`${kind}: two downloads of the same locked body never stream at once`, async () => {
      const [first, second] = await Promise.all([fetchBody(app, path), fetchBody(app, path)]);
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(probe.entered).toBe(2);
      expect(probe.max).toBe(1);
    });

    it(`${kind}: a client that goes away mid-body ends the stream and the lock`, async () => {
      const response = await fetchBody(app, path, (n, req) => {
        if (n === 3) req.destroy();
      });
      expect(response.aborted).toBe(true);
      // The body stopped and the lock went with it.
      if (destroyedOnAbort) expect(await eventually(() => probe.current === 0)).toBe(true);
      expect(await eventually(async () => (await nodesHolding(fleet, resource)) === 0)).toBe(true);
      expect(probe.max).toBe(1);
    });
  }

  // Fail closed: a body must never go on being produced after its lock is gone. The keys are
  // deleted behind the holder's back, so its next extension finds a quorum without them.
  for (const [kind, path, resource] of [
    ['a StreamableFile', '/stream/long-file', 'stream:long-file'],
    ['a body piped to @Res()', '/stream/long-piped', 'stream:long-piped'],
  ] as const) {
    it(`${kind}: a lock lost mid-body stops the body and cuts the response`, async () => {
      let deleted: Promise<unknown> | undefined;
      const response = await fetchBody(app, path, (n) => {
        if (n === 2 && deleted === undefined) {
          deleted = Promise.all(
            fleet.nodes.map((node) => node.command('DEL', `redlock:${resource}`)),
          );
        }
      });
      await deleted;
      expect(response.aborted).toBe(true);
      expect(response.body.split('\n').length - 1).toBeLessThan(LONG_CHUNKS);
      // The producer was stopped, not left running for nobody.
      expect(await eventually(() => probe.current === 0, 2_000)).toBe(true);
      expect(probe.finished).toBe(probe.entered);
    });
  }

  it('an rpc handler returning a stream is refused, the stream destroyed and the lock released', async () => {
    const files = app.get(RpcFiles);
    const handle = app
      .get(ExternalContextCreator)
      .create(
        files,
        files.file as (...args: unknown[]) => unknown,
        'file',
        undefined,
        undefined,
        undefined,
        undefined,
        { interceptors: true, guards: false, filters: false },
        'rpc',
      ) as (...args: unknown[]) => Promise<unknown>;
    await expect(handle({}, {})).rejects.toBeInstanceOf(RedlockConfigError);
    expect(await eventually(async () => (await nodesHolding(fleet, 'stream:rpc')) === 0)).toBe(
      true,
    );
  });
});
