import { brandErrorClass } from '../errors';

/**
 * What a failed command or connection means, in the library's words (architecture.md §5.12: "words from
 * the Redis client reach nobody without the library's own sentence first"). A client's text —
 * ioredis' "Stream isn't writeable and enableOfflineQueue options is false", node-redis' "The
 * client is closed", `connect ETIMEDOUT` for a `rediss://` URL to a plain Redis port — says what
 * the client saw, not what the operator should look at; the sentence here says that, and keeps
 * the client's text after it, in parentheses, for whoever needs the detail.
 */

/** What kind of problem a node error is: the first words of its description. */
export type NodeProblem =
  | 'not connected'
  | 'unreachable'
  | 'TLS mismatch'
  | 'authentication failed'
  | 'permission denied'
  | 'timeout'
  | 'loading'
  | 'error';

/** A node's error, described: the problem's kind and the sentence that says it. */
export interface NodeErrorDescription {
  readonly problem: NodeProblem;
  /** The library's sentence, then the client's text in parentheses. */
  readonly text: string;
}

/** How a connection was made, for what a connect error means (TLS or not). */
export interface ConnectionContext {
  /** The connection uses TLS (`rediss://`, ioredis `tls` options). */
  readonly tls?: boolean;
}

const NOT_CONNECTED = [
  /Stream isn't writeable/i,
  /Connection is closed/i,
  /The client is closed/i,
  /ClientClosedError/,
  // node-redis while it reconnects with `disableOfflineQueue` (ClientOfflineError).
  /The client is offline/i,
  /ClientOfflineError/,
  /Socket closed unexpectedly/i,
  /connection closed/i,
];

/**
 * The library's description of an error from a node (a command's rejection, a connection's
 * `error` event), with the client's text kept after it. `lastConnectError`, when known, is why
 * the connection is not open: a command refused for want of a connection is described by it
 * ("not connected: connection refused …") rather than by the client's queue setting.
 *
 * @example
 * describeNodeError(new Error("Stream isn't writeable and enableOfflineQueue options is false"))
 * // { problem: 'not connected', text: "not connected (Stream isn't writeable …)" }
 */
export function describeNodeError(
  error: unknown,
  context: ConnectionContext = {},
  lastConnectError?: unknown,
): NodeErrorDescription {
  if (error instanceof DescribedNodeError) return { problem: error.problem, text: error.message };
  const raw = rawText(error);
  if (NOT_CONNECTED.some((pattern) => pattern.test(raw))) {
    if (lastConnectError !== undefined) {
      const why = describeNodeError(lastConnectError, context);
      return { problem: why.problem, text: `not connected: ${why.text}` };
    }
    return { problem: 'not connected', text: `not connected (${raw})` };
  }
  const said = (problem: NodeProblem, sentence: string): NodeErrorDescription => ({
    problem,
    text: `${sentence} (${raw})`,
  });
  if (/NOPERM/.test(raw)) return said('permission denied', "the Redis user's ACL refuses it");
  if (/WRONGPASS|NOAUTH|invalid username-password|AUTH failed/i.test(raw)) {
    return said('authentication failed', 'authentication failed: check the username and password');
  }
  if (/Command timed out|NodeTimeoutError|no answer within/i.test(raw) || isTimeoutError(error)) {
    return said('timeout', 'no answer within nodeTimeout (hung or overloaded)');
  }
  if (/^LOADING/.test(raw)) return said('loading', 'the server is still loading its data');
  if (/SSL|TLS|certificate|wrong version number|EPROTO|self.signed/i.test(raw)) {
    return said(
      'TLS mismatch',
      context.tls
        ? 'TLS handshake failed: check that the server speaks TLS on this port and its certificate'
        : 'TLS error on a plain connection',
    );
  }
  if (/ETIMEDOUT/.test(raw)) {
    return context.tls
      ? said(
          'TLS mismatch',
          'no TLS handshake within the connect timeout: is this a plain (non-TLS) Redis port reached with rediss:// or tls options?',
        )
      : said('unreachable', 'connect timed out: host unreachable or port filtered');
  }
  if (/ECONNREFUSED/.test(raw)) {
    return said('unreachable', 'connection refused: no Redis server listens on that port');
  }
  if (/ENOTFOUND|EAI_AGAIN/.test(raw)) return said('unreachable', 'host name not found');
  if (/ECONNRESET|EPIPE/.test(raw)) {
    return said('unreachable', 'connection reset by the server');
  }
  if (/EHOSTUNREACH|ENETUNREACH/.test(raw)) return said('unreachable', 'host unreachable');
  return said('error', 'the node answered with an error');
}

/** The client's own text of an error, on one line. */
function rawText(error: unknown): string {
  const text =
    error instanceof Error
      ? error.message || error.name
      : typeof error === 'string'
        ? error
        : String(error);
  return text.replace(/\s+/g, ' ').trim();
}

function isTimeoutError(error: unknown): boolean {
  return error instanceof Error && error.name === 'NodeTimeoutError';
}

/**
 * An error already in the library's words (see {@link describeNodeError}): what an adapter
 * throws in place of a client's error, e.g. for a command it could not send because the
 * connection is not open, with the reason it is down when known.
 */
export class DescribedNodeError extends Error {
  constructor(
    /** The kind of problem. */
    readonly problem: NodeProblem,
    message: string,
  ) {
    super(message);
    this.name = 'DescribedNodeError';
  }

  /** `error` in the library's words: itself when it already is, else a new one describing it. */
  static of(error: unknown, context?: ConnectionContext, lastConnectError?: unknown) {
    // `this`, not the class's name: a reference to the class from its own body makes the build
    // name it `_DescribedNodeError` (tsup.config.ts, keepNames).
    if (error instanceof this) return error;
    const { problem, text } = describeNodeError(error, context, lastConnectError);
    return new this(problem, text);
  }
}
brandErrorClass(DescribedNodeError, 'DescribedNodeError');
