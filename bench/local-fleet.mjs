// A fleet of local redis-server processes for benchmarks: free loopback ports, no persistence,
// stopped by pid. Benchmarks are not tests (architecture.md §6): they only report numbers.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';

function tryPort(port) {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address();
      server.close(() => resolve(bound));
    });
  });
}

// BENCH_PORT_BASE=n: the first free ports from n up (a shared machine's allotted range),
// instead of any free port.
let nextPort = Number(process.env.BENCH_PORT_BASE ?? 0);
async function freePort() {
  if (!nextPort) return tryPort(0);
  for (let tries = 0; tries < 200; tries++) {
    const port = nextPort++;
    try {
      return await tryPort(port);
    } catch {
      // in use: the next one
    }
  }
  throw new Error(`no free port from BENCH_PORT_BASE=${process.env.BENCH_PORT_BASE}`);
}

function spawnServer(port) {
  return spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
}

async function waitReady(node) {
  for (let tries = 0; ; tries++) {
    const client = new Redis(node.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return;
    } catch {
      client.disconnect();
      if (tries > 200) throw new Error(`redis-server on ${node.port} did not start`);
      await delay(25);
    }
  }
}

/**
 * Starts `size` redis-server processes; resolves with their URLs and a stop(). The fault
 * helpers (kill, pause, resume, restart a node by index) serve the benchmark's S3/S4.
 */
export async function startLocalFleet(size) {
  const nodes = [];
  for (let i = 0; i < size; i++) {
    const port = await freePort();
    nodes.push({ port, child: spawnServer(port), url: `redis://127.0.0.1:${port}` });
  }
  for (const node of nodes) await waitReady(node);
  return {
    urls: nodes.map((n) => n.url),
    pids: () => nodes.map((n) => n.child.pid),
    /** SIGKILL node i (it stays down until restart(i)). */
    kill: (i) => nodes[i].child.kill('SIGKILL'),
    /** SIGSTOP node i: its sockets stay open, nothing is answered. */
    pause: (i) => nodes[i].child.kill('SIGSTOP'),
    /** SIGCONT node i. */
    resume: (i) => nodes[i].child.kill('SIGCONT'),
    /** Starts node i again on the same port (after kill(i)); resolves when it answers. */
    restart: async (i) => {
      const node = nodes[i];
      node.child.kill('SIGKILL');
      if (node.child.exitCode === null && node.child.signalCode === null) {
        await new Promise((resolve) => node.child.once('exit', resolve));
      }
      node.child = spawnServer(node.port);
      await waitReady(node);
    },
    stop: () =>
      nodes.forEach((n) => {
        n.child.kill('SIGCONT');
        n.child.kill('SIGKILL');
      }),
  };
}
