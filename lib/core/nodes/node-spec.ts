import { isIoredisClient } from './ioredis-client';
import { nodeName } from './ioredis-node';
import { isNodeRedisClient, nodeRedisName } from './node-redis-node';
import { isRedisNode } from './node';

/**
 * The `host:port` (or socket path) a node spec points at, without connecting, so that a node
 * listed twice is caught before any connection is opened; `undefined` for a spec that is none
 * of a URL, ioredis options, an ioredis client or a RedisNode.
 */
export function nodeSpecName(spec: unknown): string | undefined {
  if (typeof spec === 'string') {
    const url = parseRedisUrl(spec);
    return url ? `${url.hostname || '127.0.0.1'}:${url.port || '6379'}` : undefined;
  }
  if (isIoredisClient(spec)) return nodeName(spec);
  if (isNodeRedisClient(spec)) return nodeRedisName(spec);
  if (isRedisNode(spec)) return spec.name;
  if (typeof spec === 'object' && spec !== null && !Array.isArray(spec)) {
    const { host, port, path } = spec as { host?: unknown; port?: unknown; path?: unknown };
    if (typeof path === 'string') return path;
    if (host !== undefined && typeof host !== 'string') return undefined;
    if (port !== undefined && typeof port !== 'number') return undefined;
    return `${host ?? '127.0.0.1'}:${port ?? 6379}`;
  }
  return undefined;
}

/** A node spec as it may appear in an error message: a URL loses its credentials. */
export function describeNodeSpec(spec: unknown): unknown {
  if (typeof spec !== 'string') return spec;
  try {
    const url = new URL(spec);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return spec.includes('@') ? '(an unparseable URL)' : spec;
  }
}

function parseRedisUrl(spec: string): URL | undefined {
  try {
    const url = new URL(spec);
    return url.protocol === 'redis:' || url.protocol === 'rediss:' ? url : undefined;
  } catch {
    return undefined;
  }
}
