import type { Clock } from './clock';
import type { RedlockLock } from './lock';

/** Settings of one auto-extension. */
export interface AutoExtendSettings {
  /** The lease each extension asks for. */
  readonly ttl: number;
  /** Pause before retrying a failed extension (capped by the validity left). */
  readonly retryDelay: number;
  /** Monotonic time after which no more extensions are made (`Infinity` for no cap). */
  readonly holdUntil: number;
  readonly clock: Clock;
}

/**
 * Keeps a lock alive while a routine runs (DESIGN §5.4): extends at a third of the ttl, so
 * that two more chances remain before the lease ends; retries a failed extension while
 * validity remains. It never declares the loss itself: the lock's own expiry watch does,
 * at the exact deadline, whether or not an extension is in flight.
 */
export class AutoExtender {
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly lock: RedlockLock,
    private readonly settings: AutoExtendSettings,
  ) {}

  /** Starts extending. The lock's own expiry watch (armed by its session) reports a loss. */
  start(): void {
    this.schedule(this.settings.ttl / 3);
  }

  /** Stops extending (before release). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(delay: number): void {
    if (this.stopped || !this.lock.isHeld) return;
    if (this.settings.clock.now() + delay >= this.settings.holdUntil) return;
    this.timer = setTimeout(() => void this.tick(), delay);
  }

  private async tick(): Promise<void> {
    if (this.stopped || !this.lock.isHeld) return;
    try {
      await this.lock.extend(this.settings.ttl);
      this.schedule(this.settings.ttl / 3);
    } catch {
      // Not extended. If a quorum no longer holds the lock, extend() marked it lost; otherwise
      // try again while the current lease lasts.
      this.schedule(Math.min(this.settings.retryDelay, this.lock.remainingMs()));
    }
  }
}
