import {
  GenericContainer,
  getContainerRuntimeClient,
  Wait,
  type ContainerRuntimeClient,
  type StartedTestContainer,
} from 'testcontainers';
import { AdminConnection } from './admin-connection';
import type { FleetNode, RedisFleet, RestartOptions } from './fleet';
import { FleetBase } from './fleet-base';
import { releasePort, reservePort } from './ports';
import { identify, LOOPBACK, sleep, waitUntilRefused } from './probe';
import { persistenceArgs } from './redis-config';

/**
 * The `container` backend: one `redis:7-alpine` container per node, through testcontainers.
 * Used where redis-server is not installed but a Docker engine is reachable (or when
 * REDLOCK_TEST_BACKEND=container). Cleanup after a crashed test process is testcontainers' own
 * Ryuk reaper, which removes the session's containers once the process's connection to it drops.
 */

const IMAGE = 'redis:7-alpine';
const REDIS_PORT = 6379;
const START_TIMEOUT_MS = 60_000; // includes an image pull on a fresh machine

/** The dockerode handle testcontainers exposes, for the operations it has no API of its own for. */
type DockerContainer = ReturnType<ContainerRuntimeClient['container']['getById']>;

/**
 * redis:7-alpine published on a fixed host port of the loopback interface only. Fixed, so that a
 * container stopped and started again keeps its port (nodes are addressed by URL); loopback, so an
 * unauthenticated test Redis is never reachable from the network. testcontainers has no public
 * option for the host IP, hence the hook that rewrites the binding just before creation.
 */
class LoopbackRedisContainer extends GenericContainer {
  constructor(
    private readonly hostPort: number,
    aof: boolean,
  ) {
    super(IMAGE);
    this.withCommand(['redis-server', ...persistenceArgs(aof)])
      .withExposedPorts({ container: REDIS_PORT, host: hostPort })
      .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
      .withStartupTimeout(START_TIMEOUT_MS);
  }

  protected override async beforeContainerCreated(): Promise<void> {
    this.hostConfig.PortBindings = {
      [`${REDIS_PORT}/tcp`]: [{ HostIp: LOOPBACK, HostPort: String(this.hostPort) }],
    };
  }
}

/** One container node; pid is always undefined (the process lives in the container). */
class ContainerNode implements FleetNode {
  readonly host = LOOPBACK;
  readonly url: string;
  readonly pid = undefined;
  private up = true;
  private isPaused = false;
  private readonly admin: AdminConnection;

  constructor(
    readonly index: number,
    readonly port: number,
    readonly started: StartedTestContainer,
    private readonly docker: DockerContainer,
  ) {
    this.url = `redis://${LOOPBACK}:${port}`;
    this.admin = new AdminConnection(LOOPBACK, port, `node ${index} (${LOOPBACK}:${port})`);
  }

  /** True between `pause()` and `resume()`. */
  get paused(): boolean {
    return this.isPaused;
  }

  running(): boolean {
    return this.up;
  }

  async kill(): Promise<void> {
    this.admin.close();
    if (this.up) {
      // Docker refuses to kill a paused container.
      if (this.isPaused) await this.resume();
      await this.docker.kill();
      await this.docker.wait(); // the container has really exited
      this.up = false;
    }
    await waitUntilRefused(this.port);
  }

  async pause(): Promise<void> {
    this.requireRunning('pause');
    await this.docker.pause();
    this.isPaused = true;
  }

  async resume(): Promise<void> {
    this.requireRunning('resume');
    await this.docker.unpause();
    this.isPaused = false;
  }

  async restart(options: RestartOptions = {}): Promise<void> {
    if (options.withoutData) {
      // The files live in the container (/data): removed while it runs, then it is killed
      // before it can write them again, as a container started without its volume would be.
      if (!this.up) await this.docker.start();
      if (this.isPaused) await this.resume();
      await this.started.exec(['sh', '-c', 'rm -rf /data/appendonlydir /data/*.aof /data/*.rdb']);
      this.up = true;
    }
    if (this.up) await this.kill();
    // Same container: same port binding and, with AOF, the same /data.
    await this.docker.start();
    this.up = true;
    await untilAnswers(this.port);
  }

  command(...args: (string | number)[]): Promise<unknown> {
    return this.admin.command(args);
  }

  /** Closes the admin connection and removes the container. */
  async remove(): Promise<void> {
    this.admin.close();
    if (this.isPaused) await this.resume();
    await this.started.stop({ timeout: 0, remove: true, removeVolumes: true });
    this.up = false;
  }

  private requireRunning(action: string): void {
    if (!this.up) {
      throw new Error(`cannot ${action} node ${this.index} (port ${this.port}): it is not running`);
    }
  }
}

/** Resolves once Redis on `port` answers and has loaded its data; rejects after the timeout. */
async function untilAnswers(port: number): Promise<void> {
  const deadline = performance.now() + START_TIMEOUT_MS;
  for (;;) {
    const identity = await identify(port);
    if (identity && !identity.loading) return;
    if (performance.now() > deadline) {
      throw new Error(`redis container on port ${port} did not answer after a restart`);
    }
    await sleep(20);
  }
}

/** Starts one container node on a reserved port. */
async function startNode(
  index: number,
  aof: boolean,
  client: ContainerRuntimeClient,
): Promise<ContainerNode> {
  const port = await reservePort();
  try {
    const started = await new LoopbackRedisContainer(port, aof).start();
    return new ContainerNode(index, port, started, client.container.getById(started.getId()));
  } catch (error) {
    releasePort(port);
    throw error;
  }
}

/** The container backend's fleet. */
class ContainerFleet extends FleetBase<ContainerNode> {
  private stopping: Promise<void> | undefined;

  constructor(protected readonly members: readonly ContainerNode[]) {
    super();
  }

  stop(): Promise<void> {
    this.stopping ??= removeAll(this.members);
    return this.stopping;
  }
}

/** Removes every node's container and gives its port back, even if some removals fail. */
async function removeAll(nodes: readonly ContainerNode[]): Promise<void> {
  const results = await Promise.allSettled(nodes.map((node) => node.remove()));
  for (const node of nodes) releasePort(node.port);
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
}

/** Starts `size` redis:7-alpine containers in parallel, each on its own loopback port. */
export async function startContainerFleet(size: number, aof: boolean): Promise<RedisFleet> {
  const client = await getContainerRuntimeClient().catch((error: unknown) => {
    throw new Error(
      `The container backend found no reachable Docker engine (${String(error)}). ` +
        'Start Docker, or install redis-server and leave REDLOCK_TEST_BACKEND unset.',
    );
  });
  const results = await Promise.allSettled(
    Array.from({ length: size }, (_, index) => startNode(index, aof, client)),
  );
  const nodes = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) {
    await removeAll(nodes).catch(() => undefined);
    throw failure.reason;
  }
  return new ContainerFleet(nodes);
}
