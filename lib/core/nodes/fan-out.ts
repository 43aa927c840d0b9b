import { afterIo, type Clock } from '../clock';
import { NodeTimeoutError, type RedisNode } from './node';

/**
 * One node's reply in a round: its value, its error, no answer within the timeout
 * (`timeout`), no answer yet when the outcome was decided (or the round abandoned) without
 * it (`pending`), or not asked at all because it is suspected hung (`skipped`).
 */
export type NodeReply<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'error'; readonly error: unknown }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'pending' }
  | { readonly kind: 'skipped' };

const TIMED_OUT: NodeReply<never> = Object.freeze({ kind: 'timeout' });
const PENDING: NodeReply<never> = Object.freeze({ kind: 'pending' });
const SKIPPED: NodeReply<never> = Object.freeze({ kind: 'skipped' });

/** How one round is bounded. */
export interface FanOutLimits {
  readonly clock: Clock;
  /** No reply is waited for longer than this (ms). */
  readonly timeoutMs: number;
  /** Stops waiting at once when this aborts (the caller gave up): missing replies read `pending`. */
  readonly signal?: AbortSignal;
  /**
   * Nodes not to send to, by index (suspected hung): their reply reads `skipped` and is passed
   * to `decided` after every request has been sent, so a decision they force still leaves the
   * other nodes asked (and cleaned up by the caller) like any decision.
   */
  readonly skip?: readonly boolean[];
  /** Told of every request sent and how it settled, also after the round is decided. */
  readonly watch?: NodeWatch;
}

/**
 * Sends one request to every node at once and resolves as soon as `decided` says the outcome
 * is known, every node answered, `timeoutMs` passed, or `signal` aborted — never later.
 * Replies still missing at that point read as `timeout` or `pending`; their requests run on,
 * and what they did is the caller's to clean up.
 *
 * One timer per round, not per node: this is the hot path of every lock operation.
 *
 * @param decided called after each reply, in arrival order, with that reply and the node's
 *   index; returns true to stop waiting for the rest.
 */
export function fanOut<T>(
  nodes: readonly RedisNode[],
  send: (node: RedisNode, index: number) => Promise<T>,
  limits: FanOutLimits,
  decided?: (reply: NodeReply<T>, index: number) => boolean,
): Promise<NodeReply<T>[]> {
  return new Promise((resolve) => {
    const { clock, signal } = limits;
    const count = nodes.length;
    const replies = new Array<NodeReply<T>>(count);
    let settled = 0;
    let done = false;
    const finish = (missing: NodeReply<never>) => {
      if (done) return;
      done = true;
      clock.clearTimer(timer);
      signal?.removeEventListener('abort', onAbort);
      for (let i = 0; i < count; i++) if (replies[i] === undefined) replies[i] = missing;
      resolve(replies);
    };
    const onAbort = () => finish(PENDING);
    const settle = (index: number, reply: NodeReply<T>) => {
      if (done) return;
      replies[index] = reply;
      settled++;
      // Every reply is counted, the last one included, before deciding whether to stop.
      const enough = decided !== undefined && decided(reply, index);
      if (enough || settled === count) finish(PENDING);
    };
    const timedOut = () => finish(TIMED_OUT);
    // Replies already in the sockets are read before the timeout is believed (Clock.afterIo).
    const timer = clock.setTimer(() => afterIo(clock, timedOut), limits.timeoutMs);
    if (signal?.aborted) return finish(PENDING);
    signal?.addEventListener('abort', onAbort, { once: true });
    const { skip, watch } = limits;
    for (let i = 0; i < count; i++) {
      if (skip?.[i] === true) continue;
      const node = nodes[i];
      let request: Promise<T>;
      try {
        request = send(node, i);
      } catch (error) {
        request = Promise.reject(error);
      }
      if (watch === undefined) {
        request.then(
          (value) => settle(i, { kind: 'ok', value }),
          (error: unknown) =>
            settle(i, error instanceof NodeTimeoutError ? TIMED_OUT : { kind: 'error', error }),
        );
        continue;
      }
      watch.sent(node);
      request.then(
        (value) => {
          watch.settled(node, false);
          settle(i, { kind: 'ok', value });
        },
        (error: unknown) => {
          const timedOut = error instanceof NodeTimeoutError;
          watch.settled(node, timedOut);
          settle(i, timedOut ? TIMED_OUT : { kind: 'error', error });
        },
      );
    }
    if (skip !== undefined) for (let i = 0; i < count; i++) if (skip[i]) settle(i, SKIPPED);
  });
}

/** What a round tells about each request it sends (suspicion.ts watches hung nodes with it). */
export interface NodeWatch {
  /** A request was sent to `node`. */
  sent(node: RedisNode): void;
  /** `node` answered a request (a value or an error: it is alive), or the request timed out. */
  settled(node: RedisNode, timedOut: boolean): void;
}
