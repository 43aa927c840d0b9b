import { Injectable } from '@nestjs/common';
import { RedlockService } from 'nestjs-redlock';

/** A read-modify-write with an await in the middle: only safe under the lock. */
@Injectable()
export class Ledger {
  private readonly counts = new Map<string, number>();

  constructor(readonly redlock: RedlockService) {}

  async record(id: string): Promise<number> {
    const before = this.counts.get(id) ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 2));
    this.counts.set(id, before + 1);
    return before + 1;
  }

  /** Locks with the service rather than the decorator. */
  recordLocked(id: string): Promise<number> {
    return this.redlock.using(`ledger:${id}`, { wait: 5_000 }, () => this.record(id));
  }

  count(id: string): number {
    return this.counts.get(id) ?? 0;
  }
}
