import { Controller, Injectable, Module, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  CurrentLock,
  Locked,
  LockReentryError,
  RedlockModule,
  RedlockService,
  type Lock,
} from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { onEveryNode } from '../support/eventually';

/**
 * Issue 7 item 5/6: reentrancy nested 3 deep — a `@Locked` handler calling a `@Locked` provider
 * method that calls another — takes the lock once and releases it when the handler ends.
 */
const seen: { tokens: (number | undefined)[]; values: string[]; nested?: unknown } = {
  tokens: [],
  values: [],
};

@Injectable()
class Ledger {
  constructor(private readonly redlock: RedlockService) {}

  @Locked('order:{args.0}', { reentrant: true })
  async post(id: string): Promise<string> {
    this.note();
    return this.audit(id);
  }

  @Locked('order:{args.0}', { reentrant: true })
  async audit(_id: string): Promise<string> {
    this.note();
    return 'audited';
  }

  /** Not reentrant: calling it from inside the order's lock is refused at once. */
  @Locked('order:{args.0}')
  async strict(_id: string): Promise<string> {
    return 'strict';
  }

  private note(): void {
    const lock = this.redlock.currentLock()!;
    seen.tokens.push(lock.fencingToken);
    seen.values.push(lock.value);
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly ledger: Ledger) {}

  @Post(':id/post')
  @Locked('order:{id}', { fencing: true })
  async post(@Param('id') id: string, @CurrentLock() lock: Lock): Promise<string> {
    seen.tokens.push(lock.fencingToken);
    seen.values.push(lock.value);
    return this.ledger.post(id);
  }

  @Post(':id/strict')
  @Locked('order:{id}')
  async strict(@Param('id') id: string): Promise<string> {
    try {
      return await this.ledger.strict(id);
    } catch (error) {
      seen.nested = error;
      return 'refused';
    }
  }
}

@Module({ controllers: [OrdersController], providers: [Ledger] })
class OrdersModule {}

describe('reentrancy through @Locked (3 real nodes)', () => {
  let fleet: RedisFleet;
  let app: INestApplication;

  beforeAll(async () => {
    fleet = await startFleet(3);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: fleet.urls() }), OrdersModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
  });

  it('nested 3 deep: one acquisition, one token, released when the handler ends', async () => {
    const redlock = app.get(RedlockService).redlock;
    let acquisitions = 0;
    redlock.on('acquired', () => acquisitions++);
    await request(app.getHttpServer()).post('/orders/7/post').expect(201, 'audited');
    expect(acquisitions).toBe(1);
    expect(seen.tokens).toHaveLength(3);
    expect(new Set(seen.tokens).size).toBe(1);
    expect(seen.tokens[0]).toBeGreaterThan(0);
    expect(new Set(seen.values).size).toBe(1);
    expect(await onEveryNode(fleet, 'redlock:order:7', false)).toBe(true);
  });

  it('a nested call without reentrant fails at once instead of waiting for itself', async () => {
    const started = performance.now();
    await request(app.getHttpServer()).post('/orders/8/strict').expect(201, 'refused');
    expect(seen.nested).toBeInstanceOf(LockReentryError);
    expect(performance.now() - started).toBeLessThan(5_000); // the default wait is 10 s
  });
});
