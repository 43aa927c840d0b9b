import type { ExecutionContext } from '@nestjs/common';
import type { Subscriber } from 'rxjs';
import { LockedCallException } from '../exceptions/locked-call.exception';
import type { LockedErrorStage } from '../exceptions/locked-error-mapper';
import { answerWs } from '../exceptions/ws-answer';

/** Maps a lock error of one call (see `LockedInterceptor`). */
export type LockedCallErrorMapper = (
  error: unknown,
  stage: LockedErrorStage,
  resources: readonly string[] | undefined,
) => unknown;

/**
 * The error a `@Locked` handler call fails with: what the call's mapper makes of `error` (a
 * mapper that throws fails the call with what it threw).
 */
export function mapCallError(
  mapError: LockedCallErrorMapper,
  error: unknown,
  stage: LockedErrorStage,
  resources: readonly string[] | undefined,
): unknown {
  try {
    return mapError(error, stage, resources);
  } catch (thrown) {
    return thrown;
  }
}

/**
 * Fails a handler call. A lock error of a gateway handler is answered here (the `exception`
 * event and the ack): Nest applies no global exception filter to gateways, and its own would
 * send "Internal server error" for anything but its `WsException`.
 */
export function failCall(
  context: ExecutionContext,
  subscriber: Subscriber<unknown>,
  error: unknown,
): void {
  if (context.getType() === 'ws' && error instanceof LockedCallException) {
    answerWs(context, error.payload);
    subscriber.complete();
    return;
  }
  subscriber.error(error);
}
