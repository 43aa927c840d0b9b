import type { RedisNode } from './node';

/**
 * One node's reply in a round: its value, its error, no answer within the timeout
 * (`timeout`), or no answer yet when the outcome was decided without it (`pending`).
 */
export type NodeReply<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'error'; readonly error: unknown }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'pending' };

const TIMED_OUT: NodeReply<never> = Object.freeze({ kind: 'timeout' });
const PENDING: NodeReply<never> = Object.freeze({ kind: 'pending' });

/**
 * Sends one request to every node at once and resolves as soon as `decided` says the outcome
 * is known, every node answered, or `timeoutMs` passed — never later. Replies still missing
 * at that point read as `timeout` or `pending`; their requests run on, and what they did is the caller's
 * to clean up (a release sent afterwards on the same connection is ordered after them).
 *
 * One timer per round, not per node: this is the hot path of every lock operation.
 *
 * @param decided called after each reply, in arrival order, with that reply; returns true to
 *   stop waiting for the rest.
 */
export function fanOut<T>(
  nodes: readonly RedisNode[],
  send: (node: RedisNode) => Promise<T>,
  timeoutMs: number,
  decided?: (reply: NodeReply<T>) => boolean,
): Promise<NodeReply<T>[]> {
  return new Promise((resolve) => {
    const count = nodes.length;
    const replies = new Array<NodeReply<T>>(count);
    let settled = 0;
    let done = false;
    const finish = (missing: NodeReply<never>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      for (let i = 0; i < count; i++) if (replies[i] === undefined) replies[i] = missing;
      resolve(replies);
    };
    const settle = (index: number, reply: NodeReply<T>) => {
      if (done) return;
      replies[index] = reply;
      settled++;
      // Every reply is counted, the last one included, before deciding whether to stop.
      const enough = decided !== undefined && decided(reply);
      if (enough || settled === count) finish(PENDING);
    };
    const timer = setTimeout(finish, timeoutMs, TIMED_OUT);
    // The connections a round waits on keep the process alive while they are open; the timer
    // alone must not (a round left to time out on a dead node would delay a clean exit).
    timer.unref();
    for (let i = 0; i < count; i++) {
      let request: Promise<T>;
      try {
        request = send(nodes[i]);
      } catch (error) {
        request = Promise.reject(error);
      }
      request.then(
        (value) => settle(i, { kind: 'ok', value }),
        (error: unknown) => settle(i, { kind: 'error', error }),
      );
    }
  });
}
