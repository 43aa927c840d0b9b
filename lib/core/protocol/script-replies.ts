import type {
  AcquireReply,
  HandOffReply,
  HandOffRequest,
  LeaveRequest,
  PlainWait,
  NodeStanding,
  QueueTicket,
  StandingKeys,
} from '../nodes/node';

/**
 * What the lock scripts (scripts.ts) answer, read into the node port's terms, and how Redis
 * words the errors about them: one reading for every adapter, so two clients can never disagree
 * on what a reply means.
 */

/** A granted acquire without fencing (shared: the hot path allocates nothing for it). */
export const ACQUIRED: AcquireReply = Object.freeze({ acquired: true });

/** ACQUIRE_SCRIPT's reply: `{1}` granted, or `{0, pttl}` of the blocking key (-1: no expiry). */
export function acquireReply(reply: unknown): AcquireReply {
  const [granted, pttl] = reply as [number, number?];
  return granted === 1 ? ACQUIRED : { acquired: false, pttl: pttl ?? -1 };
}

/** ACQUIRE_FENCED_SCRIPT's reply: `{1, fence}` granted, or `{0, pttl}` of the blocking key. */
export function fencedAcquireReply(reply: unknown): AcquireReply {
  const [granted, figure] = reply as [number, number | string];
  return granted === 1
    ? { acquired: true, fence: Number(figure) }
    : { acquired: false, pttl: Number(figure) };
}

/** Redis's answer to EVALSHA of a script it does not have cached. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Redis's answer when a lock key holds a value that is not a string. */
export function isWrongType(error: unknown): boolean {
  return error instanceof Error && error.message.includes('WRONGTYPE');
}

/** STANDING_SCRIPT's KEYS, in its order. */
export function standingKeys(keys: StandingKeys): string[] {
  return [keys.horizon, keys.born, keys.floor, keys.fenced];
}

/**
 * STANDING_SCRIPT's reply: `{run_id, uptime, marker or '', floor, fence record or '', then
 * run_id and ms left for each horizon}`.
 */
export function standingReply(reply: unknown): NodeStanding {
  const [runId, uptime, born, floor, fenced, ...filed] = reply as (string | number | null)[];
  const text = (value: string | number | null) =>
    value === '' || value === null || value === undefined ? undefined : String(value);
  const horizons: Record<string, number> = {};
  for (let i = 0; i + 1 < filed.length; i += 2) horizons[String(filed[i])] = Number(filed[i + 1]);
  return {
    runId: String(runId),
    uptimeSeconds: Number(uptime),
    born: text(born),
    horizons,
    floor: Number(floor),
    fenced: text(fenced),
  };
}

/** Redis's answer to a command the connection's ACL user may not run (`NOPERM`). */
export function isNoPermission(error: unknown): boolean {
  return error instanceof Error && /NOPERM/.test(error.message);
}

/**
 * How long a waiter has waited, as the fair scripts take it: ms to the µs, never negative. The
 * scripts order waiters by start of waiting on the server's clock (TIME, µs), not to the ms:
 * two waiters of different processes starting within the same ms were ordered by chance, and
 * those near-ties were nearly every order inversion at 300 arrivals/s (bench/fair-rates.mjs:
 * 53 of 69 overtakings came less than 0.5 ms after the request they overtook).
 */
export function ageArg(ms: number): number {
  return Math.max(0, Math.round(ms * 1000) / 1000);
}

/** ARGV[3..8] of ACQUIRE_QUEUED_SCRIPT for a ticket (after the owner value and ttl). */
export function queuedArgs(ticket: QueueTicket): (string | number)[] {
  return [
    ticket.group,
    ageArg(ticket.ageMs),
    Math.ceil(ticket.keepMs),
    ticket.queued ? '1' : '0',
    ticket.announce ?? '',
    startArg(ticket.startedOnServer),
  ];
}

/**
 * A start on the server's clock as the fair scripts take it (ms to the µs, fixed-point: no
 * exponent), '' for none.
 */
function startArg(ms: number | undefined): string {
  return ms === undefined ? '' : ms.toFixed(3);
}

/**
 * ACQUIRE_QUEUED_SCRIPT's reply: as the acquire script's, and when it queued the group, the
 * server's TIME ({0, pttl, seconds, µs}) as `serverTime` in ms.
 */
export function queuedReply(reply: unknown): AcquireReply {
  const [granted, pttl, seconds, micros] = reply as [number, number?, string?, string?];
  if (granted === 1) return ACQUIRED;
  if (seconds === undefined || micros === undefined) return { acquired: false, pttl: pttl ?? -1 };
  return {
    acquired: false,
    pttl: pttl ?? -1,
    serverTime: Number(seconds) * 1000 + Number(micros) / 1000,
  };
}

/**
 * ARGV of HAND_OFF_SCRIPT for the holder's owner value and a request: the next local waiter's
 * four only when there is one (an uncontended release sends 4 arguments, not 8).
 */
export function handOffArgs(value: string, request: HandOffRequest): (string | number)[] {
  const args: (string | number)[] = [
    value,
    request.group,
    Math.ceil(request.leaseMs),
    request.announce ?? '',
  ];
  const { next } = request;
  if (next !== undefined && namesNext(request)) {
    args.push(next.value, next.ttl, ageArg(next.ageMs), startArg(next.startedOnServer));
  }
  return args;
}

/** Whether a hand-off request names a next local waiter (HAND_OFF_SCRIPT ARGV[5-8]). */
export function namesNext(request: HandOffRequest): boolean {
  return request.next !== undefined && request.next.value !== '';
}

/** The ARGV a waiting acquisition outside the queues adds to the acquire scripts. */
export function plainWaitArgs(wait: PlainWait | undefined): (string | number)[] {
  return wait === undefined ? [] : [ageArg(wait.ageMs), Math.ceil(wait.keepMs)];
}

/** ARGV of LEAVE_QUEUE_SCRIPT passing a reservation on (after the group). */
export function leaveArgs(pass: LeaveRequest): (string | number)[] {
  return [Math.ceil(pass.leaseMs), pass.announce ?? ''];
}

/** HAND_OFF_SCRIPT's reply: 2 swapped, 1 reserved for a queued group, 3 released, 0 not ours. */
export function handOffReply(reply: unknown): HandOffReply {
  switch (Number(reply)) {
    case 2:
      return 'swapped';
    case 1:
      return 'reserved';
    case 3:
      return 'released';
    default:
      return 'notOurs';
  }
}

/** A lock key's lease as an acquire's "held" reply; -2: it expired in between, free by now. */
export function leaseReply(pttl: number): AcquireReply {
  return { acquired: false, pttl: pttl === -2 ? 0 : pttl };
}

/** A script's reply of 1 (done) or 0. */
export function isOne(reply: unknown): boolean {
  return Number(reply) === 1;
}

/** A script's reply as it came (the callers that read it themselves). */
export function passThrough(reply: unknown): unknown {
  return reply;
}
