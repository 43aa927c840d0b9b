/**
 * The campaign's own minimal Redis fleet and latency proxy, in plain JavaScript so that the
 * campaign runs without ts-jest (its workers are separate OS processes). Same semantics as
 * test/support (real redis-server processes on loopback, SIGKILL / SIGSTOP / restart on the same
 * port, with or without `appendfsync always`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';

const LOOPBACK = '127.0.0.1';

/** Every redis-server started here, killed if this process exits without stopping them. */
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => process.exit(130));
}

/** A free loopback port (the kernel's pick). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once `port` answers PING (raw RESP, no client library), or rejects after `ms`. */
async function untilPong(port, ms = 10_000) {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, LOOPBACK);
      const done = (value) => {
        socket.destroy();
        resolve(value);
      };
      socket.setTimeout(500, () => done(false));
      socket.once('error', () => done(false));
      socket.once('data', (chunk) => done(chunk.toString().startsWith('+PONG')));
      socket.write('PING\r\n');
    });
    if (ok) return;
    await sleep(20);
  }
  throw new Error(`redis on port ${port} did not answer within ${ms} ms`);
}

/** Resolves once nothing accepts connections on `port`. */
async function untilRefused(port, ms = 5_000) {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    const refused = await new Promise((resolve) => {
      const socket = net.connect(port, LOOPBACK);
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
    if (refused) return;
    await sleep(10);
  }
}

/** One redis-server on a fixed port; kill/restart keep the port and the persistence mode. */
export class Node {
  constructor(port, dir, aof) {
    this.port = port;
    this.dir = dir;
    this.aof = aof;
    this.url = `redis://${LOOPBACK}:${port}`;
    this.child = undefined;
    this.paused = false;
  }

  async start() {
    const persistence = this.aof
      ? ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always']
      : ['--save', '', '--appendonly', 'no'];
    const args = ['--port', String(this.port), '--bind', LOOPBACK, '--dir', this.dir];
    this.child = spawn('redis-server', [...args, ...persistence, '--daemonize', 'no'], {
      stdio: 'ignore',
    });
    this.child.unref();
    const child = this.child;
    live.add(child);
    child.once('exit', () => live.delete(child));
    this.paused = false;
    await untilPong(this.port);
  }

  get pid() {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /** SIGKILL: no save, no shutdown. */
  async kill() {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.child = undefined;
    this.paused = false;
    await untilRefused(this.port);
  }

  pause() {
    if (this.pid === undefined || this.paused) return;
    process.kill(this.pid, 'SIGSTOP');
    this.paused = true;
  }

  resume() {
    if (this.pid === undefined || !this.paused) return;
    process.kill(this.pid, 'SIGCONT');
    this.paused = false;
  }

  async restart() {
    await this.kill();
    await this.start();
  }

  /**
   * Kills the server and starts it again without its files, whatever its configuration says: a
   * container restarted without its volume (issue 23 finding 3).
   */
  async wipe() {
    await this.kill();
    for (const name of readdirSync(this.dir)) {
      rmSync(join(this.dir, name), { recursive: true, force: true });
    }
    await this.start();
  }
}

/** `size` nodes in a temporary directory each; `aof`: for all, or per node. */
export async function startFleet(size, { aof = false } = {}) {
  const nodes = [];
  try {
    for (let i = 0; i < size; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'redlock-campaign-'));
      // `aof` per node (an array: a fleet mixing durable and non-durable nodes) or for all.
      const node = new Node(await freePort(), dir, Array.isArray(aof) ? aof[i] : aof);
      nodes.push(node);
      await node.start();
    }
  } catch (error) {
    await stopFleet(nodes);
    throw error;
  }
  return nodes;
}

/** Resumes, kills and removes every node's directory. */
export async function stopFleet(nodes) {
  for (const node of nodes) {
    node.resume();
    await node.kill();
    rmSync(node.dir, { recursive: true, force: true });
  }
}

/**
 * A TCP proxy that forwards each chunk `delay` ms after it arrived, in order (as
 * test/support/latency-proxy.ts): a slow node, not a dead one.
 */
export async function startProxy(targetPort) {
  let delay = 0;
  const sockets = new Set();
  const pipe = (from, to) => {
    let lastDue = 0;
    const queue = [];
    let timer;
    const flush = () => {
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0].due <= now) to.write(queue.shift().chunk);
      if (queue.length > 0) timer = setTimeout(flush, queue[0].due - now);
    };
    from.on('data', (chunk) => {
      if (delay === 0 && queue.length === 0) return void to.write(chunk);
      const due = Math.max(performance.now() + delay, lastDue);
      lastDue = due;
      queue.push({ chunk, due });
      timer ??= setTimeout(flush, due - performance.now());
    });
    const end = () => {
      clearTimeout(timer);
      to.destroy();
    };
    from.on('close', end);
    from.on('error', end);
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, LOOPBACK);
    sockets.add(client).add(upstream);
    pipe(client, upstream);
    pipe(upstream, client);
  });
  const port = await new Promise((resolve) =>
    server.listen(0, LOOPBACK, () => resolve(server.address().port)),
  );
  return {
    port,
    url: `redis://${LOOPBACK}:${port}`,
    setDelay(ms) {
      delay = ms;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
