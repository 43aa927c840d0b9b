import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { RedlockService, type NodeHealthState, type RedlockHealth } from 'nestjs-redlock';

/** One lock node in the details of a {@link RedlockHealthIndicator} check. */
export interface RedlockNodeHealthDetail {
  /** `host:port`, never credentials. */
  readonly node: string;
  /** `up`: it answered a PING within `nodeTimeout`. */
  readonly status: 'up' | 'down';
  /** The PING's round trip in ms (to 0.1 ms), when it answered. */
  readonly latencyMs?: number;
  /** Why it is down (an error, or no answer in time), in the library's words first. */
  readonly error?: string;
  /** It counts toward the quorum: `up` alone does not make it (see `reason`). */
  readonly voting: boolean;
  /** Why an `up` node does not count (restarted without its data, a permission missing…). */
  readonly reason?: string;
}

/** What a {@link RedlockHealthIndicator} check reports beside its `status`. */
export interface RedlockHealthDetails extends Record<string, unknown> {
  /** Nodes that must answer for locks to be taken and released: `floor(N / 2) + 1`. */
  readonly quorum: number;
  /** Nodes that answered in time. */
  readonly nodesUp: number;
  /** Nodes that answered and count toward the quorum: the check is `up` when this reaches it. */
  readonly nodesVoting: number;
  /** Every lock node, in the order of the module's `nodes`. */
  readonly nodes: readonly RedlockNodeHealthDetail[];
}

/**
 * The lock service for `@nestjs/terminus` (11 or later): `up` when a quorum of the lock nodes
 * answers a `PING` within `nodeTimeout` — locks can then be taken and released — `down`
 * otherwise (a `HealthController` then answers 503), with each node's status and latency.
 *
 * A quorum, not every node: Redlock is built to work with a minority of its nodes down, so one
 * node down is not a reason to take instances out of a load balancer. Nodes answering but not
 * counted toward the quorum yet (restarted recently: quarantine) are reported `up` but do not
 * make the check `up`.
 *
 * Provide it next to `TerminusModule` (which provides the `HealthIndicatorService` it uses);
 * `RedlockService` comes from `RedlockModule` (global by default).
 *
 * @example
 * import { RedlockHealthIndicator } from 'nestjs-redlock/terminus';
 *
 * @Module({ imports: [TerminusModule], controllers: [HealthController], providers: [RedlockHealthIndicator] })
 * export class HealthModule {}
 *
 * @Controller('health')
 * export class HealthController {
 *   constructor(private readonly health: HealthCheckService, private readonly redlock: RedlockHealthIndicator) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.redlock.check('redlock')]);
 *   }
 * }
 */
@Injectable()
export class RedlockHealthIndicator {
  constructor(
    private readonly redlock: RedlockService,
    private readonly indicators: HealthIndicatorService,
  ) {}

  /**
   * Pings every lock node once (each bounded by `nodeTimeout`, all at once: the check takes at
   * most about `nodeTimeout`) and reports the result under `key`.
   * @param key the key of this indicator in the health check's result
   * @default key 'redlock'
   */
  async check<const Key extends string = 'redlock'>(
    key: Key = 'redlock' as Key,
  ): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.indicators.check(key);
    let health: RedlockHealth;
    try {
      health = await this.redlock.health();
    } catch (error) {
      // A closed or draining lock manager: the instance cannot lock, it is down.
      return indicator.down({ message: error instanceof Error ? error.message : String(error) });
    }
    const details: RedlockHealthDetails = {
      quorum: health.quorum,
      nodesUp: health.nodes.filter((node) => node.up).length,
      nodesVoting: health.nodes.filter((node) => node.up && node.voting !== false).length,
      nodes: health.nodes.map(nodeDetail),
    };
    return health.up ? indicator.up(details) : indicator.down(details);
  }
}

function nodeDetail(node: NodeHealthState): RedlockNodeHealthDetail {
  if (!node.up) return { node: node.node, status: 'down', error: node.error, voting: false };
  // 0.1 ms: loopback and same-zone round trips are well under a millisecond.
  const latencyMs = Math.round((node.latencyMs ?? 0) * 10) / 10;
  // A core older than `voting` (another copy of the package) reports none: it counted.
  return node.voting === false
    ? { node: node.node, status: 'up', latencyMs, voting: false, reason: node.reason }
    : { node: node.node, status: 'up', latencyMs, voting: true };
}
