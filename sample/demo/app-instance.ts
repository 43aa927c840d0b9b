import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** The sample's compiled entry point, next to the demo's in dist-sample/sample. */
const MAIN = join(__dirname, '..', 'src', 'main.js');
/** A cold start (Nest, 5 lock connections) on a busy 2-core machine takes a second or two. */
const START_TIMEOUT_MS = 30_000;
/** How long an instance gets to close (release its locks) after SIGTERM before SIGKILL. */
const STOP_TIMEOUT_MS = 5_000;
/** Output lines kept to explain a failure. */
const KEPT_LINES = 40;

/** Where an instance finds its Redis nodes. */
export interface InstanceConfig {
  lockNodes: string[];
  stockRedisUrl: string;
}

/**
 * One instance of the sample app as its own Node process (a deployed instance, not a second app
 * in the demo's process): started with `PORT=0` on loopback, found by the "Listening on" line
 * it logs, stopped by pid.
 */
export class AppInstance {
  private readonly output: string[] = [];
  private readonly exited: Promise<void>;
  private exitedHow: string | undefined;
  private onListening: ((url: string) => void) | undefined;

  private constructor(
    /** A short name for progress lines: "A", "B". */
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitedHow = signal ? `signal ${signal}` : `exit code ${code}`;
        resolve();
      });
      child.once('error', (error) => {
        this.exitedHow = error.message;
        resolve();
      });
    });
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.output.push(line);
        if (this.output.length > KEPT_LINES) this.output.shift();
        const listening = /Listening on (http:\/\/\S+)/.exec(line);
        if (listening) this.onListening?.(listening[1]);
      });
    }
  }

  /** The process id. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Starts an instance and resolves with it and its base URL once it listens.
   * @throws Error with the instance's output when it exits or stays silent too long (it is
   *   stopped first)
   */
  static async start(name: string, config: InstanceConfig): Promise<[AppInstance, string]> {
    const child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        LOCK_NODES: config.lockNodes.join(','),
        STOCK_REDIS_URL: config.stockRedisUrl,
        PORT: '0',
        HOST: '127.0.0.1',
        NO_COLOR: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const instance = new AppInstance(name, child);
    try {
      return [instance, await instance.url()];
    } catch (error) {
      await instance.stop();
      throw error;
    }
  }

  /** Resolves with the URL from the instance's "Listening on …" line (main.ts logs it). */
  private url(): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const fail = (why: string) =>
        reject(new Error(`instance ${this.name} ${why}; its output:\n${this.outputTail()}`));
      const timer = setTimeout(
        () => fail(`did not listen within ${START_TIMEOUT_MS} ms`),
        START_TIMEOUT_MS,
      );
      this.onListening = (url) => {
        clearTimeout(timer);
        resolve(url);
      };
      void this.exited.then(() => {
        clearTimeout(timer);
        fail(`exited (${this.exitedHow}) before listening`);
      });
    });
  }

  /** The last lines the instance printed. */
  outputTail(): string {
    return this.output.map((line) => `  | ${line}`).join('\n');
  }

  /**
   * SIGTERM (the instance closes: releases its locks, closes its connections), then SIGKILL if
   * it has not exited within a few seconds. Resolves once it has exited.
   */
  async stop(): Promise<void> {
    if (this.exitedHow !== undefined) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
  }
}
