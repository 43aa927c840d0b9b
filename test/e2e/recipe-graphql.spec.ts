import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedlockService } from 'nestjs-redlock';
import request from 'supertest';
import type { AppModule as AppModuleClass } from '../../sample/recipes/graphql/app.module';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * docs/recipes.md's GraphQL recipe (sample/recipes/graphql/, included there verbatim: see
 * test/unit/doc-examples.spec.ts) boots alone — its own module and resolver, nothing else, as a
 * user would copy them — against three real Redis nodes, and its locked mutation takes the lock.
 * The recipe used to show a resolver with a mutation only, which Apollo refuses to start ("Query
 * root type must be provided").
 */

let fleet: RedisFleet;
let app: INestApplication;

beforeAll(async () => {
  fleet = await startFleet(3);
  process.env.LOCK_NODES = fleet.urls().join(',');
  // Imported after LOCK_NODES is set: the module reads it when it is defined, as in an app.
  const { AppModule } = (await import('../../sample/recipes/graphql/app.module')) as {
    AppModule: typeof AppModuleClass;
  };
  app = await NestFactory.create(AppModule, { logger: false });
  await app.init();
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
  delete process.env.LOCK_NODES;
});

const graphql = (query: string, variables: Record<string, unknown>) =>
  request(app.getHttpServer()).post('/graphql').send({ query, variables });

const CLOSE = 'mutation ($email: String!) { closeAccount(email: $email) }';
const IS_CLOSED = 'query ($email: String!) { isClosed(email: $email) }';

describe('the GraphQL recipe', () => {
  it('boots and answers its query', async () => {
    const response = await graphql(IS_CLOSED, { email: 'a@example.com' });
    expect(response.body).toEqual({ data: { isClosed: false } });
  });

  it('closes an account once under 10 concurrent mutations, which race without the lock', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => graphql(CLOSE, { email: 'b@example.com' })),
    );
    const answers = responses.map((r) => (r.body as { data: { closeAccount: boolean } }).data);
    expect(answers.filter((a) => a.closeAccount === true)).toHaveLength(1);
    expect(answers.filter((a) => a.closeAccount === false)).toHaveLength(9);
    expect((await graphql(IS_CLOSED, { email: 'b@example.com' })).body).toEqual({
      data: { isClosed: true },
    });
  });

  it('locks account:<the first argument>: the mutation waits while it is held', async () => {
    const lock = await app.get(RedlockService).acquire('account:c@example.com');
    let settled = false;
    const pending = graphql(CLOSE, { email: 'c@example.com' }).then((response) => {
      settled = true;
      return response;
    });
    await sleep(500);
    expect(settled).toBe(false);
    await lock.release();
    expect((await pending).body).toEqual({ data: { closeAccount: true } });
  });
});
