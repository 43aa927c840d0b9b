import { randomBytes } from 'node:crypto';

/*
 * What release announcements say, and the words a waiter and the notifier (notifier.ts) share:
 * release ids, the order in which announcements are heard, a fair-queue notice, and a waiter's
 * registration (architecture.md §5.8, §5.11).
 */

/** This process's prefix of release ids: random, so that two processes never share an id. */
const RELEASE_ID_PREFIX = randomBytes(6).toString('base64url');
let releaseSeq = 0;

/**
 * A new id for one release, announced by every node it reaches (architecture.md §5.8): a waiter counts
 * a release once however many nodes announce it. Not a secret (unlike an owner value).
 */
export function newReleaseId(): string {
  releaseSeq = (releaseSeq + 1) % Number.MAX_SAFE_INTEGER;
  return RELEASE_ID_PREFIX + releaseSeq.toString(36);
}

/**
 * Ends the announcement id of a failed attempt's cleanup (acquireRound): a release of nothing but
 * that attempt's own writes, which frees no lock anyone held. A waiter counts it only from a node
 * where it met that attempt's key (its BlockedNodes), never from one it did not hear from (its
 * `unheard`): there it may be the cleanup of an attempt that lost the race to this waiter's own,
 * and two waiters woken by each other's cleanups attempted at once, over and over
 * (simulation-attempt-rate, 5 of 30 seeds). Never in an owner value or a group id (base64url).
 */
export const CLEANUP_MARK = '~';

/** Whether a release of `released` frees everything a waiter for `keys` waits for. */
export function covers(released: ReadonlySet<string>, keys: ReadonlySet<string>): boolean {
  for (const key of keys) if (!released.has(key)) return false;
  return true;
}

/**
 * When a waiter began to listen to `node` for release `id` (its attempt's {@link BlockedNodes}
 * mark), or undefined if that release is of no use to it: a node where its attempt met another
 * owner's key, or, unless `id` is a cleanup's ({@link CLEANUP_MARK}), one it did not hear from.
 */
export function listenedSince(
  blocked: BlockedNodes,
  unheard: BlockedNodes | undefined,
  node: number,
  id: string,
): number | undefined {
  return blocked[node] ?? (id.endsWith(CLEANUP_MARK) ? undefined : unheard?.[node]);
}

/**
 * By node index: where a waiter's last attempt found one of its keys held by another owner (and
 * the node's vote counts), as the count of announcements this process had heard
 * ({@link announcementsHeard}) when that attempt was sent; undefined elsewhere. Only a release on
 * such a node, heard after the attempt was sent, can be of use to it (issue 24): every other node
 * it took itself (its own cleanup frees those, and is announced), could not vote, or did not
 * answer; and a release heard before the attempt was sent landed before the attempt read the
 * node — whatever it met there came after (in a race lost to another process, the winner's key).
 */
export type BlockedNodes = readonly (number | undefined)[];

/** How many nodes blocked the attempt ({@link BlockedNodes}' marked entries). */
export function held(blocked: BlockedNodes): number {
  let count = 0;
  for (const at of blocked) if (at !== undefined) count++;
  return count;
}

/** How many release announcements this process has heard, on every channel (a sequence). */
let heardSoFar = 0;

/** Counts one more announcement heard: its place in the order ({@link announcementsHeard}). */
export function heardOneMore(): number {
  return ++heardSoFar;
}

/**
 * The number of release announcements heard so far in this process: read when an attempt is
 * sent, it tells which announcements came before it (see {@link BlockedNodes}).
 */
export function announcementsHeard(): number {
  return heardSoFar;
}

/**
 * One node's message on a release channel, as a fair-queue waiter reads it: a plain release
 * (`released`, nobody queued on that node), a reservation for the queued group `group`
 * (`next`), or that group's claim of its reservation (`claimed`). `id` is the release's (or
 * claim's) id, the same on every node; `node` is the index of the node that sent it.
 */
export interface Notice {
  readonly kind: 'released' | 'next' | 'claimed';
  readonly id: string;
  readonly group?: string;
  readonly node?: number;
  /** Its place in the order of announcements heard ({@link announcementsHeard}). */
  readonly seq?: number;
}

/**
 * A naming of a waiter's own group heard while its attempt was out, as the release it is to that
 * waiter should the attempt fail: the node has since reserved the key for its group (fair-queue.ts).
 */
export function releaseOf(notice: Notice): Notice {
  return { kind: 'released', id: notice.id, group: undefined, node: notice.node, seq: notice.seq };
}

/**
 * Reads a message: `id`, or `id|n|group` / `id|c|group` (HAND_OFF / ACQUIRE_QUEUED scripts), heard
 * from `node` as announcement number `seq` (one literal, not a spread plus properties: see
 * eslint.config.mjs).
 */
export function readNotice(message: string, node?: number, seq?: number): Notice {
  const bar = message.indexOf('|');
  if (bar < 0) return { kind: 'released', id: message, group: undefined, node, seq };
  const kind = message[bar + 1] === 'c' ? 'claimed' : 'next';
  return { kind, id: message.slice(0, bar), group: message.slice(bar + 3), node, seq };
}

/**
 * A waiter's registration: `attempting()` before each attempt and `attempted()` after it,
 * `stop()` when it stops waiting.
 */
export interface WaiterHandle {
  /**
   * An attempt is about to go out: announcements heard until it reports are judged by its
   * result (a release it met as a free node was of no use to it; one it met as a held node was).
   */
  attempting(): void;
  /**
   * The attempt failed (`blocked`: where it met another owner's key; undefined: anywhere) and
   * the waiter may be woken again — only by a release on a node in `blocked`, or, not a
   * cleanup's ({@link CLEANUP_MARK}), in `unheard` (the nodes it did not hear from). (One that
   * succeeded reports by `stop(true)`.)
   */
  attempted(blocked?: BlockedNodes, unheard?: BlockedNodes): void;
  /**
   * Whether its latest wake-up came from an announcement heard while its attempt was out (a
   * release that may have landed before that attempt read the node): to be checked by reading.
   */
  doubtful(): boolean;
  /**
   * True when every node confirmed its subscription to every channel of this waiter and none
   * dropped since: no release applied after an attempt sent now can go unannounced, so the
   * waiter need not poll before the blocking lease ends.
   */
  listening(): boolean;
  /** The waiter no longer waits: it `acquired` the lock, or gave up (timed out, aborted). */
  stop(acquired: boolean): void;
}
