import type { Socket } from 'node:net';
import Redis from 'ioredis';
import { IoredisTransport } from '../../lib/core/nodes/ioredis-node';
import { sharedFleet } from './helpers';

/**
 * The ioredis transport's adaptive pipelining (turn-end.ts, IoredisTransport.batch): a command
 * leaves at once while fewer than three await their replies on its socket (a lone lock cycle
 * leaves at most two behind on a node); once one is issued behind three, the rest of that turn
 * of the event loop, and every turn after it while the load goes on, leave in one write to the
 * socket — commands issued in separate ticks, or separate I/O or timer callbacks, as the
 * acquisitions of HTTP requests read together are. Uncorked at the end of each tick instead,
 * each of them was a write of its own (and a syscall); corked always, a lone lock cycle waited
 * for the end of every turn (bench S1, c = 1: 15-20 % of its rate).
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

  /** The next turn of the event loop (after this one's I/O, ticks and immediates). */
  const nextTurn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

  it('a command alone leaves at once, not at the end of the turn', async () => {
    const { transport, writes } = await transportWithWrites();
    const reply = transport.call('ECHO', ['alone']);
    expect(writes()).toBe(1);
    expect(await reply).toBe('alone');
    expect(writes()).toBe(1);
  });

  it('two awaiting replies are not a load: the next command still leaves at once', async () => {
    const { transport, writes } = await transportWithWrites();
    // What a lone lock cycle leaves on a node that lags: its acquire's and its release's replies.
    const behind = [transport.call('ECHO', ['a']), transport.call('ECHO', ['b'])];
    const third = transport.call('ECHO', ['c']);
    expect(writes()).toBe(3);
    expect(await Promise.all([...behind, third])).toEqual(['a', 'b', 'c']);
    expect(writes()).toBe(3);
  });

  it('from several ticks of one turn: at once until three await, then one write', async () => {
    const { transport, writes } = await transportWithWrites();
    const replies = await new Promise<unknown[]>((resolve, reject) => {
      const first = ['a', 'b', 'c'].map((tag) => transport.call('ECHO', [tag]));
      process.nextTick(() => {
        const fourth = transport.call('ECHO', ['d']);
        process.nextTick(() => {
          Promise.all([...first, fourth, transport.call('ECHO', ['e'])]).then(resolve, reject);
        });
      });
    });
    expect(replies).toEqual(['a', 'b', 'c', 'd', 'e']);
    // a, b and c each at once; d (behind three) and e together at the end of the turn.
    expect(writes()).toBe(4);
  });

  it('while the load goes on, a turn of timer callbacks leaves in one write', async () => {
    const { transport, writes } = await transportWithWrites();
    const sent: Promise<unknown>[] = [];
    const burst = (tag: string): Promise<void> =>
      new Promise<void>((resolve) => {
        // Timers due together run in the same timers phase, each followed by its ticks.
        for (let i = 0; i < 5; i++) {
          setTimeout(() => {
            sent.push(transport.call('ECHO', [`${tag}${i}`]));
            if (i === 4) resolve();
          }, 0);
        }
        // Each setTimeout reads the loop's clock afresh: when a millisecond passed between two
        // of them, the later was not yet due when the first ran, and ran in the next turn (one
        // full run wrote 3 times). Past every one's due time before the loop goes on, they all
        // run in its next timers phase.
        const due = performance.now() + 3;
        while (performance.now() < due);
      });
    await burst('a');
    await nextTurn();
    const afterFirst = writes();
    await burst('b');
    await nextTurn();
    const tags = ['a', 'b'].flatMap((tag) => [0, 1, 2, 3, 4].map((i) => `${tag}${i}`));
    expect(await Promise.all(sent)).toEqual(tags);
    // The first turn: a0, a1 and a2 at once (no reply is read before the turn's poll phase), a3
    // behind three and a4 together.
    expect(afterFirst).toBe(4);
    // The second, after a turn that corked several: all five together.
    expect(writes() - afterFirst).toBe(1);
  });

  it('after the load, a command alone leaves at once again', async () => {
    const { transport, writes } = await transportWithWrites();
    // A load: the fourth and fifth behind three awaiting, corked together.
    const load = ['a1', 'a2', 'a3', 'a4', 'a5'].map((tag) => transport.call('ECHO', [tag]));
    expect(writes()).toBe(3);
    await Promise.all(load);
    expect(writes()).toBe(4);
    // One turn with a lone command ends the load (that command still waits for the turn's end).
    await nextTurn();
    await transport.call('ECHO', ['c']);
    await nextTurn();
    const before = writes();
    const reply = transport.call('ECHO', ['d']);
    expect(writes()).toBe(before + 1);
    expect(await reply).toBe('d');
  });
});
