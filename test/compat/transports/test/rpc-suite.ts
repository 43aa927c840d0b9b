// A microservice over a real broker (NATS: both instances in one queue group; RabbitMQ: both
// consuming one queue): busy and outage reach the caller as RpcException payloads
// { status: 'error', code, retryAfterMs? }. Run by nats.e2e-spec and rabbitmq.e2e-spec.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ClientProxyFactory, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { brokerOptions } from '../src/env.js';
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

interface RpcError {
  status?: unknown;
  code?: unknown;
  retryAfterMs?: unknown;
}

export function rpcSuite(transport: 'nats' | 'rabbitmq', title: string): void {
  describe(`${title}: @Locked message handlers on two instances`, { timeout: 180_000 }, () => {
    let instances: Instance[] = [];
    let client: ClientProxy;
    const store = new Store();

    before(async () => {
      instances = await startInstances(transport);
      client = ClientProxyFactory.create(brokerOptions(transport));
      await client.connect();
    });

    after(async () => {
      await client?.close();
      await stopInstances(instances);
      await store.close();
    });

    /** The reply, or the error the caller got (never both). */
    const send = async (
      pattern: string,
      id: string,
    ): Promise<{ reply?: Outcome; error?: RpcError; text: string }> => {
      try {
        const reply = await firstValueFrom(client.send<Outcome>(pattern, { id }));
        return { reply, text: JSON.stringify(reply) };
      } catch (error) {
        const text =
          error instanceof Error ? `${error.message} ${error.stack}` : JSON.stringify(error);
        return { error: error as RpcError, text };
      }
    };

    it('50 concurrent decrements, spread over both instances by the broker: never oversold, no overlap', async () => {
      await assertExclusion(store, `${transport}-x`, async (): Promise<Outcome | 'busy'> => {
        const { reply, error, text } = await send('stock.decrement', `${transport}-x`);
        if (error?.code === 'LOCK_BUSY') return 'busy';
        assert.ok(reply, text);
        return reply;
      });
    });

    /** The handler that locks, and the one whose provider method does (architecture.md §5.12). */
    const paths = [
      ['stock.try-decrement', 'a @Locked handler'],
      ['stock.try-decrement-via-service', 'a @Locked provider method under a plain handler'],
    ] as const;

    for (const [pattern, what] of paths) {
      it(`${what}, lock held → { status: "error", code: "LOCK_BUSY", retryAfterMs }; nothing leaks`, async () => {
        const id = `${transport}-busy-${pattern}`;
        await store.seed(id, 5);
        const held = await holdLock(id);
        const from = instances.map((instance) => instance.output().length);
        try {
          // The broker picks the instance (none is addressable): six calls.
          for (let i = 0; i < 6; i++) {
            const { error, text } = await send(pattern, id);
            if (i === 0) console.log(`answer: busy, ${what}: ${text}`);
            assert.ok(error, `no error: ${text}`);
            assert.equal(error.status, 'error', text);
            assert.equal(error.code, 'LOCK_BUSY', text);
            assert.ok(
              typeof error.retryAfterMs === 'number' &&
                error.retryAfterMs > 0 &&
                error.retryAfterMs <= 10_000,
              text,
            );
            assertNoLeak(text, id);
          }
        } finally {
          await held.release();
        }
        for (const [i, instance] of instances.entries())
          await assertNotLoggedAsError(instance, from[i]);
        assert.equal((await store.read(id)).stock, 5, 'the handler ran without the lock');
      });
    }

    // Last: they hang two of the three lock nodes and resume them.
    for (const [pattern, what] of paths) {
      it(`${what}, a majority of lock nodes hung → { status: "error", code: "LOCK_UNAVAILABLE" }; nothing leaks`, async () => {
        const id = `${transport}-down-${pattern}`;
        await store.seed(id, 5);
        const resume = hangMajority();
        try {
          for (let i = 0; i < 4; i++) {
            const { error, text } = await send(pattern, id);
            if (i === 0) console.log(`answer: unavailable, ${what}: ${text}`);
            assert.ok(error, `no error: ${text}`);
            assert.equal(error.status, 'error', text);
            assert.equal(error.code, 'LOCK_UNAVAILABLE', text);
            assertNoLeak(text, id);
          }
        } finally {
          resume();
        }
        assert.equal((await store.read(id)).stock, 5, 'the handler ran without the lock');
      });
    }
  });
}
