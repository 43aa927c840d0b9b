/** Rounds in flight allowed at first and at most: far above what one process needs uncontended. */
export const MAX_ATTEMPTS_IN_FLIGHT = 128;

/** The floor of the adaptive bound: a slow fleet still gets this many rounds at once. */
export const MIN_ATTEMPTS_IN_FLIGHT = 16;

/** A turn of the gate: resolves when the attempt may be sent. */
interface Turn {
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  /** Drops the turn's abort listener once it settled. */
  done?: () => void;
}

/**
 * Bounds the acquisition rounds one lock manager has in flight (issue 19: overload is not an
 * outage). Each round goes to every node at once, so this bounds the attempts in flight per node
 * too. Thousands of waiters woken at once (a burst of calls, a burst of releases) would otherwise
 * queue thousands of scripts on every node and in this process's event loop, whose replies then
 * miss `nodeTimeout` and read as `unavailable` while every node is healthy. Rounds beyond the
 * bound wait their turn, first come first served.
 *
 * The bound adapts to the replies: a round that
 * needed a reply that did not come within `nodeTimeout`, from a node that is not known down, halves
 * it (at most once per `nodeTimeout`, down to {@link MIN_ATTEMPTS_IN_FLIGHT}); each window of
 * {@link MIN_ATTEMPTS_IN_FLIGHT} rounds answered in time raises it by a quarter, up to
 * {@link MAX_ATTEMPTS_IN_FLIGHT}. A node that is down or
 * hung costs no more than before: rounds decide on the others, and the floor keeps them flowing.
 */
export class AttemptGate {
  private inFlight = 0;
  private bound = MAX_ATTEMPTS_IN_FLIGHT;
  private readonly queue: Turn[] = [];
  /** Index of the first live turn in `queue` (shifted lazily: a queue of thousands is normal). */
  private head = 0;
  private answered = 0;
  private lastCut = -Infinity;

  constructor(
    private readonly now: () => number,
    private readonly nodeTimeout: number,
  ) {}

  /** The current bound on rounds in flight (for tests and diagnostics). */
  get limit(): number {
    return this.bound;
  }

  /** Rounds waiting for their turn. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  /** Whether a round started now would have to wait: the lock manager is under load. */
  get busy(): boolean {
    return this.inFlight >= this.bound || this.waiting > 0;
  }

  /**
   * Takes a slot: `undefined` when one is free now (the hot path allocates nothing), else a
   * promise that resolves on the attempt's turn, or rejects with `signal`'s reason if it aborts
   * first (or with {@link AttemptGate.abortAll}'s). Every slot taken is given back by `leave()`.
   */
  enter(signal?: AbortSignal): Promise<void> | undefined {
    if (!this.busy) {
      this.inFlight++;
      return undefined;
    }
    signal?.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const turn: Turn = { resolve, reject };
      if (signal !== undefined) {
        const onAbort = () => {
          const index = this.queue.indexOf(turn, this.head);
          if (index >= 0) this.queue.splice(index, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        turn.done = () => signal.removeEventListener('abort', onAbort);
      }
      this.queue.push(turn);
    });
  }

  /**
   * Gives a slot back. `timedOut`: the round waited for a reply that did not come in time from a
   * node not known down — the fleet, or this process, is slower than the bound assumes.
   */
  leave(timedOut: boolean): void {
    this.inFlight--;
    if (timedOut) {
      const now = this.now();
      if (now - this.lastCut >= this.nodeTimeout && this.bound > MIN_ATTEMPTS_IN_FLIGHT) {
        this.bound = Math.max(MIN_ATTEMPTS_IN_FLIGHT, Math.floor(this.bound / 2));
        this.lastCut = now;
      }
      this.answered = 0;
    } else if (this.bound < MAX_ATTEMPTS_IN_FLIGHT && ++this.answered >= MIN_ATTEMPTS_IN_FLIGHT) {
      // Back up by a quarter per window of rounds answered in time: from the floor to the top
      // in about 10 windows (~160 rounds), so one slow spell (a burst of our own, a GC pause)
      // does not throttle the thousands of waiters behind it for long.
      this.bound = Math.min(MAX_ATTEMPTS_IN_FLIGHT, Math.ceil(this.bound * 1.25));
      this.answered = 0;
    }
    this.admit();
  }

  /** Rejects every round still waiting for its turn (the lock manager is draining). */
  abortAll(reason: unknown): void {
    const turns = this.queue.splice(this.head);
    this.queue.length = 0;
    this.head = 0;
    for (const turn of turns) {
      turn.done?.();
      turn.reject(reason);
    }
  }

  private admit(): void {
    while (this.inFlight < this.bound && this.head < this.queue.length) {
      const turn = this.queue[this.head++];
      this.inFlight++;
      turn.done?.();
      turn.resolve();
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}
