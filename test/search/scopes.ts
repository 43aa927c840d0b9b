import type { Scope } from './restart-model';

/**
 * The bounded scopes the restart search explores (restart-model.ts describes the fleet). Each is
 * searched exhaustively: every interleaving of its actions within its budgets.
 */
const base: Omit<Scope, 'name' | 'managers'> = {
  restarts: 1,
  attempts: 2,
  extensions: 0,
  evictions: 0,
  longTtl: 'no',
  fresh: false,
  reach: 'quorum',
  horizonKey: 'fleet',
  partitions: false,
  keepData: false,
};

/** Small enough for CI: the real rule is checked clean in each (test/unit/restart-search.spec.ts). */
export const CI_SCOPES: readonly Scope[] = [
  // Fence floors: a restart of `a` losing its data, surveys a node does not answer.
  { ...base, name: 'fencing', managers: ['m1'], restartable: ['a'], partitions: true },
  // Eviction on the volatile-lru node, two ttls, an extension.
  { ...base, name: 'eviction', managers: ['m1', 'm2'], restarts: 0, evictions: 1, extensions: 1 },
  // A fresh fleet (every node just started, empty), managers starting at any step, partitions.
  {
    ...base,
    name: 'fresh',
    managers: ['m1', 'm2'],
    restarts: 0,
    attempts: 1,
    fresh: true,
    partitions: true,
  },
  // Another fleet sharing node c: a restart of a node only one fleet lists, keeping its data.
  // (With the earlier layout, one horizon hash per key prefix, this scope and 'fresh, shared'
  // find `other-fleet-wait`: restart-search.spec.ts checks that the revert is found.)
  {
    ...base,
    name: 'shared',
    managers: ['m1', 'g'],
    attempts: 1,
    keepData: true,
    restartable: ['a', 'd'],
  },
  // A fresh fleet sharing node c with another: usable at once?
  { ...base, name: 'fresh, shared', managers: ['m1', 'g'], restarts: 0, attempts: 1, fresh: true },
];

/** Where each mutant is looked for: the smallest scope whose search finds it. */
export const MUTANT_SCOPES: Readonly<Record<string, Scope>> = {
  M1: { ...base, name: 'M1: c shared, restarts', managers: ['m1', 'm2', 'g'], restartable: ['c'] },
  M2: { ...base, name: 'M2: two ttls, a restarts', managers: ['m1', 'm2'], restartable: ['a'] },
  M3: {
    ...base,
    name: 'M3: a (durable config) restarts',
    managers: ['m1', 'm2'],
    restartable: ['a'],
  },
  M4: CI_SCOPES[1],
  M5: CI_SCOPES[0],
  M6a: CI_SCOPES[0],
  M6b: {
    ...base,
    name: 'M6b: a restarts keeping its data',
    managers: ['m1'],
    attempts: 1,
    keepData: true,
    restartable: ['a'],
  },
  M6c: {
    ...base,
    name: 'M6c: m1 asks 5 s, a restarts',
    managers: ['m1', 'm2'],
    restartable: ['a'],
    longTtl: 'only',
  },
};

/**
 * Larger scopes (npm run search:restart, minutes each): the three lock managers of both fleets
 * with restarts of the shared node; two ttls with restarts of the durable-config node or the
 * shared one and partitions; and every mutant's scope with the real rule.
 */
export const LARGE_SCOPES: readonly Scope[] = [
  {
    ...base,
    name: 'large: m1, m2, g; c restarts keeping or losing its data',
    managers: ['m1', 'm2', 'g'],
    restartable: ['c'],
    keepData: true,
  },
  {
    ...base,
    name: 'large: m1, m2; a or c restarts keeping or losing its data; partitions',
    managers: ['m1', 'm2'],
    restartable: ['a', 'c'],
    keepData: true,
    partitions: true,
  },
  ...Object.values(MUTANT_SCOPES).filter((scope) => !CI_SCOPES.includes(scope)),
];
