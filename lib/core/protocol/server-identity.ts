import type { Clock } from '../clock';
import type { RedlockLogger } from '../observability/logger';
import type { ServerInfo } from '../nodes/node';
import { loadMissingScripts } from './script-loading';
import { isNoPermission } from './script-replies';
import { parseServerInfo, readServerConfig, type ServerConfig } from '../nodes/server-info';
import type { RedisTransport } from '../nodes/transport';

/**
 * Who the server behind one connection is, learnt anew on every (re)connection (architecture.md §5.7: a
 * node that may have restarted without its data is not counted until its `INFO` answers), and
 * the lock scripts loaded there before the connection counts as ready (architecture.md §5.1: EVALSHA then
 * succeeds on the hot path, and no fallback re-sends a command after later ones).
 */
export class ServerIdentity {
  private info?: ServerInfo;
  /** Why `info` is unknown after the latest read (none while it is known or being read). */
  private infoError?: 'failed' | 'refused';
  private refusalSaid = false;
  /** The scripts and INFO reads of the latest ready, settled (never rejects). */
  private identifying?: Promise<void>;

  constructor(
    private readonly transport: RedisTransport,
    /** The time line the readings of INFO are dated on: the clock of the `Redlock` served. */
    private readonly clock: Clock,
    /** Where a refused INFO is said (once); none: not said. */
    private readonly logger?: RedlockLogger,
  ) {}

  /** What the server said about itself on this connection, if it has answered. */
  get serverInfo(): ServerInfo | undefined {
    return this.info;
  }

  /** Why {@link serverInfo} is unknown: `failed` (retry with {@link identify}) or `refused`. */
  get identityError(): 'failed' | 'refused' | undefined {
    return this.infoError;
  }

  /** Settles once the latest ready's scripts and INFO have answered (or failed). */
  settled(): Promise<void> {
    return this.identifying ?? Promise.resolve();
  }

  /**
   * On every (re)connection: load the scripts the server lacks (loadMissingScripts: every EVALSHA
   * sent once `identifying` settled finds them), and learn who the server is. Failures are not
   * fatal: a script that could not be loaded falls back to EVAL, and a server that does not allow
   * INFO (managed Redis, ACLs) simply has no identity.
   */
  onReady(): void {
    // Unknown until this connection's INFO answers (see forget).
    this.forget();
    const scripts = loadMissingScripts(
      (shas) => this.transport.call('SCRIPT', ['EXISTS', ...shas]),
      (source) => this.transport.call('SCRIPT', ['LOAD', source]),
    );
    this.read();
    // Ready for the lock manager once both answered (whenReady waits for `identifying`).
    this.identifying = Promise.all([this.identifying, scripts]).then(() => undefined);
  }

  /**
   * Whatever the server said about itself is stale once the connection drops: it may come back
   * as a restarted server (an RDB restore even brings back its old stamp). Until the next INFO
   * answers, it has no identity, so it votes on nothing it said before the drop.
   */
  forget(): void {
    this.info = undefined;
    this.infoError = undefined;
  }

  /** Reads INFO again (after a failed read); the membership retries it while the node is out. */
  identify(ready: boolean): Promise<void> {
    if (!ready) return Promise.resolve();
    this.read();
    return this.settled();
  }

  /**
   * Learns who the server is. A refusal (ACLs: NOPERM) is said once; any other failure (a
   * timeout on a busy server) leaves the identity unknown and retryable: the lock manager does
   * not count the node until a read succeeds, since a node whose INFO could not be read may be
   * one that restarted without its data.
   */
  private read(): void {
    this.infoError = undefined;
    this.identifying = Promise.all([this.transport.call('INFO', ['server']), this.config()]).then(
      ([text, config]) => {
        // Dated when the reply arrived: the server was at least this old when it answered, so
        // counting from here keeps the age a lower bound (counting from the send would add the
        // round trip to it).
        this.info = parseServerInfo(String(text), config, this.clock.now());
        if (this.info === undefined) this.infoError = 'refused';
      },
      (error: unknown) => {
        this.info = undefined;
        const refused = isNoPermission(error);
        this.infoError = refused ? 'refused' : 'failed';
        if (!refused) return;
        this.transport.infoRefused?.();
        if (this.refusalSaid || this.logger === undefined) return;
        this.refusalSaid = true;
        this.logger.warn(
          `Redis node ${this.transport.name} does not allow INFO (${error instanceof Error ? error.message : String(error)}): ` +
            'it counts toward no quorum unless the lock manager is told to trust unidentified nodes',
        );
      },
    );
  }

  /** Persistence and eviction settings; unknown parts where CONFIG is not allowed. */
  private config(): Promise<ServerConfig> {
    return readServerConfig((pattern) => this.transport.call('CONFIG', ['GET', pattern]));
  }
}
