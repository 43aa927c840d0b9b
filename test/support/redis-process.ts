import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AdminConnection } from './admin-connection';
import type { FleetNode, RestartOptions } from './fleet';
import { identify, LOOPBACK, sleep, waitUntilRefused } from './probe';
import { persistenceArgs } from './redis-config';

/** The binary the process backend runs, looked up on PATH. */
export const REDIS_SERVER = 'redis-server';

/** How long a node may take to answer after spawn (generous: CI machines stall). */
const START_TIMEOUT_MS = 10_000;
/** Log lines quoted in an error when a node fails to start. */
const LOG_TAIL_LINES = 20;

/** redis-server could not bind its port: someone else took it, so the caller picks another. */
export class PortInUseError extends Error {}

/** Where the fleet is told about pids to kill if the owner dies (watchdog, exit handler). */
export interface PidTracker {
  /** A redis-server process was spawned. */
  add(pid: number): void;
  /** That process has exited. */
  delete(pid: number): void;
}

/** One spawned redis-server process, from spawn to exit. */
interface Run {
  readonly child: ChildProcess;
  /** Resolves when the process has exited (or could not be spawned at all). */
  readonly exited: Promise<void>;
  /** How it ended, once it has: e.g. "exit code 1", "signal SIGKILL", "spawn redis-server ENOENT". */
  ended?: string;
  paused: boolean;
}

/**
 * One node of the `process` backend: a `redis-server` child process on a fixed loopback port
 * with its own data directory, which `kill()` and `restart()` may replace by a new process on
 * the same port and directory.
 */
export class RedisProcessNode implements FleetNode {
  readonly host = LOOPBACK;
  readonly url: string;
  private run: Run | undefined;
  private readonly admin: AdminConnection;
  private readonly logFile: string;

  /**
   * Does not start anything: call {@link start}.
   * @param dir the node's own data directory (AOF files, log); it must exist
   */
  constructor(
    readonly index: number,
    readonly port: number,
    private readonly dir: string,
    private readonly aof: boolean,
    private readonly pids: PidTracker,
  ) {
    this.url = `redis://${LOOPBACK}:${port}`;
    this.logFile = join(dir, 'redis.log');
    this.admin = new AdminConnection(LOOPBACK, port, `node ${index} (${LOOPBACK}:${port})`);
  }

  /** Pid of the running redis-server; undefined while the node is down. */
  get pid(): number | undefined {
    return this.running() ? this.run?.child.pid : undefined;
  }

  /** True between `pause()` and `resume()` (or the next kill). */
  get paused(): boolean {
    return this.running() && this.run?.paused === true;
  }

  running(): boolean {
    return this.run !== undefined && this.run.ended === undefined;
  }

