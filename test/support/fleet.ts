/**
 * The real-Redis test fleet (docs/architecture.md §6): N independent Redis nodes on loopback ports, with
 * real faults (SIGKILL, SIGSTOP, restart without persistence). Integration and e2e tests import
 * only this module (and `latency-proxy`); the backends are details behind {@link startFleet}.
 *
 * @example
 * const fleet = await startFleet(5);
 * afterAll(() => fleet.stop());
 * await fleet.nodes[2].pause(); // hung: connections stay open, nothing answers
 */
import { defaultBackend, type FleetBackend } from './backend';
import { startProcessFleet } from './process-fleet';

export type { FleetBackend } from './backend';

/** How to start a fleet. */
export interface FleetOptions {
  /**
   * Start nodes with `appendonly yes` and `appendfsync always`, so a killed node comes back with
   * every acknowledged write. Default false: no persistence at all (`--save '' --appendonly no`),
   * so a killed node comes back empty.
   */
  aof?: boolean;
  /**
   * Where nodes run. Default: env `REDLOCK_TEST_BACKEND`, else `process` when redis-server is on
   * PATH, else `container` when a Docker engine is reachable, else startFleet rejects with an
   * Error naming both ways out.
   */
  backend?: FleetBackend;
}

/** One Redis node of a fleet. */
export interface FleetNode {
  /** Position in `fleet.nodes` and `fleet.urls()`. */
  readonly index: number;
  /** Always the loopback address '127.0.0.1'. */
  readonly host: string;
  /** The node's port; it stays the same across `kill()` and `restart()`. */
  readonly port: number;
  /** `redis://127.0.0.1:${port}`. */
  readonly url: string;
  /** Pid of the running redis-server (process backend); undefined while down or in a container. */
  readonly pid: number | undefined;
  /** SIGKILL (no shutdown, no save); resolves once the port refuses connections. */
  kill(): Promise<void>;
  /**
   * SIGSTOP (process) or `docker pause` (container): existing TCP connections stay open and new
   * ones are accepted by the kernel, but nothing answers: a hung node, not a dead one.
   */
  pause(): Promise<void>;
  /** SIGCONT / `docker unpause`: the node answers everything queued meanwhile, in order. */
  resume(): Promise<void>;
  /**
   * Starts the node again on the same port with the same persistence mode (killing it first if
   * it is running); resolves once it answers. With `withoutData`, its data files (AOF, RDB) are
   * removed between the kill and the start: a durable node that comes back empty, as a container
   * restarted without its volume or a rescheduled pod does.
   */
  restart(options?: RestartOptions): Promise<void>;
  /** False after `kill()` until `restart()`; a paused node is running. */
  running(): boolean;
  /**
   * Runs one command on a cached admin connection, e.g. `command('PTTL', 'k')`,
   * `command('SET', 'k', 'v', 'PX', 1000)`. Rejects after about 2 s when the node does not answer
   * (paused), rather than hanging the test.
   */
  command(...args: (string | number)[]): Promise<unknown>;
}

/** How {@link FleetNode.restart} restarts a node. */
export interface RestartOptions {
  /** Remove the node's data files before it starts again (default false: it keeps them). */
  withoutData?: boolean;
}

/** A started fleet; call `stop()` when done (in `afterAll`). */
export interface RedisFleet {
  /** The nodes, by index. */
  readonly nodes: readonly FleetNode[];
  /** Every node's URL, by index: what a Redlock under test is given. */
  urls(): string[];
  /** FLUSHALL on every running, unpaused node: resets state between tests. */
  flushAll(): Promise<void>;
  /**
   * Resumes paused nodes, kills all, closes admin connections, removes temporary directories.
   * Idempotent: calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

/**
 * Starts `size` independent Redis nodes in parallel and resolves once every one answers.
 * On any failure, the nodes already started are stopped before the promise rejects.
 */
export async function startFleet(size: number, options: FleetOptions = {}): Promise<RedisFleet> {
  if (!Number.isInteger(size) || size < 1) {
    throw new Error(`a fleet needs a positive whole number of nodes, not ${size}`);
  }
  const backend = options.backend ?? (await defaultBackend());
  const aof = options.aof ?? false;
  if (backend === 'process') return startProcessFleet(size, aof);
  // Loaded on demand: testcontainers alone takes over half a second to require, and jest would
  // pay that again in every test file although the process backend never needs it.
  const { startContainerFleet } = await import('./container-fleet');
  return startContainerFleet(size, aof);
}
