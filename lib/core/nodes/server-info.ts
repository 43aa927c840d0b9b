import type { ServerInfo } from './node';

/**
 * Reads `run_id` and `uptime_in_seconds` from the text of `INFO server`; `undefined` when the
 * reply has no `run_id` (a proxy, a server that hides it). `config` is what the caller found
 * out about persistence and eviction (CONFIG GET); `readAt` when it was read (core clock).
 */
export function parseServerInfo(
  text: string,
  config: ServerConfig = { durable: false },
  readAt?: number,
): ServerInfo | undefined {
  const runId = /^run_id:(\S+)/m.exec(text)?.[1];
  if (runId === undefined) return undefined;
  const uptime = Number(/^uptime_in_seconds:(\d+)/m.exec(text)?.[1] ?? NaN);
  return {
    runId,
    uptimeSeconds: Number.isFinite(uptime) ? uptime : 0,
    durable: config.durable,
    evictionPolicy: config.evictionPolicy,
    readAt,
  };
}

/** What a server's configuration says about keeping keys (CONFIG GET), where it may be read. */
export interface ServerConfig {
  /** `appendonly yes` + `appendfsync always`. */
  readonly durable: boolean;
  /** `maxmemory-policy`, if known. */
  readonly evictionPolicy?: string;
}

/**
 * Reads a server's configuration: `CONFIG GET append*` and `CONFIG GET maxmemory-policy` (two
 * calls: Redis before 7 takes one pattern per call). `get` runs one CONFIG GET and resolves to
 * its flat name/value reply. A refusal (CONFIG not allowed) leaves the part unknown: not durable,
 * no policy.
 */
export async function readServerConfig(
  get: (pattern: string) => Promise<unknown>,
): Promise<ServerConfig> {
  const [append, policy] = await Promise.all([
    get('append*').catch(() => undefined),
    get('maxmemory-policy').catch(() => undefined),
  ]);
  const value = configMap(policy).get('maxmemory-policy');
  return {
    durable: fsyncsEveryWrite(append),
    evictionPolicy: typeof value === 'string' ? value : undefined,
  };
}

/**
 * The warning for a node whose eviction policy can remove lock keys, or `undefined`. Every lock
 * key has a TTL, so the `volatile-*` policies are exactly the ones that evict held locks, and the
 * `allkeys-*` ones evict them too: a second client then takes a lock that is still held.
 */
export function evictionWarning(node: string, policy: string | undefined): string | undefined {
  if (policy === undefined || policy === 'noeviction') return undefined;
  return (
    `Redis node ${node} runs maxmemory-policy ${policy}: under memory pressure it evicts lock keys ` +
    '(each has a TTL), and a second client can then take a lock that is still held. ' +
    'Run lock nodes with maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf)'
  );
}

function configMap(reply: unknown): Map<string, unknown> {
  const config = new Map<string, unknown>();
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) config.set(String(reply[i]), reply[i + 1]);
  } else if (reply instanceof Map) {
    for (const [key, value] of reply) config.set(String(key), value);
  } else if (typeof reply === 'object' && reply !== null) {
    for (const [key, value] of Object.entries(reply)) config.set(key, value);
  }
  return config;
}

/**
 * Pairs `[first, later]` of node indexes whose servers report the same `run_id`: one server
 * listed twice (under `127.0.0.1` and `localhost`, or a DNS alias).
 */
export function duplicateServers(
  nodes: readonly { readonly serverInfo?: ServerInfo }[],
): [number, number][] {
  const seen = new Map<string, number>();
  const pairs: [number, number][] = [];
  nodes.forEach((node, index) => {
    const runId = node.serverInfo?.runId;
    if (runId === undefined) return;
    const first = seen.get(runId);
    if (first === undefined) seen.set(runId, index);
    else pairs.push([first, index]);
  });
  return pairs;
}

/**
 * Whether a `CONFIG GET append*` reply (a flat name/value list) says the server fsyncs every
 * write before answering: `appendonly yes` and `appendfsync always`. Such a server keeps its
 * keys across a crash, so its restarts need no quarantine.
 */
export function fsyncsEveryWrite(reply: unknown): boolean {
  const config = configMap(reply);
  return config.get('appendonly') === 'yes' && config.get('appendfsync') === 'always';
}
