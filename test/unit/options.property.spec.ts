import fc from 'fast-check';
import { RedlockConfigError } from '../../lib';
import {
  REDLOCK_DEFAULTS,
  resolveCallSettings,
  resolveOptions,
  type LockOptions,
  type RedlockOptions,
} from '../../lib/core/options';

/**
 * Issue 9 item 4: option validation against an oracle written from the documented contract
 * (the JSDoc of RedlockOptions / LockOptions and README), not from the code. Every combination
 * the oracle calls invalid must be rejected with a RedlockConfigError naming one of the invalid
 * options; every valid one must be accepted with the values given (defaults elsewhere).
 */

type Check = (value: unknown, all: Record<string, unknown>) => boolean;

const isNum = (v: unknown): v is number => typeof v === 'number' && !Number.isNaN(v);
const positiveInteger = (v: unknown) => isNum(v) && Number.isInteger(v) && v > 0;
const finiteNonNegative = (v: unknown) => isNum(v) && Number.isFinite(v) && v >= 0;
const boolean = (v: unknown) => typeof v === 'boolean';

/** The contract of each module option, given the others (defaults filled in). */
const MODULE_CONTRACT: Record<string, Check> = {
  // At most maxTtl, the fleet's longest lease (only meaningful when maxTtl itself is valid).
  ttl: (v, all) =>
    positiveInteger(v) &&
    (!MODULE_CONTRACT.maxTtl(all.maxTtl, all) || (v as number) <= (all.maxTtl as number)),
  maxTtl: (v) => positiveInteger(v) && (v as number) <= 86_400_000,
  driftFactor: (v) => isNum(v) && v >= 0 && v < 1,
  // At most a quarter of the ttl (only meaningful when the ttl itself is valid).
  nodeTimeout: (v, all) =>
    isNum(v) &&
    Number.isFinite(v) &&
    v > 0 &&
    (!positiveInteger(all.ttl) || v <= (all.ttl as number) / 4),
  wait: (v) => isNum(v) && v >= 0,
  retryDelay: finiteNonNegative,
  retryJitter: finiteNonNegative,
  keyPrefix: (v) => typeof v === 'string',
  maxHold: (v) => isNum(v) && v > 0,
  maxResourceLength: positiveInteger,
  fencing: boolean,
  // Only on or off since issue 23 (`quarantine: <ms>` is gone: a restarted node waits maxTtl).
  quarantine: boolean,
  reentrant: boolean,
  notifications: boolean,
};

/** Values worth trying for any option: valid for some, invalid for others. */
const anyValue = fc.oneof(
  fc.constantFrom(
    0,
    -1,
    1,
    2,
    0.5,
    0.99,
    1.5,
    100,
    250,
    1_000,
    10_000,
    NaN,
    Infinity,
    -Infinity,
    '',
    '100',
    'redlock:',
    true,
    false,
    null,
    {},
    [],
  ),
  fc.integer({ min: -10, max: 20_000 }),
  fc.double({ min: -1, max: 2, noNaN: true }),
);

/** For each option: unset, or any value. */
const moduleOptions = fc.record(
  Object.fromEntries(
    Object.keys(MODULE_CONTRACT).map((k) => [k, fc.option(anyValue, { nil: undefined })]),
  ) as Record<string, fc.Arbitrary<unknown>>,
);

function invalidModuleOptions(options: Record<string, unknown>): string[] {
  const all: Record<string, unknown> = { ...REDLOCK_DEFAULTS };
  for (const [k, v] of Object.entries(options)) if (v !== undefined) all[k] = v;
  return Object.keys(MODULE_CONTRACT).filter((k) => {
    if (options[k] === undefined) {
      // A default is valid on its own; only nodeTimeout's (on ttl) and ttl's (on maxTtl) depend
      // on another option.
      return (k === 'nodeTimeout' || k === 'ttl') && !MODULE_CONTRACT[k](all[k], all);
    }
    return !MODULE_CONTRACT[k](options[k], all);
  });
}

/** A default nodeTimeout invalid only because of the ttl is reported on one of the two. */
const blamed = (invalid: string[]) =>
  invalid.includes('nodeTimeout') ? [...invalid, 'ttl'] : invalid;

