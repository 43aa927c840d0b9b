import { setTimeout as delay } from 'node:timers/promises';
import { Readable } from 'node:stream';
import type { RedisFleet } from '../support/fleet';

/**
 * Shared by the locked-hold*.spec.ts files: what they assert is an invariant of the lock (one
 * holder at a time; the key on a quorum while the work runs), observed from inside the work.
 */

/** Counts the pieces of work running at once under what should be one lock. */
export class HolderProbe {
  current = 0;
  max = 0;
  entered = 0;
  finished = 0;

  enter(): void {
    this.entered += 1;
    this.current += 1;
    this.max = Math.max(this.max, this.current);
  }

  exit(): void {
    this.current -= 1;
    this.finished += 1;
  }

  /** One piece of work of `ms`, counted while it runs. */
  async hold(ms: number): Promise<void> {
    this.enter();
    try {
      await delay(ms);
    } finally {
      this.exit();
    }
  }

  reset(): void {
    this.current = this.max = this.entered = this.finished = 0;
  }
}

/** How many nodes of the fleet hold a key for `resource` (the default `redlock:` prefix). */
export async function nodesHolding(fleet: RedisFleet, resource: string): Promise<number> {
  const present = await Promise.all(
    fleet.nodes.map(async (node) => (await node.command('EXISTS', `redlock:${resource}`)) === 1),
  );
  return present.filter(Boolean).length;
}

export { eventually } from '../support/eventually';

/**
 * A body of `chunks` chunks, one every `everyMs`, produced only when read (a pull stream, like a
 * file), counted in `probe` from its first read until it ends or is destroyed.
 */
export function slowBody(probe: HolderProbe, chunks: number, everyMs: number): Readable {
  let sent = 0;
  let started = false;
  let stopped = false;
  const stop = () => {
    if (started && !stopped) {
      stopped = true;
      probe.exit();
    }
  };
  return new Readable({
    read() {
      if (!started) {
        started = true;
        probe.enter();
      }
      setTimeout(() => {
        if (stopped) return;
        sent += 1;
        this.push(`chunk ${sent}\n`);
        if (sent === chunks) {
          stop();
          this.push(null);
        }
      }, everyMs);
    },
    destroy(error, callback) {
      stop();
      callback(error);
    },
  });
}
