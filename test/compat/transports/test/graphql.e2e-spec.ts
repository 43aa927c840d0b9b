// Apollo GraphQL (code first, on Express, NODE_ENV=production): busy and outage reach the
// caller as GraphQL errors with extensions.code LOCK_BUSY / LOCK_UNAVAILABLE.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Outcome } from '../src/stock.store.js';
import {
  assertExclusion,
  assertNoLeak,
  assertNotLoggedAsError,
  hangMajority,
  holdLock,
  startInstances,
  stopInstances,
  Store,
  type Instance,
} from './harness.js';

interface GraphqlResponse {
  data?: Record<string, Outcome | null> | null;
  errors?: { message: string; extensions?: { code?: unknown } }[];
}

describe('Apollo GraphQL: @Locked mutations on two instances', { timeout: 180_000 }, () => {
  let instances: Instance[] = [];
  const store = new Store();

  before(async () => {
    instances = await startInstances('graphql');
  });

  after(async () => {
    await stopInstances(instances);
    await store.close();
  });

  const mutate = async (
    instance: Instance,
    field: 'decrement' | 'tryDecrement' | 'tryDecrementViaService',
    id: string,
  ) => {
    const res = await fetch(`http://127.0.0.1:${instance.port}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: `mutation ($id: String!) { ${field}(id: $id) { ok left instance } }`,
        variables: { id },
      }),
    });
    const text = await res.text();
    return { body: JSON.parse(text) as GraphqlResponse, text, field };
  };

  it('50 concurrent decrements over both instances: never oversold, no overlap', async () => {
    await assertExclusion(store, 'graphql-x', async (i): Promise<Outcome | 'busy'> => {
      const { body, text } = await mutate(instances[i % 2], 'decrement', 'graphql-x');
      if (body.errors?.[0]?.extensions?.code === 'LOCK_BUSY') return 'busy';
      assert.equal(body.errors, undefined, text);
      assert.ok(body.data?.decrement, text);
      return body.data.decrement;
    });
  });

  /** The resolver that locks, and the one whose provider method does (architecture.md §5.12). */
  const fields = [
    ['tryDecrement', 'a @Locked resolver'],
    ['tryDecrementViaService', 'a @Locked provider method under a plain resolver'],
  ] as const;

  for (const [field, what] of fields) {
    it(`${what}, lock held → a GraphQL error with extensions.code LOCK_BUSY, on both instances; nothing leaks`, async () => {
      const id = `graphql-busy-${field}`;
      await store.seed(id, 5);
      const held = await holdLock(id);
      try {
        for (const instance of instances) {
          const from = instance.output().length;
          const { body, text } = await mutate(instance, field, id);
          console.log(`answer: busy, ${what} (instance ${instance.name}): ${text}`);
          assert.equal(body.errors?.length, 1, text);
          assert.equal(body.errors[0].extensions?.code, 'LOCK_BUSY', text);
          assert.equal(body.data?.[field] ?? null, null, text);
          assertNoLeak(text, id);
          await assertNotLoggedAsError(instance, from);
        }
      } finally {
        await held.release();
      }
      assert.equal((await store.read(id)).stock, 5, 'the resolver ran without the lock');
    });
  }

  // Last: they hang two of the three lock nodes and resume them.
  for (const [field, what] of fields) {
    it(`${what}, a majority of lock nodes hung → extensions.code LOCK_UNAVAILABLE; nothing leaks`, async () => {
      const id = `graphql-down-${field}`;
      await store.seed(id, 5);
      const resume = hangMajority();
      try {
        for (const instance of instances) {
          const { body, text } = await mutate(instance, field, id);
          console.log(`answer: unavailable, ${what} (instance ${instance.name}): ${text}`);
          assert.equal(body.errors?.length, 1, text);
          assert.equal(body.errors[0].extensions?.code, 'LOCK_UNAVAILABLE', text);
          assertNoLeak(text, id);
        }
      } finally {
        resume();
      }
      assert.equal((await store.read(id)).stock, 5, 'the resolver ran without the lock');
    });
  }
});
