import type { Clock } from '../clock';
import { RedlockPermissionError, type MissingPermission } from '../errors';
import { fanOut } from './fan-out';
import type { RedlockLogger } from '../observability/logger';
import type { NodeAccess, RedisNode } from './node';
import { quorumOf } from '../quorum/quorum';
import { isNoPermission } from '../protocol/script-replies';

/**
 * Whether the Redis user of each node may run what the library needs (issue 25): scripts, the
 * commands they run, `INFO` (a node's identity, also read inside scripts), `PUBLISH`/`SUBSCRIBE`
 * (release notifications). A user without them booted without a word before: every lock then
 * failed as unavailable after the whole `wait`, and `health()` said `up: false` beside nodes
 * all `up: true`.
 *
 * **How it asks.** `redis.acl_check_cmd(command, args…)` from a script (Redis ≥ 7): the
 * connection's own user, keys and channels included, nothing run, nothing written. Not
 * `ACL DRYRUN`: it needs the `ACL` command (@admin, @dangerous), which an application's user
 * should not have, and names a user rather than being one. Not running the commands: a probe
 * `SET` writes, and a `SUBSCRIBE` turns the lock connection into a subscriber. Scripts themselves
 * are tried (the probe is one): a refused `EVAL` is what "no @scripting" looks like. On
 * Redis < 7 the script cannot ask, and only the scripts are checked.
 *
 * **What is required, what is optional** (the option in force decides):
 * - scripts and the commands they run (`GET SET DEL PTTL PEXPIRE TIME EXISTS`, `MGET ZADD ZRANGE
 *   ZREM ZSCORE` with `fairness: 'queue'`) on the lock keys: always required;
 * - `INFO`: required while restarts are watched (`quarantine`, the default) and unidentified
 *   nodes are not trusted: without it no node ever counts toward a quorum. Otherwise optional
 *   (a warning: a node listed twice, or restarted, cannot be recognised);
 * - `PUBLISH` and `SUBSCRIBE` on the lock channels: required with `notifications: true` (the
 *   default) — a waiter that subscribed but whose releases are not published sleeps out whole
 *   leases; with `notifications: false` a refused `PUBLISH` is a warning (other lock managers'
 *   waiters on the same nodes would not hear this one's releases);
 * - `CONFIG GET` (persistence settings): optional, not reported — refused means "not known to
 *   be durable", so a restart is quarantined, which is the safe reading.
 *
 * A required permission missing on enough nodes that no quorum is left fails `ready()` (the Nest
 * bootstrap) with a {@link RedlockPermissionError} naming each ACL category and the
 * `ACL SETUSER` that grants it; a node refused on fewer nodes fails `ready()` too — nodes are
 * meant to be configured alike — and acquisitions go on with the others meanwhile.
 */

/** What the probe asks about, per command: the arguments `acl_check_cmd` is given. */
const PROBED = [
  ['GET', 'key'],
  ['SET', 'key', 'x'],
  ['DEL', 'key'],
  ['PTTL', 'key'],
  ['PEXPIRE', 'key', '1'],
  ['TIME'],
  ['EVALSHA', 'x', '0'],
  ['SCRIPT', 'LOAD', 'x'],
  ['INFO', 'server'],
  ['PUBLISH', 'key', 'x'],
  ['SUBSCRIBE', 'key'],
  ['ZADD', 'key', '1', 'x'],
  ['ZRANGE', 'key', '0', '0'],
  ['ZREM', 'key', 'x'],
  ['ZSCORE', 'key', 'x'],
  ['MGET', 'key'],
  ['EXISTS', 'key'],
  ['HGET', 'key', 'x'],
  ['HSET', 'key', 'x', '1'],
  ['HDEL', 'key', 'x'],
  ['HGETALL', 'key'],
] as const;

/**
 * The probe: for each command of {@link PROBED} (`key` standing for KEYS[1], a key under the lock
 * manager's prefix, also used as a channel name as releases are announced on their key's name),
 * whether the connection's user may run it. Returns the refused names, or `'unknown'` where
 * `redis.acl_check_cmd` does not exist (Redis < 7).
 */
export const ACCESS_PROBE_SCRIPT = `
if not redis.acl_check_cmd then return 'unknown' end
local denied = {}
local probes = {${PROBED.map(
  (args) => `{${args.map((a) => (a === 'key' ? 'KEYS[1]' : `'${a}'`)).join(', ')}}`,
).join(', ')}}
for _, args in ipairs(probes) do
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(args))
  if not ok or not allowed then table.insert(denied, args[1]) end
end
return denied
`;

/**
 * Runs the probe through an adapter's `EVAL` and reads its answer: what every adapter's
 * `checkAccess` does. Rejects with anything but a refusal (a node that is down, a timeout).
 */
