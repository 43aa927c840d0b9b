import { IntrinsicException, type ExecutionContext } from '@nestjs/common';

/**
 * Why a `@Locked` handler's wait for its lock stopped: the client that asked went away (the
 * HTTP connection closed, the WebSocket disconnected). Nobody is left to answer, so the handler
 * does not run. An `IntrinsicException`: Nest's default filters do not log it.
 */
export class ClientGoneError extends IntrinsicException {
  constructor(readonly where: string) {
    super(`${where}: the client went away while the call waited for its lock; not run`);
    this.name = 'ClientGoneError';
  }
}

/** What can tell us that a connection is gone: a socket, a response, a WebSocket client. */
interface CloseSource {
  destroyed?: boolean;
  once(event: string, listener: () => void): unknown;
  removeListener(event: string, listener: () => void): unknown;
}

const isCloseSource = (value: unknown): value is CloseSource =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as CloseSource).once === 'function' &&
  typeof (value as CloseSource).removeListener === 'function';

/**
 * One listener per source and event, however many calls wait on it: a client decides how many
 * requests it pipelines on a connection (or messages it sends on one WebSocket), and one
 * listener each would trip Node's MaxListenersExceededWarning and cost a search per removal.
 */
interface Watcher {
  readonly listener: () => void;
  readonly callbacks: Set<() => void>;
}
const watchers = new WeakMap<CloseSource, Map<string, Watcher>>();

/**
 * Calls `callback` when `source` emits `event`; returns a function that stops. The listener is
 * removed once no call waits, unless `sticky`: an HTTP connection kept alive serves one
 * request after another, and adding and removing its listener for each cost more than the
 * rest of the watch; it stays until the connection closes.
 */
function onceGone(
  source: CloseSource,
  event: string,
  callback: () => void,
  sticky: boolean,
): () => void {
  let byEvent = watchers.get(source);
  if (byEvent === undefined) watchers.set(source, (byEvent = new Map()));
  const events = byEvent;
  let watcher = events.get(event);
  if (watcher === undefined) {
    const callbacks = new Set<() => void>();
    const listener = () => {
      events.delete(event);
      for (const call of [...callbacks]) call();
    };
    watcher = { listener, callbacks };
    events.set(event, watcher);
    source.once(event, listener);
  }
  const { callbacks, listener } = watcher;
  callbacks.add(callback);
  if (sticky) return () => callbacks.delete(callback);
  return () => {
    callbacks.delete(callback);
    if (callbacks.size === 0 && events.get(event) === watcher) {
      events.delete(event);
      source.removeListener(event, listener);
    }
  };
}

/**
 * Calls `onGone` once the client of a handler call goes away, or at once if it already has;
 * returns a function that stops watching. What "gone" means:
 * - HTTP: the request's socket closed (Express `req.socket`, Fastify `req.raw.socket`), else
 *   the raw response closed before it finished. Not the request's own `close` event: since
 *   Node 16 it fires as soon as the request body has been read, with the client still there.
 * - WebSocket: the client emitted `disconnect` (socket.io) or `close` (ws), or is already
 *   disconnected / closing.
 * - RPC and anything else: never (Nest's transports have no per-call "caller gone" signal).
 */
export function watchClientGone(context: ExecutionContext, onGone: () => void): () => void {
  let fired = false;
  const fire = () => {
    if (fired) return;
    fired = true;
    stop();
    onGone();
  };
  const stops: (() => void)[] = [];
  const stop = () => {
    for (const s of stops.splice(0)) s();
  };
  const watch = (source: unknown, events: string[], sticky = false) => {
    if (!isCloseSource(source)) return false;
    for (const event of events) stops.push(onceGone(source, event, fire, sticky));
    return true;
  };

  switch (context.getType()) {
    case 'http': {
      const ends = httpEnds(context);
      const { socket, response } = ends;
      if (httpClientGone(ends)) {
        fire();
        break;
      }
      // The socket: a response waiting behind others pipelined on the connection only learns
      // of the close through it. The response too, for adapters that give no socket (and for
      // a stream of an HTTP/2 session that closes alone): its own listener, as it serves one
      // call.
      watch(socket, ['close'], true);
      if (response?.writableFinished !== true && isCloseSource(response)) {
        response.once('close', fire);
        stops.push(() => response.removeListener('close', fire));
      }
      break;
    }
    case 'ws': {
      const client = context.switchToWs().getClient<{
        connected?: boolean;
        disconnected?: boolean;
        readyState?: number;
      }>();
      const closing = 2; // WebSocket.CLOSING; CLOSED is 3
      if (
        client?.disconnected === true ||
        (typeof client?.readyState === 'number' && client.readyState >= closing)
      ) {
        fire();
        break;
      }
      watch(client, ['disconnect', 'close']);
      break;
    }
    default:
      break;
  }
  return stop;
}

/** The ends of an HTTP call: its socket, its raw response, and Fastify's reply around it. */
export interface HttpEnds {
  readonly socket?: CloseSource;
  readonly response?: CloseSource & {
    writableFinished?: boolean;
    headersSent?: boolean;
    writableEnded?: boolean;
  };
  /** Fastify's reply (`sent`); absent on Express, whose response is the raw one. */
  readonly fastifyReply?: { sent?: boolean };
}

/**
 * The ends of an HTTP call (Express, Fastify), read once per call: Express gives each response
 * its prototype at run time, so every property it lacks is a slow walk up that chain.
 */
export function httpEnds(context: ExecutionContext): HttpEnds {
  // The arguments themselves: switchToHttp() builds three closures per call.
  const request = context.getArgByIndex<{ raw?: { socket?: unknown }; socket?: unknown }>(0);
  const reply = context.getArgByIndex<{ raw?: unknown; sent?: boolean }>(1);
  const raw = reply?.raw;
  return {
    response: (raw ?? reply) as HttpEnds['response'],
    fastifyReply: raw === undefined ? undefined : reply,
    socket: (request?.raw ?? request)?.socket as CloseSource | undefined,
  };
}

/** The response was already sent (or its client is gone): nobody is left to answer. */
export function httpAnswered(ends: HttpEnds): boolean {
  const response = ends.response;
  return (
    ends.fastifyReply?.sent === true ||
    response?.headersSent === true ||
    response?.writableEnded === true ||
    response?.destroyed === true
  );
}

/**
 * How long an HTTP route's wait for its lock goes before the client's connection is watched
 * (ms). A lock granted sooner — the uncontended case, well under a millisecond on a local
 * network — adds and removes no listener at all (they were ~2 % of a `@Locked` request's CPU);
 * a client gone sooner is caught when the lock arrives ({@link httpClientGone}), so the handler
 * never runs for it either way. A wait is what the watch is for, and it lasts longer.
 */
export const CLIENT_WATCH_DELAY_MS = 10;

/**
 * {@link watchClientGone} from {@link CLIENT_WATCH_DELAY_MS} on (see there); returns a function
 * that stops it, started or not.
 */
export function watchClientGoneLater(context: ExecutionContext, onGone: () => void): () => void {
  let stop: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined = setTimeout(() => {
    timer = undefined;
    stop = watchClientGone(context, onGone);
  }, CLIENT_WATCH_DELAY_MS);
  timer.unref();
  return () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    stop?.();
    stop = undefined;
  };
}

/** Whether an HTTP call's connection is closed now (its socket, or its raw response). */
export function httpClientGone(ends: HttpEnds): boolean {
  return ends.socket?.destroyed === true || ends.response?.destroyed === true;
}
