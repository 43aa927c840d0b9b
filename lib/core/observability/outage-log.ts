import { monotonicClock, type Clock } from '../clock';
import {
  diagnosticOf,
  LockNotAcquiredError,
  RedlockPermissionError,
  SHUTTING_DOWN,
} from '../errors';
import type { RedlockLogger } from './logger';

/**
 * How an outage is logged (architecture.md §5.12, issue 25): per lock and per cause, the first failure
 * with its detail; then, while it lasts, one summary line per interval counting the failures
 * since the last line; and once, the recovery. A `@Cron` ticking every second on every instance
 * while a quorum of nodes is down used to log a stack of 36 lines per tick — an outage must read
 * as one event with a count, not as a flood that buries everything else.
 *
 * "A lock" is a place that locks (a `@Locked` method, named as `@Locked on Class.method`), not a
 * resource: resource names come from requests and would make one line per id.
 *
 * @example
 * const outages = new OutageLog(logger);
 * outages.failed('@Locked on ReportJob.run', error); // error: first failure, with its detail
 * outages.failed('@Locked on ReportJob.run', error); // counted
 * outages.succeeded('@Locked on ReportJob.run');      // log: available again after 2 failures over 3 s
 */
export class OutageLog {
  /** Open outages, by `${site}\n${cause}`. */
  private readonly open = new Map<string, Outage>();

  constructor(
    private readonly logger: RedlockLogger,
    private readonly clock: Clock = monotonicClock,
    /** How often, at most, an ongoing outage is summarised (ms). */
    private readonly summaryEveryMs = 60_000,
  ) {}

  /**
   * Whether `error` is an outage this log reports: the nodes unavailable (not a shutdown) or a
   * permission the Redis user lacks. A busy lock is not one, nor a caller's bad value.
   */
  static isOutage(error: unknown): boolean {
    if (error instanceof RedlockPermissionError) return true;
    return (
      error instanceof LockNotAcquiredError &&
      error.reason === 'unavailable' &&
      error.detail !== SHUTTING_DOWN
    );
  }

  /** A failure of `site`: logged if it is the first of its cause, else counted (and summarised). */
  failed(site: string, error: unknown): void {
    const cause = causeOf(error);
    const key = `${site}\n${cause}`;
    const now = this.clock.now();
    const outage = this.open.get(key);
    if (outage === undefined) {
      this.open.set(key, { site, cause, since: now, failures: 1, unsaid: 0, saidAt: now });
      this.logger.error(
        `${site}: the lock is unavailable (${cause}) — ${diagnosticOf(error)}. ` +
          `Further failures of this lock for this cause are counted and summarised every ${Math.round(this.summaryEveryMs / 1000)} s until it is acquired again`,
      );
      return;
    }
    outage.failures++;
    outage.unsaid++;
    if (now - outage.saidAt < this.summaryEveryMs) return;
    this.logger.warn(
      `${site}: the lock is still unavailable (${cause}): ${outage.unsaid} more failure${outage.unsaid === 1 ? '' : 's'} in the last ${seconds(now - outage.saidAt)} s, ${outage.failures} since ${seconds(now - outage.since)} s ago`,
    );
    outage.unsaid = 0;
    outage.saidAt = now;
  }

  /** `site` took its lock: every outage open for it is over, and said so once. */
  succeeded(site: string): void {
    if (this.open.size === 0) return;
    const now = this.clock.now();
    for (const [key, outage] of this.open) {
      if (outage.site !== site) continue;
      this.open.delete(key);
      this.logger.log(
        `${site}: the lock is available again, after ${outage.failures} failure${outage.failures === 1 ? '' : 's'} over ${seconds(now - outage.since)} s (${outage.cause})`,
      );
    }
  }
}

interface Outage {
  readonly site: string;
  readonly cause: string;
  readonly since: number;
  failures: number;
  /** Failures since the last line. */
  unsaid: number;
  saidAt: number;
}

/**
 * The cause of a failure, in a few words that stay the same while the outage does: what kind of
 * trouble the nodes had (unreachable, no answer in time, not counted…), never their addresses,
 * and not the nodes that merely were not waited for.
 */
function causeOf(error: unknown): string {
  if (error instanceof RedlockPermissionError) return 'permission denied';
  if (!(error instanceof LockNotAcquiredError)) return 'error';
  const kinds = new Set<string>();
  for (const node of error.nodes) {
    if (node.outcome === 'excluded') kinds.add('nodes not counted');
    else if (node.outcome === 'timeout') kinds.add('nodes not answering in time');
    else if (node.outcome === 'error') kinds.add(errorKind(node.error ?? ''));
  }
  return kinds.size === 0 ? 'nodes unavailable' : [...kinds].sort().join(', ');
}

/** A node error's kind: unreachable however it was seen (a closed connection, a refused one…). */
function errorKind(text: string): string {
  if (/^(not connected|connection|connect|host)/.test(text)) return 'nodes unreachable';
  if (/^no TLS handshake|^TLS/.test(text)) return 'TLS mismatch';
  if (/^no answer/.test(text)) return 'nodes not answering in time';
  // The library's sentence only, up to its first clause: the same for every failure.
  return text.replace(/\s*[(:].*$/s, '');
}

function seconds(ms: number): number {
  return Math.round(ms / 1000);
}
