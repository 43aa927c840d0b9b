import { createHash } from 'node:crypto';

/**
 * The Lua scripts, one constant each. Everything variable reaches them through KEYS and ARGV
 * (never string-built), so a resource name can never inject code, and scripts are cached by
 * SHA on the server.
 */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  /** SHA1 of `source`, for EVALSHA. */
  readonly sha: string;
}

/** A script with its SHA, for EVALSHA (one constant each in the scripts files). */
export function script(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}
