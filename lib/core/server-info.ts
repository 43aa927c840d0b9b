import type { ServerInfo } from './node';

/**
 * Reads `run_id` and `uptime_in_seconds` from the text of `INFO server`; `undefined` when the
 * reply has no `run_id` (a proxy, a server that hides it). `durable` is what the caller found
 * out about persistence (`appendonly` + `appendfsync always`); `readAt` when it was read (core clock).
 */
export function parseServerInfo(
  text: string,
  durable = false,
  readAt?: number,
): ServerInfo | undefined {
  const runId = /^run_id:(\S+)/m.exec(text)?.[1];
  if (runId === undefined) return undefined;
  const uptime = Number(/^uptime_in_seconds:(\d+)/m.exec(text)?.[1] ?? NaN);
  return { runId, uptimeSeconds: Number.isFinite(uptime) ? uptime : 0, durable, readAt };
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
  if (!Array.isArray(reply)) return false;
  const config = new Map<string, unknown>();
  for (let i = 0; i + 1 < reply.length; i += 2) config.set(String(reply[i]), reply[i + 1]);
  return config.get('appendonly') === 'yes' && config.get('appendfsync') === 'always';
}
