import { RedlockConfigError } from '../errors';
import { duplicateServers, evictionWarning } from '../nodes/server-info';
import { loadOtelApi, RedlockTelemetry } from '../observability/telemetry';
import type { ManagerParts } from './parts';
import { raceAbort } from './race-abort';

/**
 * How long the first acquisition waits for connections still being opened: long enough for
 * a healthy node on any sane network, short enough that a black-holed node does not hold up
 * a process's first lock for a TCP timeout.
 */
export const CONNECT_WAIT_MS = 2_000;

/**
 * What a lock manager does once, as it starts: opening its connections and checking what they
 * lead to (`ready()`), and loading OpenTelemetry when it is installed. Both run in the
 * background from construction; the first acquisition waits for them (bounded), so that a lock
 * taken right after start-up neither fails on sockets still connecting nor goes untraced.
 */
export class Startup {
  /** Until the first `ready()` settles. */
  connecting?: Promise<void>;
  /** Until `@opentelemetry/api` is loaded (or known absent). */
  instrumenting?: Promise<void>;
  /** Eviction policies already warned about, by server run_id. */
  private readonly evictionSaid = new Set<string>();

  constructor(
    private readonly parts: ManagerParts,
    /** `false` to turn telemetry off; `{ recordResources }` to record resource names. */
    telemetry: boolean | { readonly recordResources?: boolean },
    /** Whether the lock manager closed meanwhile (no telemetry is started then). */
    closed: () => boolean,
  ) {
    this.connecting = this.ready().finally(() => {
      this.connecting = undefined;
    });
    // Keep the promise from being reported unhandled: the first acquisition (or `ready()`)
    // throws its error to someone who is listening.
    this.connecting.catch(() => undefined);
    if (telemetry === false) return;
    const { clock, nodes, quorum, held, observer } = parts;
    this.instrumenting = loadOtelApi()
      .then((api) => {
        if (api === undefined || closed()) return;
        observer.telemetry = new RedlockTelemetry(
          api,
          clock,
          telemetry !== true && telemetry.recordResources === true,
          nodes.length,
          quorum,
          () => held.size,
        );
      })
      .finally(() => {
        this.instrumenting = undefined;
      });
  }

  /**
   * Resolves once every node has connected (or failed to, or `CONNECT_WAIT_MS` passed) and
   * checks that no Redis server is listed twice under two names, that each node's standing is
   * decided, and that the user may run what the library needs (see `Redlock.ready`).
   * @throws RedlockConfigError naming the two entries that are one server
   */
  async ready(signal?: AbortSignal): Promise<void> {
    const { nodes, membership, access } = this.parts;
    await raceAbort(Promise.all(nodes.map((n) => n.whenReady(CONNECT_WAIT_MS))), signal);
    // A first decision on every node's standing (admitted, or quarantined after a restart), so
    // that the first lock is not refused only because the checks were still under way.
    await raceAbort(membership.settle(CONNECT_WAIT_MS), signal);
    this.warnEviction();
    const duplicates = duplicateServers(nodes);
    if (duplicates.length > 0) {
      const [first, second] = duplicates[0];
      throw new RedlockConfigError(
        `nodes[${second}]`,
        nodes[second].name,
        `must not be the same Redis server as nodes[${first}] (${nodes[first].name}): ` +
          'both report the same run_id, so one server would vote twice',
      );
    }
    // A user without a permission the library needs fails here, naming the ACL it lacks, rather
    // than every lock failing after its whole wait (issue 25).
    await raceAbort(access.verify(), signal);
  }

  /**
   * Warns once per node whose eviction policy can remove lock keys (architecture.md §5.7): a warning,
   * not a refusal, because many managed services set a `volatile-*` policy and some do not let
   * it be changed; eviction happens only under memory pressure, which the operator can size
   * away, and the warning names the fix.
   */
  private warnEviction(): void {
    for (const node of this.parts.nodes) {
      const info = node.serverInfo;
      if (info === undefined || this.evictionSaid.has(info.runId)) continue;
      const warning = evictionWarning(node.name, info.evictionPolicy);
      if (warning === undefined) continue;
      this.evictionSaid.add(info.runId);
      this.parts.observer.logger.warn(warning);
    }
  }
}
