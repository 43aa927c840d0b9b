import { admission, floorRestore } from '../../lib/core/quorum/quarantine';
import { evictionWarning } from '../../lib/core/nodes/server-info';
import { REAL_RULES, type ModelFacts, type Rules } from './rules';

/**
 * The fixes of issue 23 reverted, one at a time, as replacements of the decisions the search
 * injects (rules.ts). Each wraps the library's own function and changes only what the fix
 * changed. restart-search.spec.ts checks that the search finds every one of them.
 */
export interface Mutant {
  readonly id: string;
  /** What the mutant brings back. */
  readonly what: string;
  /** The property whose violation finds it. */
  readonly property: 'one-holder' | 'tokens' | 'bounded-wait' | 'protects-nothing';
  readonly rules: Rules;
}

/** The survey with every node's marker taken as proof when its configuration is durable. */
const configIsProof = (survey: readonly (ModelFacts | undefined)[]) =>
  survey.map((f) =>
    f === undefined || !f.durableConfig ? f : { ...f, born: `${f.runId}:earlier` },
  );

export const MUTANTS: readonly Mutant[] = [
  {
    id: 'M1',
    what: 'stamps: a marker written by any lock manager admitting a node in its current run admits it for everyone (another fleet included)',
    property: 'one-holder',
    rules: {
      ...REAL_RULES,
      stamps: true,
      admission: (survey, index, rule) =>
        survey[index]?.stamp === survey[index]?.runId
          ? { voteInMs: 0, why: 'settled' }
          : admission(survey, index, rule),
    },
  },
  {
    id: 'M2',
    what: "settled after the lock manager's own ttl instead of the shared maxTtl",
    property: 'one-holder',
    rules: {
      ...REAL_RULES,
      restartRule: (shared, manager) => ({ ...shared, maxTtl: manager.ttl }),
    },
  },
  {
    id: 'M3',
    what: 'durability read from the configuration alone (the marker ignored)',
    property: 'one-holder',
    rules: {
      ...REAL_RULES,
      admission: (survey, index, rule) => admission(configIsProof(survey), index, rule),
      floorRestore: (survey, index, quorum) => floorRestore(configIsProof(survey), index, quorum),
    },
  },
  {
    id: 'M4',
    what: 'no eviction warning for the volatile-* policies',
    property: 'one-holder',
    rules: {
      ...REAL_RULES,
      evictionWarning: (node, policy) =>
        policy?.startsWith('volatile-') ? undefined : evictionWarning(node, policy),
    },
  },
  {
    id: 'M5',
    what: 'fence floor restored from whichever nodes answered, however few',
    property: 'tokens',
    rules: {
      ...REAL_RULES,
      floorRestore: (survey, index, quorum) => {
        const plan = floorRestore(survey, index, quorum);
        if (plan.kind !== 'blocked') return plan;
        return { kind: 'restore', floor: Math.max(0, ...survey.map((f) => f?.floor ?? 0)) };
      },
    },
  },
  {
    id: 'M6a',
    what: 'no settled rule: a node waits for horizons, or forever when too few peers answer',
    property: 'bounded-wait',
    rules: {
      ...REAL_RULES,
      admission: (survey, index, rule) => admission(survey, index, { ...rule, maxTtl: Infinity }),
    },
  },
  {
    id: 'M6b',
    what: "every horizon counts, also those filed under nodes' current run_ids",
    property: 'protects-nothing',
    rules: {
      ...REAL_RULES,
      admission: (survey, index, rule) =>
        admission(
          survey.map(
            (f) =>
              f && {
                ...f,
                horizons: Object.fromEntries(
                  Object.entries(f.horizons).map(([id, left]) => [`${id}:any`, left]),
                ),
              },
          ),
          index,
          rule,
        ),
    },
  },
  {
    id: 'M6c',
    what: 'a ttl above maxTtl accepted',
    property: 'one-holder',
    rules: { ...REAL_RULES, assertLeaseTtl: () => undefined },
  },
];
