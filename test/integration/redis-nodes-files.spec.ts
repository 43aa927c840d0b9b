import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { releasePort, reservePort } from '../support/ports';

/**
 * The development nodes the README offers (docs/redis-nodes.sh without Docker,
 * docs/redis-nodes.compose.yml with it) take their ports from the same variables, so that one
 * environment gives the same three nodes either way (issue 25: the compose file's ports were
 * fixed while the script had an override). The script runs for real (three redis-server
 * processes on reserved loopback ports); the compose file is read as Compose interpolates it
 * (`${VAR:-default}`: the default when VAR is unset or empty), no Docker engine needed.
 */

const root = join(__dirname, '..', '..');
const script = join(root, 'docs', 'redis-nodes.sh');
const VARIABLES = ['REDIS_NODE_A_PORT', 'REDIS_NODE_B_PORT', 'REDIS_NODE_C_PORT'];

/** The host ports of the compose file's services under `env`, in service order. */
function composePorts(env: Record<string, string | undefined>): number[] {
  const text = readFileSync(join(root, 'docs', 'redis-nodes.compose.yml'), 'utf8');
  const entries = [...text.matchAll(/^\s+ports: \['([^']+)'\]$/gm)].map(([, entry]) => entry);
  return entries.map((entry) => {
    const interpolated = entry.replace(
      /\$\{(\w+):-([^}]*)\}/g,
      (_, name: string, fallback: string) => env[name] || fallback,
    );
    const [host, port, container] = interpolated.split(':');
    expect({ host, container }).toEqual({ host: '127.0.0.1', container: '6379' });
    return Number(port);
  });
}

/** Runs the script with only `env` on top of PATH and HOME. */
function run(command: string, env: Record<string, string>): string {
  return execFileSync('bash', [script, command], {
    cwd: root,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(1_000);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (d) => {
      socket.destroy();
      resolve(String(d).startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

describe('docs/redis-nodes.sh and docs/redis-nodes.compose.yml', () => {
  it('default to the same three ports, 7001-7003', () => {
    expect(composePorts({})).toEqual([7001, 7002, 7003]);
    const status = run('status', { REDIS_NODES_DIR: join(tmpdir(), 'redis-nodes-unused') });
    expect([...status.matchAll(/^127\.0\.0\.1:(\d+) /gm)].map(([, p]) => Number(p))).toEqual([
      7001, 7002, 7003,
    ]);
  });

  it('both move to the ports of REDIS_NODE_{A,B,C}_PORT; the script starts and stops them', async () => {
    const ports = [await reservePort(), await reservePort(), await reservePort()];
    const dir = mkdtempSync(join(tmpdir(), 'redis-nodes-'));
    const env = Object.fromEntries(VARIABLES.map((name, i) => [name, String(ports[i])]));
    try {
      expect(composePorts(env)).toEqual(ports);
      const started = run('start', { ...env, REDIS_NODES_DIR: dir });
      expect(started).toContain(
        `LOCK_NODES=${ports.map((p) => `redis://127.0.0.1:${p}`).join(',')}`,
      );
      expect(await Promise.all(ports.map(answersPing))).toEqual([true, true, true]);
      run('stop', { ...env, REDIS_NODES_DIR: dir });
      expect(await Promise.all(ports.map(answersPing))).toEqual([false, false, false]);
    } finally {
      // Whatever failed above: stop what the script may have started (by its recorded pids).
      run('stop', { ...env, REDIS_NODES_DIR: dir });
      rmSync(dir, { recursive: true, force: true });
      ports.forEach(releasePort);
    }
  });

  it('one of them set, the others keep their defaults, in both', () => {
    expect(composePorts({ REDIS_NODE_B_PORT: '7202' })).toEqual([7001, 7202, 7003]);
    const status = run('status', {
      REDIS_NODE_B_PORT: '7202',
      REDIS_NODES_DIR: join(tmpdir(), 'redis-nodes-unused'),
    });
    expect([...status.matchAll(/^127\.0\.0\.1:(\d+) /gm)].map(([, p]) => Number(p))).toEqual([
      7001, 7202, 7003,
    ]);
  });
});
