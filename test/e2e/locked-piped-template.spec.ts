import { setTimeout as delay } from 'node:timers/promises';
import {
  Controller,
  Get,
  Param,
  ParseIntPipe,
  Post,
  UseGuards,
  type CanActivate,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Locked, RedlockModule } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * One meaning per template (architecture.md §5.10, issue 17 item 1): `@Locked('stock:{id}')` locks the
 * id the handler receives, after its pipes. `/stock/042` and `/stock/42` are one item to a
 * handler that binds `@Param('id', ParseIntPipe)`, so they must take one lock; plain (non-async)
 * handlers keep working, also with `{args.N}`; the lock is taken after guards.
 */

let fleet: RedisFleet;
let app: INestApplication;

/** Per item (as the handler sees it): how many calls are inside now, and the most ever. */
const inside = new Map<number, number>();
let maxInside = 0;
let guardCalls = 0;

async function work(id: number): Promise<void> {
  const now = (inside.get(id) ?? 0) + 1;
  inside.set(id, now);
  maxInside = Math.max(maxInside, now);
  try {
    await delay(300);
  } finally {
    inside.set(id, (inside.get(id) ?? 1) - 1);
  }
}

class CountingGuard implements CanActivate {
  canActivate(): boolean {
    guardCalls++;
    return true;
  }
}

@Controller('stock')
class StockController {
  @Post(':id/decrement')
  @Locked('stock:{id}')
  async decrement(@Param('id', ParseIntPipe) id: number): Promise<{ id: number }> {
    await work(id);
    return { id };
  }

  /** Not async: the README's headline shape. */
  @Get(':id/plain')
  @Locked('stock:{id}')
  plain(@Param('id', ParseIntPipe) id: number): { id: number; plain: true } {
    return { id, plain: true };
  }

  /** Not async, named from its arguments: boots and locks. */
  @Get(':id/args')
  @Locked('stock:{args.0}')
  byArgs(@Param('id', ParseIntPipe) id: number): { id: number } {
    return { id };
  }

  /** The raw value where nothing transforms it: `{id}` without a bound parameter. */
  @Post(':id/unbound')
  @UseGuards(CountingGuard)
  @Locked('stock:{id}')
  async unbound(): Promise<string> {
    return 'ok';
  }
}

beforeAll(async () => {
  fleet = await startFleet(3);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls(), nodeTimeout: 250 })],
    controllers: [StockController],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

describe("@Locked('stock:{id}') with @Param('id', ParseIntPipe)", () => {
  it('takes one lock for /stock/42 and /stock/042: they never run at once', async () => {
    maxInside = 0;
    const server = app.getHttpServer();
    const responses = await Promise.all(
      ['42', '042', '42', '0042'].map((id) => request(server).post(`/stock/${id}/decrement`)),
    );
    expect(responses.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(responses.map((r) => r.body)).toEqual([{ id: 42 }, { id: 42 }, { id: 42 }, { id: 42 }]);
    expect(maxInside).toBe(1);
  });

  it('keeps a plain (non-async) handler working, with {id} and with {args.0}', async () => {
    const server = app.getHttpServer();
    await request(server).get('/stock/7/plain').expect(200, { id: 7, plain: true });
    await request(server).get('/stock/007/args').expect(200, { id: 7 });
  });

  it('answers 400 from the pipe without taking a lock, and runs guards first', async () => {
    const server = app.getHttpServer();
    await request(server).post('/stock/abc/decrement').expect(400);
    const before = guardCalls;
    await request(server).post('/stock/x1/unbound').expect(201);
    expect(guardCalls).toBe(before + 1);
  });
});