  /**
   * Spawns redis-server and resolves once the server on the port is this very process (its pid,
   * from INFO) and has finished loading its data. Checking the pid matters: when another worker's
   * node already holds the port, a plain PING would be answered, by the wrong server.
   * @throws PortInUseError when the port is taken; Error with the log's tail for other failures
   */
  async start(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      LOOPBACK,
      '--dir',
      this.dir,
      '--logfile',
      this.logFile,
      '--daemonize',
      'no', // the fleet must own the pid it kills; a daemon would detach from it
      ...persistenceArgs(this.aof),
    ];
    // stdio ignored: everything goes to the log file, and no pipe can fill up and block redis.
    const child = spawn(REDIS_SERVER, args, { stdio: 'ignore' });
    // A node must never keep a jest worker alive; the exit handler kills it if stop() is missed.
    child.unref();
    const run: Run = {
      child,
      paused: false,
      // The callbacks run on later events, by when `run` is assigned.
      exited: new Promise<void>((resolve) => {
        const end = (how: string) => {
          if (run.ended === undefined) run.ended = how;
          if (child.pid !== undefined) this.pids.delete(child.pid);
          resolve();
        };
        child.once('exit', (code, signal) =>
          end(signal ? `signal ${signal}` : `exit code ${code}`),
        );
        child.once('error', (error) => end(error.message));
      }),
    };
    this.run = run;
    if (child.pid !== undefined) this.pids.add(child.pid);
    await this.untilReady(run);
  }

  private async untilReady(run: Run): Promise<void> {
    const deadline = performance.now() + START_TIMEOUT_MS;
    for (;;) {
      if (run.ended !== undefined) {
        const log = this.logTail();
        if (/Address already in use/i.test(log)) {
          throw new PortInUseError(`port ${this.port} is already in use`);
        }
        throw new Error(
          `redis-server for node ${this.index} on port ${this.port} stopped before it was ready ` +
            `(${run.ended}).\n--- tail of ${this.logFile} ---\n${log}`,
        );
      }
      // Raced with the exit: a squatter that accepts and never answers must not cost a timeout.
      const identity = await Promise.race([identify(this.port), run.exited.then(() => undefined)]);
      if (identity && identity.pid === run.child.pid && !identity.loading) return;
      if (performance.now() > deadline) {
        run.child.kill('SIGKILL');
        await run.exited;
        throw new Error(
          `redis-server for node ${this.index} on port ${this.port} did not answer within ` +
            `${START_TIMEOUT_MS} ms.\n--- tail of ${this.logFile} ---\n${this.logTail()}`,
        );
      }
      // Wake up early if the process dies, e.g. on a bind failure.
      await Promise.race([sleep(5), run.exited]);
    }
  }

  private logTail(): string {
    try {
      return readFileSync(this.logFile, 'utf8')
        .trimEnd()
        .split('\n')
        .slice(-LOG_TAIL_LINES)
        .join('\n');
    } catch {
      return '(no log written)';
    }
  }

  private requireRunning(action: string): Run {
    if (!this.run || !this.running()) {
      throw new Error(`cannot ${action} node ${this.index} (port ${this.port}): it is not running`);
    }
    return this.run;
  }

  async kill(): Promise<void> {
    const run = this.run;
    this.admin.close();
    if (run && run.ended === undefined) run.child.kill('SIGKILL'); // works on a stopped process too
    await run?.exited;
    // The process is reaped, so its listening socket is closed; check it anyway, since that is
    // what callers rely on.
    await waitUntilRefused(this.port);
  }

  async pause(): Promise<void> {
    const run = this.requireRunning('pause');
    run.child.kill('SIGSTOP');
    run.paused = true;
    await untilStopped(run.child.pid);
  }

  async resume(): Promise<void> {
    const run = this.requireRunning('resume');
    run.child.kill('SIGCONT');
    run.paused = false;
  }

  async restart(options: RestartOptions = {}): Promise<void> {
    if (this.running()) await this.kill();
    if (options.withoutData) this.removeData();
    try {
      await this.start();
    } catch (error) {
      if (error instanceof PortInUseError) {
        throw new Error(
          `cannot restart node ${this.index}: something took port ${this.port} while it was down`,
        );
      }
      throw error;
    }
  }

  command(...args: (string | number)[]): Promise<unknown> {
    return this.admin.command(args);
  }

  /** Removes everything in the node's directory but its log: the AOF directory, any RDB file. */
  private removeData(): void {
    for (const entry of readdirSync(this.dir)) {
      if (join(this.dir, entry) !== this.logFile) {
        rmSync(join(this.dir, entry), { recursive: true, force: true });
      }
    }
  }
}

/**
 * Resolves once the kernel reports `pid` as stopped (state T in /proc/<pid>/stat). SIGSTOP takes
 * effect almost at once, but "almost" is a race a test can lose on a loaded 2-core machine: a
 * command sent right after pause() must not be answered. Where /proc does not exist it returns.
 */
async function untilStopped(pid: number | undefined, timeoutMs = 1_000): Promise<void> {
  if (pid === undefined) return;
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return; // no /proc (macOS), or the process is gone: nothing left to wait for
    }
    // "pid (comm) S ...": the comm may contain spaces, so look after the last ')'.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'T' || state === 't') return;
    await sleep(1);
  }
}
