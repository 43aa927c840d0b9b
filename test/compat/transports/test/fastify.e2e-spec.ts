// Fastify (HTTP): two instances, one stock; busy → 409 + Retry-After, outage → 503.
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

describe('Fastify: @Locked routes on two instances', { timeout: 180_000 }, () => {
  let instances: Instance[] = [];
  const store = new Store();

  before(async () => {
    instances = await startInstances('fastify');
  });

  after(async () => {
    await stopInstances(instances);
    await store.close();
  });

  const post = (instance: Instance, route: string) =>
    fetch(`http://127.0.0.1:${instance.port}/stock/${route}`, { method: 'POST' });

  /** Everything the caller got: status line, headers and body. */
  const received = async (res: Response) =>
    `${res.status} ${res.statusText}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${await res.text()}`;

  it('50 concurrent decrements over both instances: never oversold, no overlap', async () => {
    await assertExclusion(store, 'fastify-x', async (i): Promise<Outcome | 'busy'> => {
      const res = await post(instances[i % 2], 'fastify-x/decrement');
      if (res.status === 409) return 'busy';
      const text = await received(res);
      assert.equal(res.status, 200, text);
      return JSON.parse(text.slice(text.indexOf('\n\n') + 2)) as Outcome;
    });
  });

  /** What a caller got, one line (run.mjs shows `answer:` lines of a passing cell). */
  const report = (what: string, instance: Instance, res: Response, text: string) =>
    console.log(
      `answer: ${what} (instance ${instance.name}): ${res.status}` +
        `${res.headers.has('retry-after') ? `, Retry-After: ${res.headers.get('retry-after')}` : ''}` +
        `, ${text.slice(text.indexOf('\n\n') + 2)}`,
    );

  /** The route that locks, and those whose provider or command handler does (architecture.md §5.12). */
  const routes = [
    ['try-decrement', 'a @Locked route'],
    ['try-decrement-via-service', 'a @Locked provider method under a plain route'],
    ['try-decrement-via-command', 'a @Locked CQRS command handler under a plain route'],
  ] as const;

  for (const [route, what] of routes) {
    it(`${what}, lock held → 409 Conflict with Retry-After, on both instances; nothing leaks`, async () => {
      const id = `fastify-busy-${route}`;
      await store.seed(id, 5);
      const held = await holdLock(id);
      try {
        for (const instance of instances) {
          const from = instance.output().length;
          const res = await post(instance, `${id}/${route}`);
          const text = await received(res);
          report(`busy, ${what}`, instance, res, text);
          assert.equal(res.status, 409, text);
          const retryAfter = Number(res.headers.get('retry-after'));
          assert.ok(retryAfter > 0 && retryAfter <= 10, text);
          assertNoLeak(text, id);
          await assertNotLoggedAsError(instance, from);
        }
      } finally {
        await held.release();
      }
      assert.equal((await store.read(id)).stock, 5, 'the handler ran without the lock');
    });
  }

  // Last: they hang two of the three lock nodes and resume them.
  for (const [route, what] of routes) {
    it(`${what}, a majority of lock nodes hung → 503 Service Unavailable; nothing leaks`, async () => {
      const id = `fastify-down-${route}`;
      await store.seed(id, 5);
      const resume = hangMajority();
      try {
        for (const instance of instances) {
          const res = await post(instance, `${id}/${route}`);
          const text = await received(res);
          report(`unavailable, ${what}`, instance, res, text);
          assert.equal(res.status, 503, text);
          assertNoLeak(text, id);
        }
      } finally {
        resume();
      }
      assert.equal((await store.read(id)).stock, 5, 'the handler ran without the lock');
    });
  }
});
