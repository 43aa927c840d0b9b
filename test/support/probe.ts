import net from 'node:net';

/**
 * Raw-socket probes of a Redis port. They deliberately avoid ioredis: a probe must answer
 * "refused", "someone else", or "ours and ready" within a few milliseconds, without reconnect
 * logic, ready checks or error events getting in the way of a tight polling loop.
 */

/** The loopback address every test node binds to and every probe dials. */
export const LOOPBACK = '127.0.0.1';

/** What a Redis server says about itself: enough to tell *our* server from another one. */
export interface RedisIdentity {
  /** `process_id` from INFO server: the pid of the process that owns the port. */
  readonly pid: number;
  /** `loading` from INFO persistence: true while an AOF or RDB file is still being loaded. */
  readonly loading: boolean;
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Asks whatever listens on `host:port` for `INFO server persistence`.
 * Resolves undefined when the port refuses, the answer is not a Redis INFO reply, or nothing
 * complete arrives within `timeoutMs` (a paused server): never rejects.
 */
export function identify(
  port: number,
  timeoutMs = 250,
  host = LOOPBACK,
): Promise<RedisIdentity | undefined> {
  return new Promise((resolve) => {
    let buffer = Buffer.alloc(0);
    const socket = net.connect({ host, port });
    const finish = (identity: RedisIdentity | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(identity);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    socket.on('error', () => finish(undefined));
    socket.on('close', () => finish(undefined));
    // An inline command: no RESP framing needed to ask, and every Redis version understands it.
    socket.on('connect', () => socket.write('INFO server persistence\r\n'));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const reply = completeBulkString(buffer);
      if (reply === null) return;
      if (reply === undefined) return finish(undefined);
      const pid = /^process_id:(\d+)\r?$/m.exec(reply);
      const loading = /^loading:(\d)\r?$/m.exec(reply);
      finish(pid ? { pid: Number(pid[1]), loading: loading?.[1] === '1' } : undefined);
    });
  });
}

/**
 * The payload of a complete RESP bulk string at the start of `buffer`; null while it is still
 * incomplete; undefined when the reply is something else (an error such as -LOADING, or not Redis).
 */
function completeBulkString(buffer: Buffer): string | null | undefined {
  if (buffer.length === 0) return null;
  if (buffer[0] !== 0x24 /* '$' */) return undefined;
  const headerEnd = buffer.indexOf('\r\n');
  if (headerEnd < 0) return null;
  const length = Number(buffer.subarray(1, headerEnd).toString());
  if (!Number.isInteger(length) || length < 0) return undefined;
  const start = headerEnd + 2;
  if (buffer.length < start + length) return null;
  return buffer.subarray(start, start + length).toString();
}

/** Resolves true when a TCP connection to `host:port` is refused (nothing listens there). */
function refuses(port: number, host = LOOPBACK): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      socket.destroy();
      resolve(error.code === 'ECONNREFUSED');
    });
  });
}

/**
 * Resolves once `host:port` refuses connections; rejects after `timeoutMs`. `kill()` promises this,
 * so a test that kills a node can rely on the node being unreachable, not merely signalled.
 */
export async function waitUntilRefused(
  port: number,
  timeoutMs = 5_000,
  host = LOOPBACK,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await refuses(port, host))) {
    if (performance.now() > deadline) {
      throw new Error(`${host}:${port} still accepts connections ${timeoutMs} ms after the kill`);
    }
    await sleep(10);
  }
}
