import type { Socket } from 'node:net';
import Redis from 'ioredis';
import { IoredisTransport } from '../../lib/core/nodes/ioredis-node';
import { sharedFleet } from './helpers';

/**
 * The ioredis transport's adaptive pipelining (turn-end.ts): commands issued anywhere in one
 * turn of the event loop — in separate ticks, in separate I/O or timer callbacks, as the
 * acquisitions of HTTP requests read together are — leave in one write to the socket. Uncorked
 * at the end of each tick instead, each of them was a write of its own (and a syscall).
 */
describe('commands of one turn of the event loop leave in one write', () => {
  const shared = sharedFleet(1);

  async function transportWithWrites(): Promise<{
    transport: IoredisTransport;
    writes: () => number;
  }> {
    const client = new Redis(shared.fleet.urls()[0], { enableOfflineQueue: false });
    shared.afterTest(async () => client.disconnect());
    await new Promise((ready) => client.once('ready', ready));
    const transport = new IoredisTransport(client, false, 1_000);
    const stream = (client as unknown as { stream: Socket }).stream as Socket &
      Record<'_write' | '_writev', (...args: unknown[]) => void>;
    let writes = 0;
    for (const method of ['_write', '_writev'] as const) {
      const original = stream[method].bind(stream);
      stream[method] = (...args: unknown[]) => {
        writes++;
        original(...args);
      };
    }
    return { transport, writes: () => writes };
  }

  it('from two ticks of one turn', async () => {
    const { transport, writes } = await transportWithWrites();
    const replies = await new Promise<unknown[]>((resolve, reject) => {
      const first = transport.call('ECHO', ['a']);
      process.nextTick(() => {
        Promise.all([first, transport.call('ECHO', ['b'])]).then(resolve, reject);
      });
    });
    expect(replies).toEqual(['a', 'b']);
    expect(writes()).toBe(1);
  });

  it('from two timer callbacks of one turn', async () => {
    const { transport, writes } = await transportWithWrites();
    const sent: Promise<unknown>[] = [];
    await new Promise<void>((resolve) => {
      // Two timers due together run in the same timers phase, each followed by its ticks.
      setTimeout(() => sent.push(transport.call('ECHO', ['a'])), 0);
      setTimeout(() => {
        sent.push(transport.call('ECHO', ['b']));
        resolve();
      }, 0);
    });
    expect(await Promise.all(sent)).toEqual(['a', 'b']);
    expect(writes()).toBe(1);
  });

  it('one command alone still leaves in the same turn', async () => {
    const { transport, writes } = await transportWithWrites();
    expect(await transport.call('ECHO', ['alone'])).toBe('alone');
    expect(writes()).toBe(1);
  });
});
