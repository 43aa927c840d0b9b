import { assertLockTtl } from '../../lib/core/options';
import {
  admission,
  floorRestore,
  type Admission,
  type FloorRestore,
  type NodeFacts,
  type RestartRule,
} from '../../lib/core/quorum/quarantine';
import { evictionWarning } from '../../lib/core/nodes/server-info';

/**
 * The decisions the restart search (restart-model.ts) drives, injected so that a mutant
 * (mutants.ts) can replace one of them. `REAL_RULES` is the library's own code, called as is:
 * the model never restates the rule. The membership helpers that are not decisions (nodeFacts,
 * votes, coveredUntil, horizonWindow, fleetId) are imported by the model directly.
 */
export interface Rules {
  /** When a node may vote, from one survey (quarantine.ts `admission`). */
  admission(
    survey: readonly (ModelFacts | undefined)[],
    index: number,
    rule: RestartRule,
  ): Admission;
  /** Whether a node's fence floor is complete, restorable or blocked (quarantine.ts). */
  floorRestore(
    survey: readonly (ModelFacts | undefined)[],
    index: number,
    quorum: number,
  ): FloorRestore;
  /** The rule a lock manager applies: the fleet's shared bound, whatever its own ttl. */
  restartRule(shared: RestartRule, manager: { readonly ttl: number }): RestartRule;
  /** Throws when a lease of `ttl` ms is refused (options.ts `assertLockTtl`, with maxTtl). */
  assertLeaseTtl(ttl: number, maxTtl: number): void;
  /** The start-up warning for a node's eviction policy (server-info.ts). */
  evictionWarning(node: string, policy: string | undefined): string | undefined;
  /**
   * Mutant M1 only: a lock manager that admits a node writes a stamp (the node's run_id) into
   * it, and `admission` may read it. The library has no stamps: `false`.
   */
  readonly stamps: boolean;
}

/** What a survey reads of a node: the library's facts, plus the stamp only M1 ever writes. */
export type ModelFacts = NodeFacts & { readonly stamp?: string };

/** The node timeout the model's lock managers are configured with (ms). */
export const NODE_TIMEOUT_MS = 10;

export const REAL_RULES: Rules = {
  admission,
  floorRestore,
  restartRule: (shared) => shared,
  assertLeaseTtl: (ttl, maxTtl) => assertLockTtl(ttl, NODE_TIMEOUT_MS, 'ttl', maxTtl),
  evictionWarning,
  stamps: false,
};
