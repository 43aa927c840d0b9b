import type { Writable } from 'node:stream';
import Redis, { Command, type RedisOptions } from 'ioredis';
import { monotonicClock, type Clock } from '../clock';
import { isIoredisClient } from './ioredis-client';
import type { RedlockLogger } from '../observability/logger';
import { NodeTimeoutError, type RedisNode } from './node';
import { DescribedNodeError } from './node-errors';
import { ScriptedNode } from '../protocol/scripted-node';
import { settleOn } from './settle-on';
import type {
  CommandArg,
  ConnectionEvent,
  PubSubTransport,
  RedisTransport,
  SubscriberConnection,
  SubscriberEvents,
} from './transport';
import { atTurnEnd } from './turn-end';

/** How a node may be given: a `redis://` / `rediss://` URL, ioredis options, or your own client. */
export type RedisNodeSpec = string | RedisOptions | Redis;

const CORK = process.env.REDLOCK_NO_CORK === undefined;
/**
 * Commands awaiting their replies on a socket from which a new one is taken as part of a load
 * (batch()). A lone lock cycle leaves at most two behind on a node that lags by less than a
 * cycle (the replies its quorum did not wait for: the acquire's and the release's), so three
 * never count a lone cycle as a load.
 */
const LOAD_DEPTH = 3;

/** ioredis' own names (lower-case) of the commands the protocol sends (see {@link directOptions}). */
const LOWER_CASE: Readonly<Record<string, string>> = {
  SET: 'set',
  EVALSHA: 'evalsha',
  EVAL: 'eval',
  PTTL: 'pttl',
  EXISTS: 'exists',
  GET: 'get',
};

/**
 * The options {@link IoredisTransport.call} gives a command it builds for the client's own
 * `sendCommand`, those `client.call()` would give it, or `undefined` to go through
 * `client.call()`: for a client of another copy of ioredis, whose `sendCommand` expects that
 * copy's commands (another major version's differ). What `call()` does besides — take the name
 * off the arguments, look for a callback, build these options, ask whether to auto-pipeline —
 * and the upper-case name, which ioredis lower-cases in each of its flag checks, cost 3 µs of
 * client CPU per uncontended lock cycle on 5 nodes, a fifth of ioredis' share (bench/REPORT.md,
 * "Issue 24, 2026-11-29 10:00").
 *
 * Read once, when the node is made, as the other settings of a caller's client. A caller's
 * `enableAutoPipelining` does not apply to the lock's commands: they are batched by the
 * end-of-turn cork instead (batch()), and leave in the order they were issued either way.
 * `showFriendlyErrorStack` is not needed: a failed command reaches the caller in the
 * library's words (describe()).
 */
function directOptions(client: Redis): object | undefined {
  if (!(client instanceof Redis)) return undefined;
  return { keyPrefix: client.options.keyPrefix, replyEncoding: 'utf8' };
}

/**
 * Options forced on clients this library creates. A lock node must fail fast: a command that
 * waits in an offline queue, is retried across reconnects or is re-sent after one lands at a
 * time nobody is waiting for it any more — a late SET of an abandoned attempt only blocks
 * others until its lease expires, but a queue that grows without bound while a node is down
 * is memory and latency we never get back.
 */
function failFastOptions(nodeTimeout: number): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // No `commandTimeout`: every round is bounded by nodeTimeout already (fanOut's one timer per
    // round) and a node that owes replies for longer is suspected and sent nothing (suspicion.ts),
    // as with node-redis, which has no command timeout. ioredis' arms one timer per command,
    // and a timed-out command stays in its queue until the reply comes anyway: the timers were
    // 6 of the 9 per lock cycle on 3 nodes and ~10 µs of client CPU per cycle.
    // How long disconnect() waits for a socket to end before destroying it. ioredis arms this
    // timer even for a node that is already gone (its socket closed long ago), so at the
    // default of 2 s every shutdown with a dead node would take 2 s.
    disconnectTimeout: nodeTimeout,
  };
}

/**
 * The ioredis transport ({@link RedisTransport}): commands with adaptive pipelining, ioredis'
 * words translated, the connection's life, and a subscriber connection for release
 * notifications. The protocol over it is {@link ScriptedNode}'s.
 */
