import { createConnection, type Socket } from 'node:net';
import {
  DescribedNodeError,
  NodeTimeoutError,
  ScriptedNode,
  type CommandArg,
  type ConnectionEvent,
  type PubSubTransport,
  type RedisTransport,
  type SubscriberConnection,
  type SubscriberEvents,
} from 'nestjs-redlock/adapters';

/**
 * A third client adapter, test-only, to show what adding a client costs (issue 26): this one file,
 * written against `nestjs-redlock/adapters` alone. It speaks RESP2 over a raw socket — no Redis
 * client library — and runs the core's integration specs (jest project `integration-resp`,
 * test/support/resp-lib.ts) like the ioredis and node-redis adapters. Fail-fast like the module's
 * own clients: no offline queue, a command timeout, reconnection every 50 ms.
 */
export class RespTransport implements RedisTransport, PubSubTransport {
  readonly name: string;
  readonly owned = true;
  readonly aclUser = 'default';
  readonly keyPrefix = '';
  readonly pubsub: PubSubTransport = this;
  private readonly lock: RespSocket;

  constructor(
    url: string,
    /** How long a command may wait for its reply (the node's `commandTimeout`). */
    private readonly timeoutMs: number,
  ) {
    const { hostname, port } = new URL(url);
    this.name = `${hostname}:${port || 6379}`;
    this.lock = new RespSocket(hostname, Number(port || 6379));
  }

  get isReady(): boolean {
    return this.lock.ready;
  }

  get lastConnectError(): unknown {
    return this.lock.lastError;
  }

  call(command: string, args: readonly CommandArg[]): Promise<unknown> {
    return this.lock.send([command, ...args], this.timeoutMs);
  }

  describe(error: unknown): Error {
    if (error instanceof Error && error.message === TIMED_OUT)
      return new NodeTimeoutError(TIMED_OUT);
    return DescribedNodeError.of(error, {}, this.lock.lastError);
  }

  watch(listener: (event: ConnectionEvent) => void): void {
    this.lock.listeners.add((ready) => listener(ready ? 'ready' : 'lost'));
    if (this.lock.ready) listener('ready');
  }

  connect(settled: (ready: boolean) => void): () => void {
    if (this.lock.ready) {
      settled(true);
      return () => undefined;
    }
    const listener = (ready: boolean) => settled(ready);
    this.lock.listeners.add(listener);
    return () => this.lock.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.lock.end();
  }

  openSubscriber(events: SubscriberEvents): SubscriberConnection {
    const socket = new RespSocket(this.lock.host, this.lock.port, events);
    socket.listeners.add((ready) => (ready ? events.ready() : events.closed()));
    return {
      subscribe: (channels) => socket.send(['SUBSCRIBE', ...channels], 0, channels.length),
      unsubscribe: (channels) => socket.send(['UNSUBSCRIBE', ...channels], 0, channels.length),
      close: () => socket.end(),
    };
  }
}

/** A lock node over a {@link RespTransport}: the shared protocol, nothing else. */
export function respNode(url: string, timeoutMs: number): ScriptedNode {
  return new ScriptedNode(new RespTransport(url, timeoutMs));
}

const TIMED_OUT = 'Command timed out';

/** A command waiting for its reply (or its `replies` replies: a SUBSCRIBE gets one a channel). */
interface Pending {
  replies: number;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** One RESP2 connection: commands in order, replies matched in order, pushes to `events`. */
class RespSocket {
  readonly listeners = new Set<(ready: boolean) => void>();
  ready = false;
  lastError?: Error;
  private socket?: Socket;
  private buffer: Buffer = Buffer.alloc(0);
  private readonly pending: Pending[] = [];
  private ended = false;

  constructor(
    readonly host: string,
    readonly port: number,
    /** Subscriber mode: `message` pushes. */
    private readonly events?: SubscriberEvents,
  ) {
    this.open();
  }

  send(args: readonly CommandArg[], timeoutMs: number, replies = 1): Promise<unknown> {
    if (!this.ready || this.socket === undefined) {
      return Promise.reject(new Error('Connection is closed.'));
    }
    const parts = args.map((arg) => Buffer.from(String(arg)));
    const head = `*${parts.length}\r\n`;
    const body = parts.map((part) =>
      Buffer.concat([Buffer.from(`$${part.length}\r\n`), part, CRLF]),
    );
    this.socket.write(Buffer.concat([Buffer.from(head), ...body]));
    return new Promise((resolve, reject) => {
      // A reply that comes after the timeout still takes its place in the queue (order matters).
      const timer =
        timeoutMs > 0 ? setTimeout(() => reject(new Error(TIMED_OUT)), timeoutMs) : undefined;
      const settle =
        <T>(fn: (value: T) => void) =>
        (value: T) => {
          clearTimeout(timer);
          fn(value);
        };
      this.pending.push({ replies, resolve: settle(resolve), reject: settle(reject) });
    });
  }

  end(): void {
    this.ended = true;
    this.socket?.destroy();
  }

  private open(): void {
    const socket = (this.socket = createConnection({ host: this.host, port: this.port }));
    socket.setNoDelay(true);
    socket.on('connect', () => {
      this.ready = true;
      this.lastError = undefined;
      for (const listener of [...this.listeners]) listener(true);
    });
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', (error) => {
      this.lastError = error;
      if (!this.ready) for (const listener of [...this.listeners]) listener(false);
    });
    socket.on('close', () => {
      const wasReady = this.ready;
      this.ready = false;
      this.buffer = Buffer.alloc(0);
      for (const waiting of this.pending.splice(0))
        waiting.reject(new Error('Connection is closed.'));
      if (wasReady) for (const listener of [...this.listeners]) listener(false);
      if (!this.ended) setTimeout(() => this.ended || this.open(), 50).unref();
    });
  }

  private read(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const parsed = parse(this.buffer, 0);
      if (parsed === undefined) return;
      this.buffer = this.buffer.subarray(parsed.end);
      const reply = parsed.value;
      if (this.events !== undefined && Array.isArray(reply) && reply[0] === 'message') {
        this.events.message(String(reply[1]), String(reply[2]));
        continue;
      }
      const waiting = this.pending[0];
      if (waiting === undefined) continue;
      if (reply instanceof Error) {
        this.pending.shift();
        waiting.reject(reply);
      } else if (--waiting.replies === 0) {
        this.pending.shift();
        waiting.resolve(reply);
      }
    }
  }
}

const CRLF = Buffer.from('\r\n');

/** One RESP2 reply at `start`, or undefined when the buffer does not hold all of it yet. */
function parse(buffer: Buffer, start: number): { value: unknown; end: number } | undefined {
  const lineEnd = buffer.indexOf(CRLF, start);
  if (lineEnd < 0) return undefined;
  const line = buffer.toString('utf8', start + 1, lineEnd);
  const next = lineEnd + 2;
  switch (String.fromCharCode(buffer[start])) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new Error(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buffer.length < next + length + 2) return undefined;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: unknown[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parse(buffer, at);
        if (item === undefined) return undefined;
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`RESP: unexpected reply type ${String.fromCharCode(buffer[start])}`);
  }
}
