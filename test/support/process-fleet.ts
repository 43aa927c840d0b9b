import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onProcessExit } from './exit-cleanup';
import type { RedisFleet } from './fleet';
import { FleetBase } from './fleet-base';
import { releasePort, reservePort } from './ports';
import { PortInUseError, RedisProcessNode } from './redis-process';
import { startWatchdog, type Watchdog } from './watchdog';

/** Fresh ports to try per node before giving up (each failure means another process won a race). */
const MAX_BIND_ATTEMPTS = 10;

/**
 * Starts `size` redis-server processes in parallel, each on its own free loopback port and in its
 * own fresh directory under one temporary fleet directory (removed by `stop()`).
 */
export async function startProcessFleet(size: number, aof: boolean): Promise<RedisFleet> {
  const fleet = new ProcessFleet();
  try {
    // allSettled, not all: on a failure every sibling must have finished starting (and be
    // tracked) before stop() runs, or a late starter would outlive the cleanup.
    const results = await Promise.allSettled(
      Array.from({ length: size }, (_, index) => fleet.launch(index, aof)),
    );
    const failure = results.find((result) => result.status === 'rejected');
    if (failure) throw failure.reason;
    return fleet;
  } catch (error) {
    await fleet.stop();
    throw error;
  }
}

/**
 * The `process` backend's fleet. Every pid it spawns is tracked from spawn to exit and handed to
 * three cleanups, so no redis-server outlives the test process however it ends:
 * `stop()` (normal end), an `exit` handler (process exits without stop), and a watchdog (process
 * killed by a signal, where no JavaScript runs).
 */
class ProcessFleet extends FleetBase<RedisProcessNode> {
  protected readonly members: RedisProcessNode[] = [];
  private readonly root = mkdtempSync(join(tmpdir(), 'redlock-fleet-'));
  private readonly pids = new Set<number>();
  private readonly ports = new Set<number>();
  private readonly watchdog: Watchdog = startWatchdog(this.root);
  private readonly forgetExitCleanup = onProcessExit(() => this.cleanUpSync());
  private stopping: Promise<void> | undefined;
  private readonly tracker = {
    add: (pid: number) => {
      this.pids.add(pid);
      this.watchdog.setPids(this.pids);
    },
    delete: (pid: number) => {
      this.pids.delete(pid);
      this.watchdog.setPids(this.pids);
    },
  };

  /** Starts node `index`, on a fresh port for every attempt that loses a bind race. */
  async launch(index: number, aof: boolean): Promise<void> {
    const dir = join(this.root, `node-${index}`);
    for (let attempt = 1; ; attempt++) {
      const port = await reservePort();
      this.ports.add(port);
      // A clean directory per attempt: nothing from a failed attempt may look like saved data.
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir);
      const node = new RedisProcessNode(index, port, dir, aof, this.tracker);
      try {
        await node.start();
        this.members[index] = node;
        return;
      } catch (error) {
        this.ports.delete(port);
        releasePort(port);
        if (!(error instanceof PortInUseError) || attempt >= MAX_BIND_ATTEMPTS) throw error;
      }
    }
  }

  stop(): Promise<void> {
    this.stopping ??= this.tearDown();
    return this.stopping;
  }

  private async tearDown(): Promise<void> {
    // The redis-server children are unref'd (they must never keep a jest worker alive), so
    // waiting for their exit would not keep a process alive either: one with nothing else to do
    // would end in the middle of stop(), before the rest of its shutdown and with its chosen
    // exit code lost. The fleet holds the process open itself until it is done.
    const keepAlive = setInterval(() => undefined, 1_000);
    try {
      // Resume first, as the contract says: a node is never left stopped, whatever kill does.
      await Promise.all(this.members.filter((node) => node.paused).map((node) => node.resume()));
      await Promise.all(this.members.map((node) => node.kill()));
    } finally {
      this.cleanUpSync();
      this.forgetExitCleanup();
      clearInterval(keepAlive);
    }
  }

  /**
   * Kills whatever is still tracked, ends the watchdog, removes the fleet directory and gives the
   * ports back. Synchronous: it is also the `exit` handler.
   */
  private cleanUpSync(): void {
    for (const pid of this.pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    this.watchdog.stop();
    rmSync(this.root, { recursive: true, force: true });
    for (const port of this.ports) releasePort(port);
    this.ports.clear();
  }
}
