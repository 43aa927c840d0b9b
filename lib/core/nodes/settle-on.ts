/** What {@link settleOn} needs of a client: Node-style `on` / `off` (ioredis, node-redis). */
export interface EventSource {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off?(event: string, listener: (...args: unknown[]) => void): unknown;
}

/**
 * For {@link ConnectionTransport.connect}: calls `settled(true)` on each of `ready`'s events and
 * `settled(false)` on each of `failed`'s, until the returned function removes the listeners. The
 * listeners are there only while `whenReady` waits: a lasting `error` listener on a caller's
 * client would change how their app sees its errors.
 */
export function settleOn(
  client: EventSource,
  ready: readonly string[],
  failed: readonly string[],
  settled: (ready: boolean) => void,
): () => void {
  const onReady = () => settled(true);
  const onFailed = () => settled(false);
  for (const event of ready) client.on(event, onReady);
  for (const event of failed) client.on(event, onFailed);
  return () => {
    for (const event of ready) client.off?.(event, onReady);
    for (const event of failed) client.off?.(event, onFailed);
  };
}
