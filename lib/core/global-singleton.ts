/**
 * One instance per process of a piece of module-level state, however many copies of this package
 * are loaded. The package ships an ESM and a CommonJS build; an app that imports one while a
 * dependency requires the other (or a monorepo with two installs) loads two copies, and module
 * state kept in a plain `const` would split in two: a `@CurrentLock()` from one copy would not
 * see the lock taken by a `@Locked` wrapper of the other. Keeping the state on `globalThis` under
 * a registered symbol (`Symbol.for`, the same in every copy and realm of the process) makes all
 * copies share it.
 *
 * The name carries a shape version: a copy whose state has another shape must use another name.
 *
 * @example
 * const scope = globalSingleton('lockedScope@1', () => new AsyncLocalStorage<LockedScope>());
 */
export function globalSingleton<T>(name: string, create: () => T): T {
  const key = Symbol.for(`nestjs-redlock:${name}`);
  const store = globalThis as unknown as Record<symbol, unknown>;
  if (!(key in store)) {
    // Not enumerable, not writable: invisible to code listing globals, and no copy can replace
    // what another already shares.
    Object.defineProperty(store, key, { value: create(), enumerable: false, writable: false });
  }
  return store[key] as T;
}