export async function probeAccess(
  evalScript: (source: string, keys: readonly string[]) => Promise<unknown>,
  key: string,
): Promise<NodeAccess> {
  let reply: unknown;
  try {
    reply = await evalScript(ACCESS_PROBE_SCRIPT, [key]);
  } catch (error) {
    if (!isNoPermission(error)) throw error;
    // "…no permissions to access one of the keys used as arguments": the script may run, but
    // not on the lock keys.
    if (/key/i.test(String((error as Error).message))) return { scripting: true, keysDenied: true };
    return { scripting: false };
  }
  if (!Array.isArray(reply)) return { scripting: true };
  return { scripting: true, denied: reply.map((name) => String(name).toUpperCase()) };
}

/** What {@link AccessCheck} needs of the lock manager's settings. */
export interface AccessOptions {
  readonly keyPrefix: string;
  readonly nodeTimeout: number;
  readonly notifications: boolean;
  readonly fairness: 'off' | 'queue';
  readonly quarantine: boolean;
  readonly trustUnidentifiedNodes: boolean;
}

/** How long a node's result stands before `ready()` or a refused acquisition asks again. */
const RECHECK_AFTER_MS = 5_000;
/** How long a probe may take (off the lock path). */
const PROBE_TIMEOUT_MS = 1_000;

/** One node's standing result. */
interface Checked {
  readonly at: number;
  /** The required permissions it lacks (empty: none). */
  readonly missing: readonly MissingPermission[];
}

/**
 * The permission check of one lock manager (see the file comment): probes each node when
 * `ready()` asks and again whenever the node reconnects, warns once per node about optional
 * permissions, and tells the acquisition path whether the refusals leave a quorum.
 */
