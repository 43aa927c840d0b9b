import { finished, Readable } from 'node:stream';
import { StreamableFile, type ExecutionContext } from '@nestjs/common';
import { RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';

/**
 * The stream a handler's result will be read from after the handler returned — the body of a
 * `StreamableFile`, or a Node `Readable` returned as it is — or `undefined` for anything else.
 * Its reading is part of the handler's work: the lock is held until it ends.
 */
export function streamOf(value: unknown): Readable | undefined {
  if (value instanceof StreamableFile) return value.getStream();
  if (value instanceof Readable) return value;
  return undefined;
}

const respondsItselfCache = new WeakMap<object, boolean>();

/**
 * True for an HTTP handler that writes its response itself: it injects `@Res()` or `@Next()`
 * without `passthrough: true`, so Nest leaves the response to it and the body may still be
 * written (a `stream.pipe(res)`) after the handler returned. Read from the metadata Nest's
 * router reads (`isResponseHandled`), once per handler.
 */
export function respondsItself(context: ExecutionContext): boolean {
  const handler = context.getHandler();
  const cached = respondsItselfCache.get(handler);
  if (cached !== undefined) return cached;
  const owner = context.getClass();
  const name = handler.name;
  // On the class, by method name (inherited through the class chain, as Reflect reads it).
  const args: Record<string, unknown> = Reflect.getMetadata(ROUTE_ARGS_METADATA, owner, name) ?? {};
  const injectsResponse = Object.keys(args).some((key) => {
    const type = Number(key.split(':')[0]);
    return type === RouteParamtypes.RESPONSE || type === RouteParamtypes.NEXT;
  });
  const passthrough = Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, owner, name) === true;
  const result = injectsResponse && !passthrough;
  respondsItselfCache.set(handler, result);
  return result;
}

/** The Node response under an Express response or a Fastify reply. */
function rawResponse(context: ExecutionContext): NodeJS.WritableStream | undefined {
  const reply = context.switchToHttp().getResponse<{ raw?: unknown }>();
  const response = (reply?.raw ?? reply) as unknown;
  // Not `instanceof`: the response may come from another realm (a vm context, Jest).
  return typeof response === 'object' &&
    response !== null &&
    typeof (response as { on?: unknown }).on === 'function'
    ? (response as NodeJS.WritableStream)
    : undefined;
}

/** Resolves once `stream` is over (ended, finished, failed or closed); never rejects. */
function over(stream: NodeJS.ReadableStream | NodeJS.WritableStream): {
  done: Promise<void>;
  stop: () => void;
} {
  let stop: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    try {
      stop = finished(stream, () => resolve());
    } catch {
      // Not a stream finished() understands: nothing to wait for.
      resolve();
    }
  });
  return { done, stop };
}

/**
 * Waits until the response of an HTTP handler call no longer uses the handler's work, and
 * resolves then (never rejects): every stream in `streams` has ended, failed or closed, and,
 * when `waitForResponse`, the response has finished or its connection closed.
 *
 * A stream the response will no longer read (the response finished without it, or the client
 * went away) is destroyed before this resolves, so that it stops producing before the lock is
 * released. When `lost` aborts (the lock was lost), the streams are destroyed at once and the
 * response is cut off: a client gets a truncated body (its connection dropped), never a body
 * produced without the lock.
 */
export async function holdWhileSent(
  context: ExecutionContext,
  streams: readonly Readable[],
  waitForResponse: boolean,
  lost: AbortSignal,
): Promise<void> {
  const response = rawResponse(context);
  const responseOver = response === undefined ? undefined : over(response);
  const destroyAll = () => {
    for (const stream of streams) if (!stream.destroyed) stream.destroy();
  };
  const onLost = () => {
    destroyAll();
    // The response is cut off too: a body piped from a destroyed stream is never ended by
    // `pipe()`, so without this the client would wait for the rest of it forever (and the
    // server's close() would wait for that client). A dropped connection is the one way to
    // tell an HTTP client mid-body that what it got is incomplete.
    (response as { destroy?: () => void } | undefined)?.destroy?.();
  };
  if (lost.aborted) onLost();
  else lost.addEventListener('abort', onLost, { once: true });

  const waits = streams.map(async (stream) => {
    const streamOver = over(stream);
    await Promise.race([streamOver.done, responseOver?.done ?? streamOver.done]);
    streamOver.stop();
    // The response is over but the stream is not: nothing will read it any more.
    if (!stream.readableEnded && !stream.destroyed) stream.destroy();
  });
  if (waitForResponse && responseOver !== undefined) waits.push(responseOver.done);
  try {
    await Promise.all(waits);
  } finally {
    responseOver?.stop();
    lost.removeEventListener('abort', onLost);
  }
}
