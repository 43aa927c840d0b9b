// Module customization hooks (registered by block-peers.mjs): ESM resolution (`import`,
// `import()`) of the optional peers fails with ERR_MODULE_NOT_FOUND, as when not installed.
import { createRequire } from 'node:module';

const blocked = createRequire(import.meta.url)('./blocked-peers.cjs');

/** @type {import('node:module').ResolveHook} */
export async function resolve(specifier, context, nextResolve) {
  if (blocked.some((name) => specifier === name || specifier.startsWith(`${name}/`))) {
    const error = new Error(`Cannot find package '${specifier}' (blocked: not installed)`);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return nextResolve(specifier, context);
}
