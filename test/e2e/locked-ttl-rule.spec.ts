import { Controller, Get, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Locked, RedlockModule } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * The per-decorator ttl rule as docs/locked.md states it: a `@Locked` ttl below 4 × the module's
 * nodeTimeout fails the bootstrap; 4 × nodeTimeout itself boots.
 */

let fleet: RedisFleet;

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await fleet?.stop();
});

async function boot(controller: Type) {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls(), nodeTimeout: 50 })],
    controllers: [controller],
  }).compile();
  return moduleRef.createNestApplication({ logger: false });
}

describe('@Locked ttl against the module nodeTimeout (50 ms)', () => {
  it('199 ms (below 4 × 50) fails the bootstrap, naming the rule', async () => {
    @Controller()
    class JustBelow {
      @Get()
      @Locked('r', { ttl: 199 })
      get() {}
    }
    const app = await boot(JustBelow);
    await expect(app.init()).rejects.toThrow(/options\.ttl.*at least 4 × nodeTimeout \(50 ms\)/);
    await app.close();
  });

  it('200 ms (4 × 50) boots', async () => {
    @Controller()
    class Exactly {
      @Get()
      @Locked('r', { ttl: 200 })
      get() {}
    }
    const app = await boot(Exactly);
    await app.init();
    await app.close();
  });
});
