import { afterIo, type Clock, type ClockTimer } from '../clock';
import { fanOut, type NodeWatch } from './fan-out';
import type { RedisNode } from './node';

/**
 * How often a suspected node is probed (ms). At most one probe is in flight per node, and each
 * is bounded by `nodeTimeout`, so a node that stays hung gets about one PING per
 * `nodeTimeout + PROBE_INTERVAL_MS`: nothing that piles up behind its stalled connection.
 */
export const PROBE_INTERVAL_MS = 250;

/** A node found late is reported (`hung`: a warning line and a `nodeSlow` event) at most this often. */
export const HUNG_REPORT_INTERVAL_MS = 10_000;

/** One node as the suspicion sees it. */
class Watched {
  /**
   * Monotonic time of the first request sent since the node last answered; `undefined` when
   * nothing was sent since. Not a count of requests in flight: a request an adapter never
   * settles (lost) would then keep a node owing forever, and an idle node would look hung. A
   * node answers a connection in order, so an answer also vouches for what was sent before it.
   */
  owingSince: number | undefined;
  suspected = false;
  probing = false;
  timer?: ClockTimer;
  /** When this node was last reported late (monotonic ms). */
  reportedAt = -Infinity;
}

/**
 * Which nodes get lock traffic (issue 18, architecture.md §5.1 "a hung node costs nothing"): a node that
 * stopped answering within `nodeTimeout` — a request of ours timed out on it, or it has owed a
 * reply for longer than that — is *suspected*. Rounds send it nothing (no acquire, no extend;
 * see {@link sendable}) and count it as a "no"; a PING probes it every
 * {@link PROBE_INTERVAL_MS} until it answers, and it rejoins.
 *
 * Why this is safe for the quorum: a node that is not asked never votes yes, so a suspected
 * node only ever makes a quorum harder to reach, never easier (with N = 5 and one node
 * suspected, 3 of the other 4 must agree: the same quorum, out of fewer). Mutual exclusion
 * rests on the yes votes alone.
 *
 * Why nothing is lost on the node: the probe's PING is queued on the node's connection behind
 * every request sent before it, and Redis answers a connection in order, so when the node is
 * found answering, everything sent to it earlier (an acquire that timed out, a release) has been
 * applied. A key of ours can exist on it only from an acquire sent before it was suspected; the
 * releases of such locks are still sent to it (see releaseRound), without being waited for.
 *
 * Nodes whose adapter cannot `ping()` are never suspected: nothing could tell when to let them
 * back in.
 */
