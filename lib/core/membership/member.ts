import type { ClockTimer } from '../clock';
import type { ServerInfo } from '../nodes/node';
import type { Admission } from '../quorum/quarantine';

/** What the membership needs to know of the lock manager's settings. */
export interface MembershipOptions {
  /** `false`: every node votes (no restart detection). */
  readonly quarantine: boolean;
  /** Let a node whose server refuses `INFO` vote (it cannot be checked for restarts). */
  readonly trustUnidentifiedNodes: boolean;
  readonly driftFactor: number;
  readonly nodeTimeout: number;
  readonly keyPrefix: string;
  /** The lock manager's default ttl: horizons are recorded for at least a few of these. */
  readonly ttl: number;
  /** The longest lease any client of the fleet holds: what a restarted node may have lost. */
  readonly maxTtl: number;
  /** Restore fence floors from the start (the lock manager fences by default). */
  readonly fencing: boolean;
  /** Names this fleet's fence records: the key prefix and the node list (fleetId()). */
  readonly fleet: string;
}

/** Transitions the lock manager reports (events). */
export interface MembershipListener {
  quarantined(node: string, remainingMs: number): void;
  rejoined(node: string): void;
}

/**
 * While a node waits on too few answers, or cannot be read, the fleet is looked at again this
 * often: an answer that comes later may shorten the wait (never lengthen it).
 */
export const RECHECK_MS = 1_000;
/** How long a standing read may take (off the lock path): at least this, or `nodeTimeout`. */
export const STANDING_TIMEOUT_MS = 1_000;

/** One node's standing as this lock manager sees it, for one identity of its server. */
export class Member {
  /** The server identity the standing is about; a new one (a reconnect) starts over. */
  info?: ServerInfo;
  /** Bumped whenever `info` changes: late results about an older identity are dropped. */
  epoch = 0;
  /**
   * `unknown`: no identity (INFO unread or refused); `pending`: identified, no survey answered
   * for it yet; `waiting`: may vote at `voteAt`; `voting`.
   */
  state: 'unknown' | 'pending' | 'waiting' | 'voting' = 'unknown';
  /** When it may vote (monotonic ms): the earliest any survey allowed. */
  voteAt = Infinity;
  /** Why it waits, as the survey that set `voteAt` said. */
  why?: Admission['why'];
  /** Whether its fence floor is complete for this fleet (architecture.md §5.6). */
  fence: 'unknown' | 'complete' | 'blocked' = 'unknown';
  /** Leases whose client-side end is before this (monotonic ms) are covered by a recorded horizon. */
  coveredUntil = -Infinity;
  covering?: Promise<void>;
  /** After a failed record: not asked again before this (monotonic ms). */
  coverFailedUntil = -Infinity;
  /** Consecutive failed records: the back-off grows with them. */
  coverFailures = 0;
  timer?: ClockTimer;
  identifying = false;
  /** The quarantine was said for this identity (one line per node per decision). */
  said = false;
  /** Since when (monotonic ms) surveys could not tell (too few answers) for this identity. */
  uninformedSince?: number;
  /** Since when (monotonic ms) its node is known down, if it is. */
  downSince?: number;
}
