import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { Locked } from 'nestjs-redlock';
import { StockStore, type Outcome } from './stock.store.js';

/** A BullMQ consumer (bullmq.main), ten jobs at a time per instance: the job names the lock. */
@Processor('stock', { concurrency: 10 })
export class StockProcessor extends WorkerHost {
  constructor(private readonly store: StockStore) {
    super();
  }

  @Locked('stock:{args.0.data.id}', { wait: 10_000 })
  async process(job: Job<{ id: string }>): Promise<Outcome> {
    return this.store.decrement(job.data.id);
  }
}

/** One attempt at the lock: a busy lock fails the job, and BullMQ retries it (attempts). */
@Processor('stock-try')
export class TryStockProcessor extends WorkerHost {
  constructor(private readonly store: StockStore) {
    super();
  }

  @Locked('stock:{args.0.data.id}', { wait: 0 })
  async process(job: Job<{ id: string }>): Promise<Outcome> {
    return this.store.decrement(job.data.id);
  }
}

/** `onBusy: 'skip'` would complete jobs that never ran: the library refuses it at bootstrap. */
@Processor('stock-skip')
export class SkippingStockProcessor extends WorkerHost {
  constructor(private readonly store: StockStore) {
    super();
  }

  @Locked('stock:{args.0.data.id}', { onBusy: 'skip' })
  async process(job: Job<{ id: string }>): Promise<Outcome> {
    return this.store.decrement(job.data.id);
  }
}
