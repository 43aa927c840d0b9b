import { REDLOCK_DEFAULTS, RedlockConfigError } from './core';
import type { RedlockModuleOptions } from './redlock-module-options';

/** The module options without an entry in the core's defaults. */
const WITHOUT_DEFAULT = ['nodes', 'mapLockedError', 'awaitQuorum', 'clock', 'random'] as const;

/**
 * `RedlockModuleOptions` is derived from the core's options, so it grows when they do: this fails
 * to compile until an option that is neither in `REDLOCK_DEFAULTS` nor in the list above is
 * listed there — else a valid option would be refused at bootstrap as unknown.
 */
const _everyOptionKnown: [keyof RedlockModuleOptions] extends [
  keyof typeof REDLOCK_DEFAULTS | (typeof WITHOUT_DEFAULT)[number],
]
  ? true
  : never = true;

/**
 * Every option `RedlockModule` reads: the core's (those with a default, plus `clock` and
 * `random`), `nodes`, `mapLockedError` and `awaitQuorum`. Derived from the core's defaults, so an
 * option added there is known here.
 */
const KNOWN: ReadonlySet<string> = new Set([...WITHOUT_DEFAULT, ...Object.keys(REDLOCK_DEFAULTS)]);

/**
 * The extras of `forRoot` / `forRootAsync` (redlock.module-definition.ts): options of the module
 * itself, which the builder takes off before the options reach the lock manager.
 */
const EXTRAS: readonly string[] = ['isGlobal', 'lockErrorFilter'];

/**
 * The names an error lists as expected: every documented option, the extras included. `clock` is
 * accepted but not listed: it exists for tests that drive a virtual time, not for apps.
 */
const SHOWN: readonly string[] = [...[...KNOWN].filter((name) => name !== 'clock'), ...EXTRAS];

/**
 * Fails the bootstrap on an option `RedlockModule` does not know — a typo (`tll`) would otherwise
 * leave the default silently in force, as a `@Locked` option typo would (which fails too).
 * `logger` is refused with its own reason: the module logs through Nest's `Logger`.
 * @throws RedlockConfigError naming the option, its value and the closest known name
 */
export function assertKnownModuleOptions(options: object): void {
  for (const key of Object.keys(options)) {
    if (KNOWN.has(key)) continue;
    const value = (options as Record<string, unknown>)[key];
    if (key === 'logger') {
      throw new RedlockConfigError(
        key,
        value,
        "is not an option of RedlockModule: it logs through Nest's Logger (context 'Redlock'); use app.useLogger() or new Redlock(nodes, { logger }) outside Nest",
      );
    }
    if (EXTRAS.includes(key)) {
      // Only a forRootAsync factory can put it here: the builder takes it off forRoot's options.
      throw new RedlockConfigError(
        key,
        value,
        `is an option of RedlockModule.forRootAsync({ ${key}, useFactory… }) itself, not of the options its factory returns`,
      );
    }
    const near = closest(key);
    throw new RedlockConfigError(
      key,
      value,
      `is not an option of RedlockModule${near === undefined ? '' : ` (did you mean ${near}?)`}; expected one of ${SHOWN.join(', ')}`,
    );
  }
}

/** The known name within two edits of `key` (case-insensitive), if exactly one is nearest. */
function closest(key: string): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of SHOWN) {
    const d = distance(key.toLowerCase(), name.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [name, d];
  }
  return best;
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions: `tll`/`ttl`). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}
