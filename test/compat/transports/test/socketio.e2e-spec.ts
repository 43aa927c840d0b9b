// A socket.io gateway (one per instance, on each instance's HTTP server): replies are acks;
// busy and outage come back in the ack as { status: 'error', code, retryAfterMs? } (WsException).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { io, type Socket } from 'socket.io-client';
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

interface WsError {
  status?: unknown;
  code?: unknown;
  retryAfterMs?: unknown;
}

describe('socket.io: @Locked gateway handlers on two instances', { timeout: 180_000 }, () => {
  let instances: Instance[] = [];
  let sockets: Socket[] = [];
  /** Every `exception` event each socket received: part of what the caller sees. */
  const exceptions: string[][] = [[], []];
  const store = new Store();

  before(async () => {
    instances = await startInstances('socketio');
    sockets = instances.map((instance, i) => {
      const socket = io(`http://127.0.0.1:${instance.port}`, { transports: ['websocket'] });
      socket.on('exception', (payload: unknown) => exceptions[i].push(JSON.stringify(payload)));
      return socket;
    });
    await Promise.all(
      sockets.map(
        (socket) =>
          new Promise<void>((resolve, reject) => {
            socket.once('connect', () => resolve());
            socket.once('connect_error', reject);
          }),
      ),
    );
  });

  after(async () => {
    for (const socket of sockets) socket.disconnect();
    await stopInstances(instances);
    await store.close();
  });

  /** The ack, within `ms`; a missing ack fails with the exception events received instead. */
  const emit = async (i: number, event: string, id: string, ms = 15_000) => {
    const seen = exceptions[i].length;
    try {
      const ack = (await sockets[i].timeout(ms).emitWithAck(event, { id })) as Outcome & WsError;
      const text = `${JSON.stringify(ack)}\n${exceptions[i].slice(seen).join('\n')}`;
      return { ack, text };
    } catch (error) {
      const events = exceptions[i].slice(seen).join('\n') || '(none)';
      throw new Error(
        `no ack for ${event} within ${ms} ms (${error}); exception events: ${events}`,
      );
    }
  };

  it('50 concurrent decrements over both instances: never oversold, no overlap', async () => {
    await assertExclusion(store, 'socketio-x', async (i): Promise<Outcome | 'busy'> => {
      const { ack, text } = await emit(i % 2, 'decrement', 'socketio-x');
      if (ack.status === 'error' && ack.code === 'LOCK_BUSY') return 'busy';
      assert.equal(typeof ack.ok, 'boolean', text);
      return ack;
    });
  });

  /** The handler that locks, and the one whose provider method does (architecture.md §5.12). */
  const events = [
    ['try-decrement', 'a @Locked handler'],
    ['try-decrement-via-service', 'a @Locked provider method under a plain handler'],
  ] as const;

  for (const [event, what] of events) {
    it(`${what}, lock held → the ack carries { status: "error", code: "LOCK_BUSY", retryAfterMs }; nothing leaks`, async () => {
      const id = `socketio-busy-${event}`;
      await store.seed(id, 5);
      const held = await holdLock(id);
      try {
        for (const [i, instance] of instances.entries()) {
          const from = instance.output().length;
          const { ack, text } = await emit(i, event, id, 5_000);
          console.log(`answer: busy, ${what} (instance ${instance.name}): ack + events: ${text}`);
          assert.equal(ack.status, 'error', text);
          assert.equal(ack.code, 'LOCK_BUSY', text);
          assert.ok(
            typeof ack.retryAfterMs === 'number' &&
              ack.retryAfterMs > 0 &&
              ack.retryAfterMs <= 10_000,
            text,
          );
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
  for (const [event, what] of events) {
    it(`${what}, a majority of lock nodes hung → the ack carries code LOCK_UNAVAILABLE; nothing leaks`, async () => {
      const id = `socketio-down-${event}`;
      await store.seed(id, 5);
      const resume = hangMajority();
      try {
        for (const [i, instance] of instances.entries()) {
          const { ack, text } = await emit(i, event, id, 5_000);
          console.log(
            `answer: unavailable, ${what} (instance ${instance.name}): ack + events: ${text}`,
          );
          assert.equal(ack.status, 'error', text);
          assert.equal(ack.code, 'LOCK_UNAVAILABLE', text);
          assertNoLeak(text, id);
        }
      } finally {
        resume();
      }
      assert.equal((await store.read(id)).stock, 5, 'the handler ran without the lock');
    });
  }
});
