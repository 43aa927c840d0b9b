import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { startFleet, type RedisFleet } from '../support/fleet';
import { startLatencyProxy, type LatencyProxy } from '../support/latency-proxy';
import { startWatchdog } from '../support/watchdog';
import { eventually } from './helpers';

/**
 * The test fleet is what every integration test trusts to be real Redis with real faults, so each
 * fault is checked here from the outside: with plain sockets, ioredis clients and process.kill,
 * never through the fleet's own admin connection alone.
 */

const clients = new Set<Redis>();

/** A client connected before it is returned, that never reconnects or queues offline. */
async function connect(url: string): Promise<Redis> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined); // kill() tests close its socket on purpose
  clients.add(client);
  await client.connect();
  return client;
}

/** The error code of a TCP connection to `port`, or 'connected'. */
function dial(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** 'timeout' if `promise` has not settled after `ms`, else its value. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** True while a process with this pid exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

afterEach(() => {
  for (const client of clients) if (client.status !== 'end') client.disconnect();
  clients.clear();
});

describe('startFleet (5 nodes, no persistence)', () => {
  let fleet: RedisFleet;

  beforeAll(async () => {
    const started = performance.now();
    fleet = await startFleet(5);
    console.log(`5-node fleet started in ${(performance.now() - started).toFixed(0)} ms`);
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  it('starts 5 nodes on distinct loopback ports, each answering PING', async () => {
    expect(fleet.nodes).toHaveLength(5);
    const ports = fleet.nodes.map((node) => node.port);
    expect(new Set(ports).size).toBe(5);
    expect(fleet.urls()).toEqual(ports.map((port) => `redis://127.0.0.1:${port}`));
    for (const [i, node] of fleet.nodes.entries()) {
      expect(node).toMatchObject({ index: i, host: '127.0.0.1', url: fleet.urls()[i] });
      expect(node.running()).toBe(true);
      const client = await connect(node.url);
      expect(await client.ping()).toBe('PONG');
      // Five independent servers, not one server behind five ports.
      expect(await client.info('server')).toContain(`tcp_port:${node.port}`);
    }
    const pids = fleet.nodes.map((node) => node.pid);
    expect(pids.every((pid) => typeof pid === 'number' && alive(pid))).toBe(true);
    expect(new Set(pids).size).toBe(5);
  });

  it('runs commands through node.command() and flushAll() empties every node', async () => {
    await Promise.all(
      fleet.nodes.map((node) => node.command('SET', 'k', node.index, 'PX', 60_000)),
    );
    expect(await fleet.nodes[3].command('GET', 'k')).toBe('3');
    expect(await fleet.nodes[3].command('PTTL', 'k')).toBeGreaterThan(50_000);
    await fleet.flushAll();
    for (const node of fleet.nodes) expect(await node.command('DBSIZE')).toBe(0);
  });

  it('kill() makes the port refuse connections; restart() brings it back on the same port, empty', async () => {
    const node = fleet.nodes[1];
    const { port } = node;
    await node.command('SET', 'before-kill', 'v');
    const open = await connect(node.url);
    const oldPid = node.pid!;

    await node.kill();
    expect(await dial(port)).toBe('ECONNREFUSED');
    expect(node.running()).toBe(false);
    expect(node.pid).toBeUndefined();
    expect(alive(oldPid)).toBe(false);
    await expect(open.ping()).rejects.toThrow(); // the open connection died with the server

    await node.restart();
    expect(node.port).toBe(port);
    expect(node.running()).toBe(true);
    expect(node.pid).not.toBe(oldPid);
    const client = await connect(node.url);
    expect(await client.ping()).toBe('PONG');
    expect(await client.get('before-kill')).toBeNull(); // no persistence: the key is gone
    expect(await node.command('GET', 'before-kill')).toBeNull(); // admin connection reopened
  });

  it('restart() of a running node kills it first', async () => {
    const node = fleet.nodes[4];
    const oldPid = node.pid!;
    await node.command('SET', 'k', 'v');
    await node.restart();
    expect(alive(oldPid)).toBe(false);
    expect(node.pid).not.toBe(oldPid);
    expect(await node.command('GET', 'k')).toBeNull();
  });

  it('pause() leaves connections open but unanswered; resume() answers what was queued', async () => {
    const node = fleet.nodes[2];
    const client = await connect(node.url);
    expect(await client.ping()).toBe('PONG');

    await node.pause();
    try {
      expect(node.running()).toBe(true);
      const pending = client.ping();
      expect(await within(pending, 300)).toBe('timeout');
      // A connection opened while paused is accepted by the kernel: hung, not dead.
      expect(await dial(node.port)).toBe('connected');
      // The fleet's own helpers do not hang on it: flushAll skips it, command() gives up.
      expect(await within(fleet.flushAll(), 1_000)).toBeUndefined();
      const started = performance.now();
      await expect(node.command('PING')).rejects.toThrow(/did not answer/);
      expect(performance.now() - started).toBeLessThan(3_000);

      await node.resume();
      expect(await within(pending, 2_000)).toBe('PONG');
      expect(await client.ping()).toBe('PONG');
    } finally {
      await node.resume();
    }
  });
});

describe('startFleet with aof: true', () => {
  let fleet: RedisFleet;

  beforeAll(async () => {
    fleet = await startFleet(1, { aof: true });
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  it('keeps a key written before kill() across restart()', async () => {
    const [node] = fleet.nodes;
    expect(await node.command('CONFIG', 'GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
    await node.command('SET', 'durable', 'yes');
    await node.command('SET', 'expiring', 'yes', 'PX', 60_000);
    await node.kill();
    expect(await dial(node.port)).toBe('ECONNREFUSED');
    await node.restart();
    const client = await connect(node.url);
    expect(await client.get('durable')).toBe('yes');
    expect(await client.pttl('expiring')).toBeGreaterThan(50_000);
  });
});

describe('cleanup', () => {
  it('stop() resumes, kills every redis-server it started (restarted ones too), and is idempotent', async () => {
    const fleet = await startFleet(3);
    const pids = fleet.nodes.map((node) => node.pid!);
    await fleet.nodes[0].restart();
    pids.push(fleet.nodes[0].pid!);
    await fleet.nodes[1].pause();
    await fleet.nodes[2].kill();
    expect(pids.filter(alive)).toEqual([pids[1], pids[3]]); // paused and restarted; 0 was replaced

    await fleet.stop();
    expect(pids.filter(alive)).toEqual([]);
    for (const node of fleet.nodes) {
      expect(node.running()).toBe(false);
      expect(await dial(node.port)).toBe('ECONNREFUSED');
    }
    await expect(fleet.stop()).resolves.toBeUndefined();
  });

  it('two fleets started at once get distinct ports', async () => {
    const fleets = await Promise.all([startFleet(5), startFleet(5)]);
    try {
      const ports = fleets.flatMap((fleet) => fleet.nodes.map((node) => node.port));
      expect(new Set(ports).size).toBe(10);
    } finally {
      await Promise.all(fleets.map((fleet) => fleet.stop()));
    }
  });

  it("the watchdog kills the fleet's processes when the owner dies by SIGKILL", async () => {
    const fleet = await startFleet(1);
    // A stand-in owner we can SIGKILL, watching a throwaway directory listing the node's pid.
    const owner = spawn('sleep', ['60'], { stdio: 'ignore' });
    const dir = mkdtempSync(join(tmpdir(), 'redlock-watchdog-test-'));
    try {
      const pid = fleet.nodes[0].pid!;
      const watchdog = startWatchdog(dir, owner.pid!);
      watchdog.setPids([pid]);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      expect(alive(pid)).toBe(true); // owner alive: the watchdog leaves the node alone

      owner.kill('SIGKILL');
      expect(await eventually(() => !alive(pid), 5_000)).toBe(true);
      expect(await eventually(() => !existsSync(dir), 2_000)).toBe(true);
      // ...and then exits by itself (after giving back the owner's port reservations).
      expect(watchdog.pid).toBeDefined();
      expect(await eventually(() => !alive(watchdog.pid!), 2_000)).toBe(true);
    } finally {
      owner.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      await fleet.stop();
    }
  });

  it('a watchdog exits by itself once its fleet is stopped', async () => {
    const owner = spawn('sleep', ['60'], { stdio: 'ignore' });
    const dir = mkdtempSync(join(tmpdir(), 'redlock-watchdog-test-'));
    try {
      const watchdog = startWatchdog(dir, owner.pid!);
      expect(alive(watchdog.pid!)).toBe(true);
      rmSync(dir, { recursive: true, force: true }); // what stop() does, besides killing it
      expect(await eventually(() => !alive(watchdog.pid!), 3_000)).toBe(true);
    } finally {
      owner.kill('SIGKILL');
    }
  });
});

describe('startLatencyProxy', () => {
  let fleet: RedisFleet;
  let proxy: LatencyProxy | undefined;

  beforeAll(async () => {
    fleet = await startFleet(1);
  });

  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  async function pingMs(client: Redis): Promise<number> {
    const started = performance.now();
    expect(await client.ping()).toBe('PONG');
    return performance.now() - started;
  }

  it('delays each direction of a PING round trip by at least the delay', async () => {
    const delayMs = 150;
    proxy = await startLatencyProxy(fleet.nodes[0].port, delayMs);
    expect(proxy.url).toBe(`redis://127.0.0.1:${proxy.port}`);
    const client = await connect(proxy.url);
    const direct = await connect(fleet.nodes[0].url);

    expect(await pingMs(client)).toBeGreaterThanOrEqual(2 * delayMs);
    expect(await pingMs(direct)).toBeLessThan(delayMs);

    proxy.setDelay(0);
    expect(await pingMs(client)).toBeLessThan(delayMs);
  });

  it('keeps order, and delivers what a client sent before it disconnected', async () => {
    proxy = await startLatencyProxy(fleet.nodes[0].port, 50);
    const client = await connect(proxy.url);
    const pipeline = client.pipeline();
    for (let i = 0; i < 100; i++) pipeline.rpush('order', i);
    const replies = await pipeline.exec();
    expect(replies?.map(([, length]) => length)).toEqual(
      Array.from({ length: 100 }, (_, i) => i + 1),
    );

    // Written, then the connection closed at once: still reaches Redis, 50 ms later.
    const raw = net.connect({ host: '127.0.0.1', port: proxy.port });
    await new Promise((resolve) => raw.once('connect', resolve));
    raw.end('SET sent-before-close yes\r\n');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await fleet.nodes[0].command('GET', 'sent-before-close')).toBe('yes');
    expect(await fleet.nodes[0].command('LRANGE', 'order', 0, 2)).toEqual(['0', '1', '2']);
    await fleet.flushAll();
  });

  it('close() drops proxied connections', async () => {
    proxy = await startLatencyProxy(fleet.nodes[0].port, 0);
    const client = await connect(proxy.url);
    expect(await client.ping()).toBe('PONG');
    const { port } = proxy;
    await proxy.close();
    expect(await dial(port)).toBe('ECONNREFUSED');
    expect(await eventually(() => client.status === 'end', 2_000)).toBe(true);
  });
});
