import type { BlockedNodes, ReleaseNotifier, WaiterHandle } from './notifier';
import type { CallSettings } from '../options';
import type { AttemptFailure } from './rounds';
import { Alarm } from './sleep';

/*
 * How an acquisition waits between attempts (architecture.md §5.2): the strategies the attempt loop
 * (acquisition.ts) and the fair queue pass to it, and the pure delay between attempts.
 */

/**
 * How many polls per second all the waiters of one lock manager that wait for release
 * notifications but are not (yet) sure to hear them make together, at most (issue 19). One such
 * waiter polls every `retryDelay`; thousands share this rate instead of each polling at it: they
 * are about to listen (their subscriptions are being confirmed), and a release they miss meanwhile
 * costs them at most the blocking lease's end, never more (architecture.md §5.8). Once every node confirmed
 * a waiter's subscriptions it is rung at once (one attempt closes the gap), so this is a fallback
 * for confirmations that do not come (a subscriber connection down).
 */
export const SHARED_POLLS_PER_SECOND = 100;

/**
 * How an acquisition waits between attempts (architecture.md §5.2). Side by side: {@link pollWaiting}
 * (notifications off: every retry delay), {@link notifyWaiting} (release notifications, §5.8)
 * and the queue (fair hand-off, §5.11: `FairQueue` in fair-queue.ts passes its line's strategy,
 * which wakes the head only when its group's turn is announced).
 */
/** What a waiting strategy learns of a failed attempt besides where it was blocked. */
export type AttemptReport = Pick<AttemptFailure, 'retryAfterMs' | 'outcomes' | 'sentAt'>;

export interface WaitingStrategy {
  /** Rung to end the current sleep early (a release, a dropped subscription, a drain). */
  readonly alarm: Alarm;
  /**
   * Read just before a round is sent: true when a release applied after the round is sure to be
   * announced to this waiter, so it need not poll before the blocking lease could have ended.
   */
  listening(): boolean;
  /** Whether its polls share the lock manager's poll rate ({@link SHARED_POLLS_PER_SECOND}). */
  readonly sharesPollRate: boolean;
  /** Before every attempt: announcements until it reports are judged by its result. */
  attempting(): void;
  /**
   * After every failed attempt; `blocked`: where it met another owner's key (see
   * {@link blockedBy}). From then on only a release on one of those nodes may end its sleep.
   * `failure`: the attempt's (when the lock is known to become obtainable; the nodes it did not
   * hear from).
   */
  attempted(blocked?: BlockedNodes, failure?: AttemptReport): void;
  /**
   * Whether the wake-up that ended its sleep is in doubt (notifier.ts `doubtful`): its next
   * try reads whether the key is held before it writes, where it can.
   */
  doubtful(): boolean;
  /** An attempt failed and the waiter will sleep: from now on it waits for releases, if it can. */
  willSleep(): void;
  /** The acquisition is over: it `acquired` the lock, or gave up. */
  stop(acquired: boolean): void;
}

/** Waits by polling every retry delay: no notifications. */
export function pollWaiting(): WaitingStrategy {
  return {
    alarm: new Alarm(),
    listening: () => false,
    sharesPollRate: false,
    attempting: () => undefined,
    attempted: () => undefined,
    doubtful: () => false,
    willSleep: () => undefined,
    stop: () => undefined,
  };
}

/**
 * Waits for a release notification (architecture.md §5.8). Registered before the first attempt when that
 * costs no subscription (others of this lock manager listen on the keys already) or when the
 * attempt has to queue anyway (the lock manager is busy: the subscription is then confirmed,
 * batched with the others', while the attempt waits its turn, and its first failure can already
 * sleep until a release); otherwise on the first sleep.
 */
export function notifyWaiting(
  notifier: ReleaseNotifier,
  keys: readonly string[],
  early: boolean,
): WaitingStrategy {
  const alarm = new Alarm();
  // Once it is sure to hear every release, a waiter polling at the shared rate tries once more
  // at once (a release before the confirmation went unheard), then sleeps until one.
  const listens = () => alarm.ring?.();
  let handle: WaiterHandle | undefined =
    early || notifier.watching(keys) ? notifier.watch(keys, alarm.sound, listens) : undefined;
  // Where its last attempt was blocked, for a registration after it (the first sleep).
  let blocked: BlockedNodes | undefined;
  let unheard: BlockedNodes | undefined;
  return {
    alarm,
    listening: () => handle?.listening() ?? false,
    // A waiter that will be told when it listens: its polls until then are a fallback, shared.
    sharesPollRate: notifier.confirmable,
    attempting: () => handle?.attempting(),
    attempted: (result, failure) => {
      blocked = result;
      unheard = failure === undefined ? undefined : unheardBy(failure);
      handle?.attempted(result, unheard);
    },
    doubtful: () => handle?.doubtful() ?? false,
    willSleep: () => {
      handle ??= notifier.watch(keys, alarm.sound, listens, undefined, blocked, unheard);
    },
    stop: (acquired) => handle?.stop(acquired),
  };
}

/**
 * The delay before the next attempt (architecture.md §5.2), pure. A waiter sure to hear the release
 * (`listening`) sleeps until enough blocking leases could have ended (a holder that died without
 * releasing); any other never sleeps past the earliest known expiry of a blocking key, and polls
 * every `retryDelay` — or, sharing a poll rate with `pollers` others, less often. The jitter is
 * added last, so that waiters on one lease do not all retry in the same millisecond when it ends.
 */
export function retryDelay(
  failure: Pick<AttemptFailure, 'earliestExpiry' | 'retryAfterMs'>,
  settings: Pick<CallSettings, 'retryDelay' | 'retryJitter'>,
  listening: boolean,
  pollers: number,
  random: number,
): number {
  const jitter = random * settings.retryJitter;
  if (listening && failure.retryAfterMs !== undefined) return failure.retryAfterMs + jitter;
  const expiry = failure.earliestExpiry ?? Infinity;
  let base = Math.min(settings.retryDelay, expiry);
  if (pollers > 0)
    base = Math.max(base, Math.min((pollers * 1000) / SHARED_POLLS_PER_SECOND, expiry));
  return base + jitter;
}

/**
 * Where a failed attempt met another owner's key, by node (notifier.ts BlockedNodes): the nodes
 * whose vote counts and that answered "held" (a probe's reads of a held key count as such),
 * each marked with when the attempt was sent. Its cleanup went only to the others (a "held"
 * node wrote nothing), so no release announced by these can be its own.
 */
export function blockedBy(failure: Pick<AttemptFailure, 'outcomes' | 'sentAt'>): BlockedNodes {
  const sentAt = failure.sentAt ?? 0;
  return failure.outcomes.map((o) => (o.outcome === 'held' ? sentAt : undefined));
}

/**
 * The nodes a failed attempt did not hear from — not waited for once its round was decided, or
 * timed out — marked like {@link blockedBy}'s. A release there may free what it needs: a round
 * decided before a held node answered left its waiters deaf to that node's release, and the fair
 * search (test/search) saw a key idle until a lost release's lease ended (about 950 ms) beside a
 * free quorum. Only a lock's release counts there, not a failed attempt's cleanup
 * (release-notices.ts CLEANUP_MARK).
 */
export function unheardBy(failure: Pick<AttemptFailure, 'outcomes' | 'sentAt'>): BlockedNodes {
  const sentAt = failure.sentAt ?? 0;
  return failure.outcomes.map(({ outcome }) =>
    outcome === 'pending' || outcome === 'timeout' ? sentAt : undefined,
  );
}
