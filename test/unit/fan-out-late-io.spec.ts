import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { monotonicClock } from '../../lib/core/clock';
import { fanOut } from '../../lib/core/nodes/fan-out';
import type { RedisNode } from '../../lib/core/nodes/node';

/**
 * A round's timeout must not beat a reply that is already in the socket: when the event loop
 * is late (a busy or overloaded process), Node runs expired timers before it reads the sockets
 * in the same turn. Counting such a reply as a timeout turned a slow client into one whose every
 * round "timed out" on every node, so it retried, got slower, and never acquired (seen as a
 * 60 s wait of 73 attempts with all five nodes `timeout` while the machine was loaded).
 * The echo server runs in another process, so it answers while this one is blocked.
 */
describe('fanOut under a late event loop', () => {
  let server: ChildProcess;
  let socket: net.Socket;

  beforeAll(async () => {
    server = spawn(
      process.execPath,
      [
        '-e',
        `const s = require('net').createServer((c) => c.on('data', (d) => c.write(d)));
         s.listen(0, '127.0.0.1', () => console.log(s.address().port));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [chunk] = (await once(server.stdout!, 'data')) as [Buffer];
    socket = net.connect(Number(chunk.toString().trim()), '127.0.0.1');
    await once(socket, 'connect');
  });

  afterAll(() => {
    socket?.destroy();
    server?.kill('SIGKILL');
  });

  const echo = (text: string) =>
    new Promise<string>((resolve) => {
      socket.once('data', (data) => resolve(data.toString()));
      socket.write(text);
    });

  it('counts a reply that arrived before the timeout fired but was not read yet', async () => {
    const node = {} as RedisNode;
    for (let run = 0; run < 5; run++) {
      const round = fanOut([node], () => echo(`ping ${run}`), {
        clock: monotonicClock,
        timeoutMs: 20,
      });
      // Block the loop well past the timeout: the reply lands in the socket buffer meanwhile.
      const until = performance.now() + 150;
      while (performance.now() < until) {
        // busy: the overloaded process
      }
      expect((await round)[0]).toEqual({ kind: 'ok', value: `ping ${run}` });
    }
  });

  it('still times out a node that really did not answer', async () => {
    const node = {} as RedisNode;
    const started = performance.now();
    const [reply] = await fanOut([node], () => new Promise<string>(() => undefined), {
      clock: monotonicClock,
      timeoutMs: 30,
    });
    expect(reply).toEqual({ kind: 'timeout' });
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