export class IoredisTransport implements RedisTransport, PubSubTransport {
  readonly name: string;
  readonly pubsub: PubSubTransport = this;
  /** The socket this turn of the event loop corked, if it did (batch()). */
  private turnStream?: Writable;
  /** How many commands went on it corked in this turn. */
  private sentThisTurn = 0;
  /** Whether the previous turn corked more than one: the next turn corks from its first command. */
  private loaded = false;
  /** The subscriber connection, once opened (the node closes it through its handle). */
  private subscriber?: Redis;
  /** The latest connection error of a client we own, until it is ready again: why it is down. */
  private connectError?: unknown;
  /** Whether the connection closed since it was last ready (isDown). */
  private lost = false;
  /** What a command gets while the connection is gone ({@link refused}), built once per cause. */
  private refusal?: Error;
  /** The connect error {@link refusal} was described with, and whether the client had ended. */
  private refusalCause?: unknown;
  private refusalEnded = false;
  /** The options of the commands call() builds, unless it goes through `client.call()`. */
  private readonly direct: object | undefined;

  constructor(
    /** The ioredis client. */
    readonly client: Redis,
    /** Whether this adapter created the client (and so closes it). */
    readonly owned: boolean,
    /** Bound on the graceful part of `close()`. */
    private readonly nodeTimeout: number,
  ) {
    this.name = nodeName(client);
    this.direct = directOptions(client);
    // Only on a client we own: an error listener on a caller's client would change how their
    // app sees its errors.
    if (owned) client.on('error', (error: Error) => (this.connectError = error));
    client.on('ready', () => {
      this.connectError = undefined;
      this.refusal = undefined;
      this.lost = false;
    });
    client.on('close', () => (this.lost = true));
  }

  get isReady(): boolean {
    return this.client.status === 'ready';
  }

  get isDown(): boolean {
    const status = this.client.status;
    if (status === 'ready') return false;
    // After a loss, down until ready again: every reconnect attempt passes through `connecting`
    // (and `connect` until the ready check answers), and a reading taken then must not say "up"
    // (it restarted membership's "silent for a second" clock: restart-findings-6d (e)).
    return this.lost || status === 'reconnecting' || status === 'close' || status === 'end';
  }

  get lastConnectError(): unknown {
    return this.connectError;
  }

  get aclUser(): string {
    return this.client.options.username ?? 'default';
  }

  /** The prefix ioredis adds to every key of this client's commands (`keyPrefix`), if any. */
  get keyPrefix(): string {
    const prefix = this.client.options.keyPrefix;
    return typeof prefix === 'string' ? prefix : '';
  }

  call(command: string, args: readonly CommandArg[]): Promise<unknown> {
    const refused = this.refused();
    if (refused !== undefined) return Promise.reject(refused);
    this.batch();
    const options = this.direct;
    if (options === undefined) return this.client.call(command, ...args);
    const name = LOWER_CASE[command] ?? command.toLowerCase();
    return this.client.sendCommand(
      new Command(name, args as CommandArg[], options),
    ) as Promise<unknown>;
  }

  /**
   * The error of a command sent while the connection is gone — between reconnect attempts,
   * closing, or closed for good — on a client that does not queue commands (every client we
   * create): ioredis refuses such a command too, but builds an Error (and its stack) for each,
   * and describe() another. With one node of five down that was 40 µs of client CPU per lock
   * cycle (bench S3, c = 16: 0.62x the healthy rate; `bench/REPORT.md`, stop 52). Here it is
   * described once per down spell and cause (the latest connect error) and reused: the same
   * words ioredis' refusal gets from describe(), without the command. A client that queues
   * while offline (a caller's, with `enableOfflineQueue`) is left to do so; `connecting` and
   * `connect` are left to ioredis (a handshake command may be written in `connect`).
   */
  private refused(): Error | undefined {
    const status = this.client.status;
    if (status === 'ready') return undefined;
    const gone =
      status === 'end' ||
      ((status === 'reconnecting' || status === 'close') &&
        this.client.options.enableOfflineQueue === false);
    if (!gone) return undefined;
    const ended = status === 'end';
    if (
      this.refusal === undefined ||
      this.refusalCause !== this.connectError ||
      this.refusalEnded !== ended
    ) {
      this.refusalCause = this.connectError;
      this.refusalEnded = ended;
      // ioredis' own words for the refusal, described as they would be.
      this.refusal = this.describe(
        new Error(
          ended
            ? 'Connection is closed.'
            : "Stream isn't writeable and enableOfflineQueue options is false",
        ),
      );
    }
    return this.refusal;
  }