export class AccessCheck {
  private readonly results: (Checked | undefined)[];
  private readonly warned = new Set<string>();
  private checking?: Promise<void>;

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly clock: Clock,
    private readonly options: AccessOptions,
    private readonly logger: RedlockLogger,
  ) {
    this.results = nodes.map(() => undefined);
    nodes.forEach((node, index) =>
      node.onHealth?.((state) => {
        // A reconnection may be to a server whose ACL changed (or another server).
        if (state === 'up') void this.probe([index]);
      }),
    );
  }

  /** The key (and channel) the probe names: one of this lock manager's, never a lock's. */
  get probeKey(): string {
    // NUL cannot appear in a resource name (normalizeResources): no lock's key.
    return `${this.options.keyPrefix}\u0000redlock:probe`;
  }

  /**
   * Probes the nodes not checked lately and throws when one lacks a required permission.
   * @throws RedlockPermissionError naming each missing permission and how to grant it
   */
  async verify(): Promise<void> {
    const now = this.clock.now();
    const stale = this.results
      .map((result, index) =>
        result === undefined || now - result.at > RECHECK_AFTER_MS ? index : -1,
      )
      .filter((index) => index >= 0);
    if (stale.length > 0) await this.probe(stale);
    const error = this.error(0);
    if (error !== undefined) throw error;
  }

  /**
   * The error an acquisition fails with at once while the nodes refused a required permission
   * leave no quorum (it would otherwise wait out `wait` for votes that cannot count); looks
   * again in the background when the results are old (an operator may have granted it since).
   */
  refusal(): RedlockPermissionError | undefined {
    const denied = this.results.filter(
      (result) => result !== undefined && result.missing.length > 0,
    );
    if (denied.length === 0) return undefined;
    const stale = this.results.some(
      (result) => result !== undefined && this.clock.now() - result.at > RECHECK_AFTER_MS,
    );
    if (stale && this.checking === undefined) void this.probe(this.nodes.map((_, i) => i));
    return this.error(this.nodes.length - quorumOf(this.nodes.length) + 1);
  }

  /** What the node at `index` was last found to lack (empty: nothing, or not checked). */
  missingOn(index: number): readonly MissingPermission[] {
    return this.results[index]?.missing ?? [];
  }

  /** The error when at least `atLeast` nodes (and at least one) lack a required permission. */
  private error(atLeast: number): RedlockPermissionError | undefined {
    const denied = this.results
      .map((result, index) => ({ result, node: this.nodes[index] }))
      .filter(({ result }) => result !== undefined && result.missing.length > 0);
    if (denied.length === 0 || denied.length < atLeast) return undefined;
    const missing = new Map<string, MissingPermission>();
    for (const { result } of denied) {
      for (const permission of result!.missing) missing.set(permission.what, permission);
    }
    return new RedlockPermissionError(
      denied.map(({ node }) => node.name),
      this.userOf(denied[0].node),
      [...missing.values()],
    );
  }

  private probe(indexes: readonly number[]): Promise<void> {
    const run = async () => {
      const nodes = indexes.map((i) => this.nodes[i]);
      const replies = await fanOut(
        nodes,
        (node) => {
          if (node.checkAccess === undefined) throw new Error('cannot probe');
          return node.checkAccess(this.probeKey);
        },
        { clock: this.clock, timeoutMs: Math.max(this.options.nodeTimeout, PROBE_TIMEOUT_MS) },
      );
      replies.forEach((reply, j) => {
        // Not answered (down, no adapter support): unknown, asked again later.
        if (reply.kind !== 'ok') return;
        this.results[indexes[j]] = {
          at: this.clock.now(),
          missing: this.judge(nodes[j], reply.value),
        };
      });
    };
    const previous = this.checking ?? Promise.resolve();
    const current = previous.then(run, run).finally(() => {
      if (this.checking === current) this.checking = undefined;
    });
    this.checking = current;
    return current;
  }

  /** The required permissions a node's probe lacks; warns (once per node) about optional ones. */
  private judge(node: RedisNode, access: NodeAccess): MissingPermission[] {
    const user = this.userOf(node);
    const keys = `${this.options.keyPrefix}*`;
    const missing: MissingPermission[] = [];
    if (!access.scripting) {
      missing.push({
        what: 'scripts (EVAL, EVALSHA, SCRIPT LOAD)',
        category: '@scripting',
        grant: `ACL SETUSER ${user} +@scripting`,
      });
      return missing;
    }
    if (access.keysDenied) {
      missing.push({
        what: `the lock keys (${keys})`,
        category: `key pattern ~${keys}`,
        grant: `ACL SETUSER ${user} ~${keys}`,
      });
      return missing;
    }
    const denied = new Set(access.denied ?? []);
    // EXISTS: a waiter that meets a held key reads whether it has a fair queue (issue 24 item 1).
    const lockCommands = [
      'GET',
      'SET',
      'DEL',
      'PTTL',
      'PEXPIRE',
      'TIME',
      'EXISTS',
      'EVALSHA',
      'SCRIPT',
    ];
    // The hand-off reads the key and its marks in one MGET (issue 24 item 3).
    if (this.options.fairness === 'queue') {
      lockCommands.push('MGET', 'ZADD', 'ZRANGE', 'ZREM', 'ZSCORE');
    }
    // Restart detection's scripts keep a node's lease horizons in a hash and its marker.
    if (this.options.quarantine !== false) {
      lockCommands.push('HGET', 'HSET', 'HDEL', 'HGETALL');
    }
    const refused = lockCommands.filter((command) => denied.has(command));
    if (refused.length > 0) {
      missing.push({
        what: `${refused.join(', ')} on the lock keys (${keys})`,
        category: '@read, @write, @scripting and the key pattern',
        grant: `ACL SETUSER ${user} ${refused.map((c) => `+${c.toLowerCase()}`).join(' ')} ~${keys}`,
      });
    }
    if (denied.has('INFO')) {
      const infoNeeded = this.options.quarantine !== false && !this.options.trustUnidentifiedNodes;
      if (infoNeeded) {
        missing.push({
          what: 'INFO, which tells a restarted node and one listed twice (without it no node counts toward a quorum)',
          category: '@dangerous',
          grant: `ACL SETUSER ${user} +info (or trustUnidentifiedNodes: true, only for nodes that keep their data)`,
        });
      } else {
        this.warnOnce(
          node,
          'INFO',
          `Redis node ${node.name}: user "${user}" may not run INFO (ACL category @dangerous; ACL SETUSER ${user} +info): a restart of it, or the same server listed twice, cannot be recognised`,
        );
      }
    }
    const pubsub = ['PUBLISH', 'SUBSCRIBE'].filter((command) => denied.has(command));
    if (pubsub.length > 0) {
      const grant = `ACL SETUSER ${user} +@pubsub &${keys}`;
      if (this.options.notifications) {
        missing.push({
          what: `${pubsub.join(' and ')} on the lock channels (${keys}), for release notifications`,
          category: '@pubsub and the channel pattern',
          grant: `${grant} (or notifications: false, and waiters poll)`,
        });
      } else if (pubsub.includes('PUBLISH')) {
        this.warnOnce(
          node,
          'PUBLISH',
          `Redis node ${node.name}: user "${user}" may not PUBLISH on the lock channels (ACL category @pubsub; ${grant}): waiters of other lock managers that listen on this node are not woken by this one's releases`,
        );
      }
    }
    return missing;
  }

  private warnOnce(node: RedisNode, what: string, message: string): void {
    const key = `${node.name} ${what}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn(message);
  }

  private userOf(node: RedisNode): string {
    return node.aclUser ?? 'default';
  }
}
