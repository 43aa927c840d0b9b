import net from 'node:net';
import { LOOPBACK } from './probe';

/**
 * A TCP proxy on the loopback interface that makes one Redis node slow: every chunk, in each
 * direction, is forwarded `delayMs` after it arrived, in arrival order. A request/reply round trip
 * through it therefore takes at least twice the delay. It models a slow or distant node, which
 * neither killing nor pausing a node can: the node answers, just late.
 */

/** A running latency proxy. */
export interface LatencyProxy {
  /** The loopback port the proxy listens on. */
  readonly port: number;
  /** `redis://127.0.0.1:${port}`: give this to a client instead of the node's own URL. */
  readonly url: string;
  /** Changes the delay for chunks that arrive from now on (queued chunks keep theirs). */
  setDelay(ms: number): void;
  /**
   * Black-holes the node (`true`): nothing is forwarded in either direction, connections stay
   * open and new ones are accepted, as over a network path that silently stopped delivering.
   * Chunks are held, not dropped (TCP never loses bytes inside a connection: a real black hole
   * stalls the stream), and `false` delivers them in order, as a healed path would.
   */
  setBlackHole(on: boolean): void;
  /** Stops listening and drops every proxied connection at once; resolves when closed. */
  close(): Promise<void>;
}

/**
 * One direction of one proxied connection: a FIFO of chunks, each with the time it is due.
 * Due times never decrease, even when the delay is lowered, so chunks keep their order.
 */
class DelayedPipe {
  private readonly queue: { chunk: Buffer; due: number }[] = [];
  private lastDue = 0;
  private timer: NodeJS.Timeout | undefined;
  private sourceDone = false;

  constructor(
    source: net.Socket,
    private readonly destination: net.Socket,
    private readonly delay: () => number,
    private readonly holding: () => boolean,
  ) {
    source.on('data', (chunk: Buffer) => this.push(chunk));
    // After EOF or an error on the source, still deliver what was already sent, then pass the EOF
    // on: a client that writes a command and disconnects must still have it reach Redis, as it
    // would without the proxy.
    source.on('end', () => this.finish());
    source.on('close', () => this.finish());
  }

  /** Cancels the pending delivery (when the proxy is closed). */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  private push(chunk: Buffer): void {
    const due = Math.max(performance.now() + this.delay(), this.lastDue);
    this.lastDue = due;
    this.queue.push({ chunk, due });
    this.schedule();
  }

  private finish(): void {
    this.sourceDone = true;
    this.schedule();
  }

  /** Delivers what was held while the path was black-holed. */
  resumeDelivery(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.holding()) return;
    const head = this.queue[0];
    if (!head) {
      if (this.sourceDone && !this.destination.destroyed) this.destination.end();
      return;
    }
    // Timers may fire a fraction of a millisecond early by performance.now(); deliver() then
    // simply reschedules, so no chunk ever goes out before its due time.
    const wait = Math.max(0, Math.ceil(head.due - performance.now()));
    this.timer = setTimeout(() => this.deliver(), wait);
  }

  private deliver(): void {
    this.timer = undefined;
    if (this.holding()) return;
    const now = performance.now();
    while (this.queue.length > 0 && this.queue[0].due <= now) {
      const { chunk } = this.queue.shift()!;
      // No backpressure handling: tests send a few small Redis commands, never bulk data.
      if (!this.destination.destroyed && this.destination.writable) this.destination.write(chunk);
    }
    this.schedule();
  }
}

/**
 * Starts a proxy on a free loopback port that forwards to `127.0.0.1:targetPort`, delaying every
 * chunk in both directions by `delayMs`.
 */
export async function startLatencyProxy(
  targetPort: number,
  delayMs: number,
): Promise<LatencyProxy> {
  let delay = delayMs;
  let blackHole = false;
  const sockets = new Set<net.Socket>();
  const pipes = new Set<DelayedPipe>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    // Errors (a killed node, a client reset) end the socket; 'close' then finishes its pipe.
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  };

  // allowHalfOpen on both sides: an EOF from one side must not end the other direction before
  // its delayed chunks are delivered.
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const upstream = net.connect({ host: LOOPBACK, port: targetPort, allowHalfOpen: true });
    track(client);
    track(upstream);
    // Kept until the proxy closes (a proxy lives for one test and sees a handful of connections).
    pipes.add(
      new DelayedPipe(
        client,
        upstream,
        () => delay,
        () => blackHole,
      ),
    );
    pipes.add(
      new DelayedPipe(
        upstream,
        client,
        () => delay,
        () => blackHole,
      ),
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: LOOPBACK, port: 0 }, () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    port,
    url: `redis://${LOOPBACK}:${port}`,
    setDelay(ms: number) {
      delay = ms;
    },
    setBlackHole(on: boolean) {
      blackHole = on;
      if (!on) for (const pipe of pipes) pipe.resumeDelivery();
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const pipe of pipes) pipe.cancel();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