export class Suspicion implements NodeWatch {
  private readonly watched = new Map<RedisNode, Watched>();
  private suspects = 0;
  private closed = false;
  /** Armed while some node owes a reply: finds one that owes it past `nodeTimeout`. */
  private watchdog?: ClockTimer;

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly clock: Clock,
    private readonly nodeTimeout: number,
    /**
     * Told of a node that did not answer within `nodeTimeout` on a live connection, at most every
     * {@link HUNG_REPORT_INTERVAL_MS} per node — whether or not it is then suspected (a node late
     * together with most others is not skipped, but it is still late).
     */
    private readonly reportLate?: (node: RedisNode) => void,
  ) {
    for (const node of nodes) {
      if (typeof node.ping === 'function') this.watched.set(node, new Watched());
    }
  }

  /**
   * Which nodes a round must not send to, by index; `undefined` (no array built) when every
   * node may be sent to — the hot path. Read once at the start of each round.
   */
  skipped(): readonly boolean[] | undefined {
    const now = this.clock.now();
    // A node that owes a reply for longer than nodeTimeout is hung, whether or not its adapter
    // times its commands out (a caller's client may not).
    for (const [node, w] of this.watched) {
      if (!w.suspected && w.owingSince !== undefined && now - w.owingSince > this.nodeTimeout) {
        this.late(node, w);
      }
    }
    if (this.suspects === 0) return undefined;
    return this.nodes.map((node) => this.watched.get(node)?.suspected === true);
  }

  /** Whether `node` is suspected now (its lock traffic is skipped or not waited for). */
  isSuspected(node: RedisNode): boolean {
    return this.suspects > 0 && this.watched.get(node)?.suspected === true;
  }

  sent(node: RedisNode): void {
    const w = this.watched.get(node);
    if (w !== undefined && w.owingSince === undefined) {
      w.owingSince = this.clock.now();
      this.armWatchdog();
    }
  }

  settled(node: RedisNode, timedOut: boolean): void {
    const w = this.watched.get(node);
    if (w === undefined) return;
    if (timedOut) this.late(node, w);
    // Any answer shows the node is working through what it was sent.
    else w.owingSince = undefined;
  }

  /** Stops every probe (the lock manager is closing). */
  close(): void {
    this.closed = true;
    this.clock.clearTimer(this.watchdog);
    for (const w of this.watched.values()) this.clock.clearTimer(w.timer);
  }

  /**
   * One timer for every node, not one per request: the clients need no command timeout of their
   * own (ioredis' cost a timer per command, most of a lock cycle's timers), yet a hung node is
   * found and reported within about `nodeTimeout` even when no round waits for it (a quorum
   * answered first) and no round follows. Re-armed only while some node still owes a reply.
   */
  private armWatchdog(): void {
    if (this.watchdog !== undefined || this.closed) return;
    const check = () => {
      this.watchdog = undefined;
      if (this.closed) return;
      const now = this.clock.now();
      let owing = false;
      for (const [node, w] of this.watched) {
        if (w.owingSince === undefined) continue;
        owing = true;
        if (now - w.owingSince > this.nodeTimeout) this.late(node, w);
      }
      if (owing) this.armWatchdog();
    };
    // Replies already in the sockets are read first (Clock.afterIo), as for a round's timeout: a
    // process busy past the timer would otherwise find every node late and skip nodes that
    // answered (with both cores loaded, a refusal then lacked the lease of the skipped nodes).
    this.watchdog = this.clock.setTimer(() => afterIo(this.clock, check), this.nodeTimeout + 1);
  }

  /** `node` did not answer within `nodeTimeout`: reported (rate-limited), and suspected. */
  private late(node: RedisNode, w: Watched): void {
    const now = this.clock.now();
    if (!this.closed && now - w.reportedAt >= HUNG_REPORT_INTERVAL_MS) {
      w.reportedAt = now;
      this.reportLate?.(node);
    }
    this.suspect(node, w);
  }

  private suspect(node: RedisNode, w: Watched): void {
    if (w.suspected || this.closed) return;
    // Only a node that lags behind its peers is hung: when most nodes are late together, this
    // process is overloaded (thousands of waiters, a busy machine) or the network is, and
    // skipping nodes would only turn a slow answer into "unavailable" (issue 19).
    if (!this.othersAnswering(node)) return;
    w.suspected = true;
    this.suspects++;
    this.scheduleProbe(node, w);
  }

  /** Whether a quorum of the other nodes is answering in time (not suspected, owing nothing overdue). */
  private othersAnswering(node: RedisNode): boolean {
    const now = this.clock.now();
    let answering = 0;
    for (const [other, o] of this.watched) {
      if (other === node || o.suspected) continue;
      if (o.owingSince === undefined || now - o.owingSince <= this.nodeTimeout) answering++;
    }
    return answering >= Math.floor(this.nodes.length / 2) + 1;
  }

  private scheduleProbe(node: RedisNode, w: Watched): void {
    if (this.closed || w.probing) return;
    w.timer = this.clock.setTimer(() => void this.probe(node, w), PROBE_INTERVAL_MS);
  }

  private async probe(node: RedisNode, w: Watched): Promise<void> {
    w.timer = undefined;
    if (this.closed) return;
    w.probing = true;
    const [reply] = await fanOut([node], (n) => n.ping!(), {
      clock: this.clock,
      timeoutMs: this.nodeTimeout,
    });
    w.probing = false;
    if (this.closed) return;
    if (reply.kind !== 'ok') return this.scheduleProbe(node, w);
    w.suspected = false;
    this.suspects--;
    w.owingSince = undefined;
  }
}