describe('option validation (property tests against the documented contract)', () => {
  it('resolveOptions accepts every valid combination and rejects every invalid one, naming an invalid option', () => {
    fc.assert(
      fc.property(moduleOptions, (options) => {
        const invalid = invalidModuleOptions(options);
        let resolved: ReturnType<typeof resolveOptions> | undefined;
        let error: unknown;
        try {
          resolved = resolveOptions(options as RedlockOptions);
        } catch (e) {
          error = e;
        }
        if (invalid.length === 0) {
          if (resolved === undefined) return false;
          return Object.keys(MODULE_CONTRACT).every((k) =>
            Object.is(
              (resolved as unknown as Record<string, unknown>)[k],
              options[k] ?? (REDLOCK_DEFAULTS as unknown as Record<string, unknown>)[k],
            ),
          );
        }
        return error instanceof RedlockConfigError && blamed(invalid).includes(error.option);
      }),
      { numRuns: 5_000 },
    );
  });

  it('resolveOptions accepts combinations drawn from valid values only', () => {
    // The random search above mostly finds invalid combinations: make sure valid ones are
    // explored as thoroughly.
    const valid = fc
      .record({
        ttl: fc.integer({ min: 4, max: 60_000 }),
        driftFactor: fc.double({ min: 0, max: 0.999, noNaN: true }),
        wait: fc.oneof(fc.constant(Infinity), fc.double({ min: 0, max: 1e6, noNaN: true })),
        retryDelay: fc.double({ min: 0, max: 1e4, noNaN: true }),
        retryJitter: fc.double({ min: 0, max: 1e4, noNaN: true }),
        keyPrefix: fc.string({ maxLength: 10 }),
        maxHold: fc.oneof(fc.constant(Infinity), fc.double({ min: 0.001, max: 1e7, noNaN: true })),
        maxResourceLength: fc.integer({ min: 1, max: 1e6 }),
        fencing: fc.boolean(),
        quarantine: fc.boolean(),
        reentrant: fc.boolean(),
        notifications: fc.boolean(),
        maxTtl: fc.integer({ min: 4, max: 86_400_000 }),
        share: fc.double({ min: 0.0001, max: 0.25, noNaN: true }),
      })
      .map(({ share, ...rest }) => ({ ...rest, nodeTimeout: rest.ttl * share }));
    fc.assert(
      fc.property(valid, (options) => {
        // Each value is valid alone; together, a ttl above maxTtl (the fleet's longest lease)
        // is refused, naming the ttl.
        if (options.ttl > options.maxTtl) {
          try {
            resolveOptions(options);
            return false;
          } catch (error) {
            return error instanceof RedlockConfigError && error.option === 'ttl';
          }
        }
        const resolved = resolveOptions(options);
        return (
          resolved.ttl === options.ttl &&
          resolved.nodeTimeout === options.nodeTimeout &&
          resolved.maxTtl === options.maxTtl
        );
      }),
      { numRuns: 2_000 },
    );
  });

  it('resolveCallSettings: per-call options validated the same way, the ttl at least 4 × nodeTimeout', () => {
    const callContract: Record<string, Check> = {
      ttl: (v, all) => positiveInteger(v) && (all.nodeTimeout as number) <= (v as number) / 4,
      wait: MODULE_CONTRACT.wait,
      retryDelay: finiteNonNegative,
      retryJitter: finiteNonNegative,
      maxHold: MODULE_CONTRACT.maxHold,
      fencing: boolean,
      reentrant: boolean,
    };
    const callOptions = fc.record(
      Object.fromEntries(
        Object.keys(callContract).map((k) => [k, fc.option(anyValue, { nil: undefined })]),
      ) as Record<string, fc.Arbitrary<unknown>>,
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), callOptions, (nodeTimeout, options) => {
        const defaults = resolveOptions({ ttl: 4 * nodeTimeout, nodeTimeout });
        const invalid = Object.keys(callContract).filter(
          (k) => options[k] !== undefined && !callContract[k](options[k], defaults as never),
        );
        try {
          const settings = resolveCallSettings(defaults, options as LockOptions);
          if (invalid.length > 0) return false;
          return (
            settings.ttl === (options.ttl ?? defaults.ttl) &&
            settings.wait === (options.wait ?? defaults.wait) &&
            settings.fencing === (options.fencing ?? defaults.fencing)
          );
        } catch (error) {
          return (
            invalid.length > 0 &&
            error instanceof RedlockConfigError &&
            invalid.includes(error.option)
          );
        }
      }),
      { numRuns: 5_000 },
    );
  });
});
