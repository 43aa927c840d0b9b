/**
 * The transport port: what the lock protocol ({@link ScriptedNode}) needs of one Redis client.
 *
 * The protocol — which script each operation runs, with which keys and arguments, how its reply
 * reads, the `EVALSHA` → `EVAL` fallback, loading the scripts and reading `INFO` on every ready —
 * is written once, in scripted-node.ts. A client adapter (ioredis, node-redis, a test's raw RESP
 * socket) is only this port: sending a command, saying what a failed one means, the connection's
 * life, and optionally a subscriber connection. Adding a client is one file that implements it.
 *
 * Grouped by capability, so that an adapter sees at a glance what it must write and what it may
 * leave out ({@link PubSubTransport} is optional: without it, waiters poll).
 */
export interface RedisTransport extends CommandTransport, ConnectionTransport {
  /**
   * Release notifications (architecture.md §5.8): a second connection for SUBSCRIBE. Optional: without it
   * the node offers no `subscribe`, and waiters poll every `retryDelay`.
   */
  readonly pubsub?: PubSubTransport;
}

/** A command's argument as sent: numbers are sent as their decimal text. */
export type CommandArg = string | number;

/**
 * Sending commands on the lock connection. The protocol sends `EVALSHA`, `EVAL`, `SET`, `PTTL`,
 * `GET`, `PING`, `INFO`, `CONFIG GET` and `SCRIPT EXISTS|LOAD` through it, nothing else.
 */
export interface CommandTransport {
  /**
   * Sends one command and resolves to the server's reply as the client reads it (RESP2 shapes:
   * `null`, a number, a string, an array of those). Rejects with the client's *own* error: the
   * protocol reads the server's words from its message (`NOSCRIPT`, `NOPERM`, `WRONGTYPE`, a
   * syntax error) before it asks {@link describe} what the failure means. Must not queue forever
   * while the node is down (fail fast, or bound the command); the lock manager bounds every call
   * by `nodeTimeout` in any case.
   *
   * A client that adds a prefix to keys (ioredis `keyPrefix`) adds it here as it would to any
   * command; {@link PubSubTransport.keyPrefix} then says so.
   */
  call(command: string, args: readonly CommandArg[]): Promise<unknown>;

  /**
   * What a client's error means to the algorithm, in the library's words (node-errors.ts): a
   * {@link NodeTimeoutError} when the client itself gave up waiting for the reply (read as a
   * `timeout`, not an `error`), else `DescribedNodeError.of(error, context, lastConnectError)`
   * with what the adapter knows of its connection (TLS or not, why it is down). `WRONGTYPE` is
   * the protocol's to read; the adapter need not.
   */
  describe(error: unknown): Error;
}

/** A change in the lock connection's state, as {@link ConnectionTransport.watch} reports it. */
export type ConnectionEvent = 'ready' | 'lost';

/** The lock connection's life. */
export interface ConnectionTransport {
  /** A stable name for errors and logs: `host:port` or the socket path, never credentials. */
  readonly name: string;

  /**
   * Whether this adapter opened the connection (and so closes it in {@link close}). The node
   * logs a connection going down and coming back only for connections it owns: a caller's
   * client is the caller's to watch.
   */
  readonly owned: boolean;

  /** The ACL user the connection authenticates as (`default` when none is set), for messages. */
  readonly aclUser: string;

  /** Whether the connection can take commands now (connected, and through its handshake). */
  readonly isReady: boolean;

  /**
   * Known down: the connection is closed and not re-established (a slow or hung node is *not*
   * down). Optional: without it the node counts a `lost` not yet followed by `ready` as down.
   */
  readonly isDown?: boolean;

  /**
   * The latest error of a connection attempt, until the connection is ready again: why it is
   * down, for the log line that says it went down. Optional.
   */
  readonly lastConnectError?: unknown;

  /**
   * Registers the node's listener, once, before anything is sent: `ready` each time the
   * connection can take commands (also when it already can: the adapter calls it at once),
   * `lost` each time it closes or starts reconnecting. The protocol loads its scripts and reads
   * `INFO` on `ready`, and forgets what the server said about itself on `lost` (it may come back
   * as a restarted server).
   */
  watch(listener: (event: ConnectionEvent) => void): void;

  /**
   * Asked only while the connection is not ready: calls `settled(true)` when it becomes ready,
   * `settled(false)` when a connection attempt fails or the client has ended (at once if it has);
   * starts connecting a client that waits for its first command. Returns a function that stops
   * the calls (settle-on.ts does the listening). Used by `whenReady`.
   */
  connect(settled: (ready: boolean) => void): () => void;

  /**
   * Told when the server refused `INFO` (ACLs): an adapter whose client runs `INFO` itself as a
   * ready check can stop it there. Optional.
   */
  infoRefused?(): void;

  /** Closes the connection if this adapter owns it; leaves a caller's client open. */
  close(): Promise<void>;
}

/** Release notifications: a subscriber connection beside the lock connection. */
export interface PubSubTransport {
  /**
   * The prefix the client adds to the keys of every command but not to channel names (ioredis
   * `keyPrefix`; `''` when none). The release script publishes on its KEYS, so a waiter listens
   * on prefix + name: the bare name would be a confirmed subscription nobody publishes on.
   */
  readonly keyPrefix: string;

  /**
   * Opens the subscriber connection (once, on the first wait). It may queue commands while it
   * reconnects (a SUBSCRIBE that waits does no harm) and must not resubscribe by itself: the node
   * resubscribes on `ready`, so that each channel is confirmed by a reply of its own connection.
   */
  openSubscriber(events: SubscriberEvents): SubscriberConnection;
}

/** What a subscriber connection reports to the node. */
export interface SubscriberEvents {
  /** A message published on `channel` (as the server names it). */
  message(channel: string, data: string): void;
  /** The connection dropped: messages may have been missed. */
  closed(): void;
  /** The connection is (again) ready: the node subscribes to its channels anew. */
  ready(): void;
}

/** The subscriber connection, as the node drives it. */
export interface SubscriberConnection {
  /** `SUBSCRIBE channel…`: resolves once the server confirmed every channel. */
  subscribe(channels: readonly string[]): Promise<unknown>;
  /** `UNSUBSCRIBE channel…`. */
  unsubscribe(channels: readonly string[]): Promise<unknown>;
  /** Closes it at once (the node is closing). */
  close(): void;
}
