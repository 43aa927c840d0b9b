// What every transport spec shares: two app instances as separate processes (dist/src/main.js),
// the shared stock in its own Redis node, a lock held from outside the apps, a majority of the
// lock's nodes hung, and the checks on what a caller receives.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Redlock, type Lock } from 'nestjs-redlock';
import { env, LOCK_OPTIONS, lockNodes } from '../src/env.js';
import type { Outcome } from '../src/stock.store.js';

const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/main.js');

export interface Instance {
  readonly name: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Everything the instance printed so far (stdout and stderr). */
  output(): string;
}

/** `count` distinct free loopback ports, held open together while picked (as run.mjs does). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const server = net.createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as net.AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** Starts instances `a` and `b` of one transport's app and waits until both serve. */
export async function startInstances(
  transport: string,
  envOf: (name: string) => Record<string, string> = () => ({}),
): Promise<Instance[]> {
  const ports = await freePorts(2);
  const instances = ['a', 'b'].map((name, i): Instance => {
    let output = '';
    const child = spawn(process.execPath, [main], {
      env: {
        ...process.env,
        NODE_ENV: 'production',
        COMPAT_TRANSPORT: transport,
        COMPAT_INSTANCE: name,
        COMPAT_PORT: String(ports[i]),
        ...envOf(name),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    return { name, port: ports[i], child, output: () => output };
  });
  try {
    await Promise.all(
      instances.map(
        (instance) =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(
              () => reject(new Error(`instance ${instance.name} not ready:\n${instance.output()}`)),
              60_000,
            );
            const check = () => {
              if (instance.output().includes(`READY ${instance.name}`)) {
                clearTimeout(timer);
                resolve();
              }
            };
            instance.child.stdout!.on('data', check);
            instance.child.once('exit', (code) => {
              clearTimeout(timer);
              reject(
                new Error(`instance ${instance.name} exited (${code}):\n${instance.output()}`),
              );
            });
          }),
      ),
    );
  } catch (error) {
    await stopInstances(instances);
    throw error;
  }
  return instances;
}

/** SIGTERM (the app closes), SIGKILL after 5 s; by pid. */
export async function stopInstances(instances: readonly Instance[]): Promise<void> {
  await Promise.all(
    instances.map(
      ({ child }) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** The shared stock (in its own Redis node): seed it, read it back with the overlap count. */
export class Store {
  private readonly redis = new Redis(env('REDLOCK_COMPAT_STORE'));

  async seed(id: string, stock: number): Promise<void> {
    await this.redis.set(`item:${id}:stock`, stock);
  }

  async read(id: string): Promise<{ stock: number; overlaps: number }> {
    const [stock, overlaps] = await this.redis.mget(`item:${id}:stock`, `item:${id}:overlaps`);
    return { stock: Number(stock), overlaps: Number(overlaps ?? 0) };
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}

/** Holds `stock:<id>` from outside the apps (the framework-free core, same nodes and prefix). */
export async function holdLock(id: string): Promise<{ lock: Lock; release(): Promise<void> }> {
  const redlock = new Redlock(lockNodes(), { ...LOCK_OPTIONS });
  const lock = await redlock.acquire(`stock:${id}`, { ttl: 10_000 });
  return {
    lock,
    async release() {
      await lock.release();
      await redlock.close();
    },
  };
}

/** Hangs two of the three lock nodes (SIGSTOP: connections stay open); returns the resume. */
export function hangMajority(): () => void {
  const pids = env('REDLOCK_COMPAT_PIDS').split(',').map(Number).filter(Boolean);
  assert.equal(pids.length, 3);
  const stopped = pids.slice(0, 2);
  for (const pid of stopped) process.kill(pid, 'SIGSTOP');
  return () => {
    for (const pid of stopped) process.kill(pid, 'SIGCONT');
  };
}

/**
 * What a caller received never names the lock's resource (built from user data) or a lock node
 * (`127.0.0.1:<port>`).
 */
export function assertNoLeak(received: string, id: string): void {
  assert.ok(!received.includes(`stock:${id}`), `the caller received the resource: ${received}`);
  for (const node of lockNodes()) {
    const address = new URL(node).host;
    assert.ok(!received.includes(address), `the caller received node ${address}: ${received}`);
  }
}

/** What the instance printed since `from` holds no ERROR line: a busy lock is not an error. */
export async function assertNotLoggedAsError(instance: Instance, from: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 200)); // let the pipe deliver
  const logged = instance.output().slice(from);
  assert.ok(!/\bERROR\b/.test(logged), `instance ${instance.name} logged an error:\n${logged}`);
}

export const INITIAL = 30;
export const CALLS = 50;

/**
 * 50 concurrent decrements of one item, split over the instances (call i goes to instance
 * i % 2 where the transport lets the caller choose). Each answer is the handler's Outcome or
 * 'busy' (the lock was not had within the handler's wait). Then: no overlapping critical
 * sections, final stock = initial − successes and never below 0, "sold out" only once the stock
 * was gone, and every instance served.
 */
export async function assertExclusion(
  store: Store,
  id: string,
  call: (i: number) => Promise<Outcome | 'busy'>,
): Promise<{ successes: number; soldOut: number; busy: number; perInstance: object }> {
  await store.seed(id, INITIAL);
  const answers = await Promise.all(Array.from({ length: CALLS }, (_, i) => call(i)));
  const outcomes = answers.filter((a): a is Outcome => a !== 'busy');
  const successes = outcomes.filter((o) => o.ok).length;
  const soldOut = outcomes.length - successes;
  const busy = answers.length - outcomes.length;
  const perInstance: Record<string, number> = {};
  for (const o of outcomes) perInstance[o.instance] = (perInstance[o.instance] ?? 0) + 1;

  const { stock, overlaps } = await store.read(id);
  const summary = JSON.stringify({ successes, soldOut, busy, perInstance, stock, overlaps });
  console.log(`exclusion: ${summary}`);
  assert.equal(overlaps, 0, `overlapping critical sections: ${summary}`);
  assert.equal(stock, INITIAL - successes, `final stock ≠ initial − successes: ${summary}`);
  assert.ok(stock >= 0, `oversold: ${summary}`);
  if (soldOut > 0) assert.equal(stock, 0, `"sold out" while stock was left: ${summary}`);
  assert.ok(successes > 0, summary);
  assert.deepEqual(Object.keys(perInstance).sort(), ['a', 'b'], `both instances serve: ${summary}`);
  return { successes, soldOut, busy, perInstance };
}
