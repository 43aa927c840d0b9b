import type { Clock } from '../clock';
import type { RedisNode } from '../nodes/node';

/**
 * Drift allowed between this process's monotonic clock and a node's TIME, per ms (500 ppm,
 * ntpd's largest slew): an estimate's error bound grows by it as the sample ages. A faster slew
 * (chrony may) or a step shows as a sample that contradicts the estimate, which replaces it, and
 * the scripts' clamp bounds what a stale estimate can do in the meantime.
 */
const DRIFT = 5e-4;

/** An estimate is not used past this age (ms): its error bound would be no better than none. */
const MAX_AGE_MS = 30_000;

interface Estimate {
  /** Server time (ms) minus this process's monotonic time, at the sample. */
  readonly offset: number;
  /** Half the sample's round trip (ms): how far the offset may be off. */
  readonly error: number;
  /** When the sample was taken (monotonic ms). */
  readonly at: number;
}

/**
 * Where each node's clock stands against this process's (issue 24, S5: order inversions). The
 * fair queue orders groups by when their oldest waiter started waiting, on each node's clock.
 * Without an estimate a node places a start at its TIME minus the wait the request carries: late
 * by the request's way to the node, which varies by a few tenths of a ms to ms on a busy host,
 * and that noise was most of the overtakings between waiters of two processes starting within
 * a ms (bench/fair-rates.mjs). With one, the client sends the start on the node's clock itself.
 *
 * The samples cost nothing: a queued acquire that queues its group reads TIME anyway and returns
 * it. The estimate kept is the one with the smallest error bound (half the round trip, plus the
 * drift since), as an NTP client filters; a sample that disagrees with it beyond both bounds
 * replaces it (the server's clock stepped). The scripts never trust an estimate by more than
 * START_SLACK_MS (queue-scripts.ts), so ordering is all an estimate can touch: the lock is still
 * taken only by the acquire script's compare and counted at quorum.
 */
export class ServerClocks {
  private readonly estimates = new WeakMap<RedisNode, Estimate>();

  constructor(private readonly clock: Clock) {}

  /**
   * A sample: a request sent at `sentAt` and answered at `receivedAt` (monotonic ms) read the
   * node's clock as `serverTime` (ms) in between.
   */
  sample(node: RedisNode, sentAt: number, receivedAt: number, serverTime: number): void {
    const error = Math.max(0, receivedAt - sentAt) / 2;
    const offset = serverTime - (sentAt + receivedAt) / 2;
    const best = this.estimates.get(node);
    if (best !== undefined) {
      const bound = best.error + (receivedAt - best.at) * DRIFT;
      if (error > bound && Math.abs(offset - best.offset) <= error + bound) return;
    }
    this.estimates.set(node, { offset, error, at: receivedAt });
  }

  /** `at` (monotonic ms) on `node`'s clock, to the µs; undefined without a usable estimate. */
  onServer(node: RedisNode, at: number): number | undefined {
    const estimate = this.estimates.get(node);
    if (estimate === undefined || this.clock.now() - estimate.at > MAX_AGE_MS) return undefined;
    return Math.round((at + estimate.offset) * 1000) / 1000;
  }
}
