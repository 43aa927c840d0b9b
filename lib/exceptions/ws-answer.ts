import type { ArgumentsHost } from '@nestjs/common';

/** What a WebSocket client object offers for an answer (socket.io; `ws` has no `emit`). */
interface WsClient {
  emit?: (event: string, payload: unknown) => unknown;
}

/**
 * Answers a WebSocket message with an error payload the way Nest's `WsException` does — the
 * `exception` event — and also through the message's ack callback when the client asked for
 * one (a socket.io `emitWithAck` would otherwise wait for an answer that never comes).
 *
 * Nest applies no global exception filter to gateways, so `LockedInterceptor` answers a
 * `@Locked` gateway handler's lock errors itself with this, and `LockedErrorFilter` (bound to a
 * gateway with `@UseFilters(new LockedErrorFilter())`) answers those of provider methods.
 */
export function answerWs(host: ArgumentsHost, payload: unknown): void {
  host.switchToWs().getClient<WsClient | undefined>()?.emit?.('exception', payload);
  // The handler's arguments are [client, data, ack?, pattern]: socket.io passes the client's ack
  // callback after the payload when the client asked for one.
  const ack = host
    .getArgs<unknown[]>()
    .slice(2)
    .find((arg) => typeof arg === 'function');
  if (typeof ack === 'function') (ack as (answer: unknown) => void)(payload);
}