  /** ioredis' `commandTimeout` is a timeout; anything else, in the library's words. */
  describe(error: unknown): Error {
    if (error instanceof Error && error.message === 'Command timed out') {
      return new NodeTimeoutError(error.message);
    }
    return DescribedNodeError.of(
      error,
      { tls: Boolean(this.client.options.tls) },
      this.connectError,
    );
  }

  watch(listener: (event: ConnectionEvent) => void): void {
    this.client.on('ready', () => listener('ready'));
    this.client.on('close', () => listener('lost'));
    if (this.client.status === 'ready') listener('ready');
  }

  connect(settled: (ready: boolean) => void): () => void {
    const client = this.client;
    if (client.status === 'end') {
      settled(false);
      return () => undefined;
    }
    const stop = settleOn(client, ['ready'], ['error', 'end'], settled);
    // A lazyConnect client waits for its first command; with an offline queue disabled that
    // command would fail instead, so connect it now.
    if (client.status === 'wait') client.connect().catch(() => undefined);
    return stop;
  }

  /** ioredis' ready check is that INFO too: it would print its warning on every reconnect. */
  infoRefused(): void {
    if (this.owned) this.client.options.enableReadyCheck = false;
  }

  async close(): Promise<void> {
    if (!this.owned || this.client.status === 'end') return;
    if (this.client.status === 'ready') {
      // QUIT lets in-flight releases finish; a node that does not answer is cut off.
      const quit = this.client.quit().catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>(
        (resolve) => (timer = setTimeout(resolve, this.nodeTimeout)),
      );
      await Promise.race([quit, timeout]);
      clearTimeout(timer);
    }
    this.client.disconnect();
  }

  /**
   * Unlike the lock connection, the subscriber may queue while reconnecting (a SUBSCRIBE that
   * waits does no harm).
   */
  openSubscriber(events: SubscriberEvents): SubscriberConnection {
    const subscriber = (this.subscriber = this.client.duplicate({
      enableOfflineQueue: true,
      maxRetriesPerRequest: null,
      // Re-subscribed by the node on 'ready', so that each channel is confirmed by its own reply.
      autoResubscribe: false,
      // No command timeout (nor has the lock connection): a SUBSCRIBE of hundreds of
      // channels answered late, under this process's own load, still subscribed them, but its
      // promise rejected and they were never confirmed — thousands of waiters then polled at
      // the shared rate for as long as they waited (issue 19). A hung node's SUBSCRIBE waits.
      commandTimeout: undefined,
      lazyConnect: false,
      // ioredis' ready check is an INFO (a loading server is waited for): pointless for a
      // subscriber, and a user refused INFO got "Skipping the ready check…" printed by ioredis
      // for every connection (issue 25).
      enableReadyCheck: false,
    }));
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, id: string) => events.message(channel, id));
    subscriber.on('close', () => events.closed());
    subscriber.on('ready', () => events.ready());
    return {
      subscribe: (channels) => subscriber.subscribe(...channels),
      unsubscribe: (channels) => subscriber.unsubscribe(...channels),
      close: () => subscriber.disconnect(),
    };
  }

  /**
   * Adaptive pipelining. A command issued while fewer than {@link LOAD_DEPTH} commands await
   * their replies on this socket, and the previous turn of the event loop did not cork it, leaves
   * at once, with no bookkeeping: nothing else is waiting to share its write, and holding it to
   * the end of the turn cost a lone lock cycle (bench S1, c = 1) 15-20 % of its rate. A command
   * issued behind more corks the socket (a load: many lock cycles at once), and so does the first
   * of a turn after one that corked more than one (the load goes on); the end of the turn uncorks
   * it (turn-end.ts), so that every command issued meanwhile (the acquisitions of many requests
   * read together, many acquisitions resumed by one batch of replies) leaves in one write — no
   * timer, unlike a pipeline flushed on one. The load is read from the replies awaited, not from
   * a second command in the turn: knowing that took an end-of-turn callback (`setImmediate`) in
   * every turn that sent anything, ~2.5 % of a lone cycle's rate (two per cycle). Off when
   * `REDLOCK_NO_CORK` is set (for the benchmark's comparison).
   */
  private batch(): void {
    if (!CORK) return;
    if (this.turnStream !== undefined) {
      this.sentThisTurn++;
      return;
    }
    // ioredis' queue of the commands written and not yet answered (a caller's client of another
    // copy of ioredis may lack it: its commands then always leave at once).
    const client = this.client as unknown as {
      stream?: Writable;
      commandQueue?: { length: number };
    };
    if (!this.loaded && (client.commandQueue?.length ?? 0) < LOAD_DEPTH) return;
    const socket = client.stream;
    if (socket === undefined || this.client.status !== 'ready') return;
    socket.cork();
    this.turnStream = socket;
    this.sentThisTurn = 1;
    atTurnEnd(this.endTurn);
  }

  /** The end of a turn that corked the socket (batch()); one function per transport, not per turn. */
  private readonly endTurn = (): void => {
    const socket = this.turnStream!;
    this.loaded = this.sentThisTurn > 1;
    this.turnStream = undefined;
    socket.uncork();
  };
}

