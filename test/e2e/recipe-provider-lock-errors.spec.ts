import { Controller, Injectable, type INestApplication, Param, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Locked, RedlockModule, RedlockService } from 'nestjs-redlock';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * docs/recipes.md (CQRS): a `@Locked` provider method reached from an HTTP handler — its lock
 * errors get the HTTP answers from the filter the module installs (409 with Retry-After), and
 * are Nest's generic 500 with `lockErrorFilter: false`.
 */

@Injectable()
class Accounts {
  @Locked('account:{args.0}', { wait: 0 })
  async withdraw(id: string): Promise<{ id: string }> {
    return { id };
  }
}

@Controller('accounts')
class AccountsController {
  constructor(private readonly accounts: Accounts) {}

  @Post(':id/withdraw')
  withdraw(@Param('id') id: string) {
    return this.accounts.withdraw(id);
  }
}

let fleet: RedisFleet;

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await fleet?.stop();
});

async function boot(withFilter: boolean): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({
        nodes: fleet.urls(),
        ...(withFilter ? {} : { lockErrorFilter: false }),
      }),
    ],
    controllers: [AccountsController],
    providers: [Accounts],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('lock errors of a @Locked provider method below an HTTP handler', () => {
  it.each([
    ['with the module filter (default)', 409, true],
    ['with lockErrorFilter: false', 500, false],
  ])('%s, a busy lock answers %i', async (_label, status, withFilter) => {
    const app = await boot(withFilter);
    try {
      const lock = await app.get(RedlockService).acquire('account:a1', { ttl: 5_000 });
      const response = await request(app.getHttpServer()).post('/accounts/a1/withdraw');
      expect(response.status).toBe(status);
      if (withFilter) {
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(JSON.stringify(response.body)).not.toContain('account:a1');
      }
      await lock.release();
      await request(app.getHttpServer()).post('/accounts/a1/withdraw').expect(201);
    } finally {
      await app.close();
    }
  });
});
