import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { REDIS_SERVER } from './redis-process';

/** How test nodes run: local redis-server processes, or Docker containers. */
export type FleetBackend = 'process' | 'container';

/** The environment variable that forces a backend. */
export const BACKEND_ENV = 'REDLOCK_TEST_BACKEND';

/** True when an executable `redis-server` is on PATH. */
export function redisServerOnPath(): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    if (!dir) return false;
    try {
      accessSync(join(dir, REDIS_SERVER), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** True when testcontainers can reach a Docker (or compatible) engine. */
async function dockerReachable(): Promise<boolean> {
  try {
    // Loaded on demand, like the container backend itself: requiring testcontainers is slow.
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/** Decided once per test file: every fleet of a file runs on the same backend. */
let detected: Promise<FleetBackend> | undefined;

/**
 * The backend to use when the caller did not name one: `REDLOCK_TEST_BACKEND` if set; otherwise
 * `process` when redis-server is on PATH (fastest, and real signals for pause and kill);
 * otherwise `container` when a Docker engine is reachable; otherwise an Error that says how to
 * get either.
 */
export function defaultBackend(): Promise<FleetBackend> {
  detected ??= detect();
  return detected;
}

async function detect(): Promise<FleetBackend> {
  const forced = process.env[BACKEND_ENV];
  if (forced !== undefined && forced !== '') {
    if (forced === 'process' || forced === 'container') return forced;
    throw new Error(`${BACKEND_ENV}=${forced} is not a backend: use 'process' or 'container'`);
  }
  if (redisServerOnPath()) return 'process';
  if (await dockerReachable()) return 'container';
  throw new Error(
    'The Redis test fleet needs either redis-server or Docker, and found neither. ' +
      'Either install redis-server so it is on PATH (e.g. `apt-get install redis-server`, ' +
      '`brew install redis`) to use the process backend, or make a Docker engine reachable ' +
      `(and optionally set ${BACKEND_ENV}=container) to use the container backend.`,
  );
}