/**
 * The ioredis adapter of the {@link RedisNode} port: the shared protocol ({@link ScriptedNode})
 * over an {@link IoredisTransport}. Create it with {@link IoredisNode.from}.
 */
export class IoredisNode extends ScriptedNode {
  /** The ioredis client. */
  readonly client: Redis;
  // Always there: the ioredis transport has a subscriber connection.
  declare readonly subscribe: NonNullable<RedisNode['subscribe']>;
  declare readonly listening: NonNullable<RedisNode['listening']>;

  constructor(
    /** The ioredis client. */
    client: Redis,
    /** Whether this node created the client (and so closes it). */
    owned: boolean,
    /** Bound on the graceful part of `close()`. */
    nodeTimeout: number,
    logger: RedlockLogger,
    /** The time line the readings of INFO are dated on: the clock of the `Redlock` served. */
    clock: Clock = monotonicClock,
  ) {
    super(new IoredisTransport(client, owned, nodeTimeout), { logger, clock });
    this.client = client;
  }

  /**
   * Creates a node from a URL, options or a client. Clients created here get fail-fast
   * settings and a quiet error listener; a caller's client is used as it is, and any setting
   * on it that can make commands wait is named in a warning.
   */
  static from(
    spec: RedisNodeSpec,
    nodeTimeout: number,
    logger: RedlockLogger,
    clock: Clock = monotonicClock,
  ): IoredisNode {
    if (isIoredisClient(spec)) {
      const changes = riskySettings(spec.options);
      if (changes.length > 0) {
        // One line per node, saying what to change: the details are in the README.
        logger.warn(
          `Redis node ${nodeName(spec)}: your client can make commands wait while the node is down or hung; ` +
            `create it with { ${changes.join(', ')} } (lock attempts stay bounded by nodeTimeout)`,
        );
      }
      // `this`, not the class's name: see DescribedNodeError.of.
      return new this(spec, false, nodeTimeout, logger, clock);
    }
    const forced = failFastOptions(nodeTimeout);
    const client =
      typeof spec === 'string' ? new Redis(spec, forced) : new Redis({ ...spec, ...forced });
    return new this(client, true, nodeTimeout, logger, clock);
  }
}

/** `host:port` (or the socket path) of a client, for messages: never the URL, which may hold a password. */
export function nodeName(client: Redis): string {
  const { host, port, path } = client.options;
  return path ? path : `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}

/** The settings of a caller's client to change, as `name: value` to set, for the warning. */
function riskySettings(options: RedisOptions): string[] {
  const changes: string[] = [];
  if (options.enableOfflineQueue !== false) changes.push('enableOfflineQueue: false');
  if (options.maxRetriesPerRequest !== 0) changes.push('maxRetriesPerRequest: 0');
  if (options.autoResendUnfulfilledCommands !== false) {
    changes.push('autoResendUnfulfilledCommands: false');
  }
  return changes;
}
