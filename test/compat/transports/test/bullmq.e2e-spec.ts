// BullMQ consumers on two instances (queues in the stock's Redis node): jobs on one item never
// overlap; a busy lock fails the job and BullMQ's retry runs it once the lock is free; an outage
// fails the job; onBusy 'skip' (which would complete jobs that never ran) does not boot. A job's
// failedReason and stacktrace, which anyone with a queue dashboard reads, name no resource and no
// node (architecture.md §5.12, extended to queues by issue 25).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue, QueueEvents, type Job } from 'bullmq';
import { env } from '../src/env.js';
import type { Outcome } from '../src/stock.store.js';
import {
  assertExclusion,
  hangMajority,
  holdLock,
  startInstances,
  stopInstances,
  Store,
  type Instance,
} from './harness.js';

const store = new URL(env('REDLOCK_COMPAT_STORE'));

/** A failed job's record names neither the lock's resource nor a node (issue 25). */
function assertNothingLeaked(job: Job | undefined, id: string): void {
  const record = `${job?.failedReason ?? ''}\n${(job?.stacktrace ?? []).join('\n')}`;
  assert.ok(job?.failedReason, 'the job has no failedReason');
  assert.doesNotMatch(record, new RegExp(`stock:|${id}|127\\.0\\.0\\.1`), record);
  for (const url of env('REDLOCK_COMPAT_NODES').split(',')) {
    assert.ok(!record.includes(new URL(url).port), record);
  }
}
const connection = { host: store.hostname, port: Number(store.port) };

describe('BullMQ: @Locked processors on two instances', { timeout: 180_000 }, () => {
  let instances: Instance[] = [];
  const stock = new Store();
  const queue = new Queue('stock', { connection });
  const tryQueue = new Queue('stock-try', { connection });
  const events = new QueueEvents('stock', { connection });
  const tryEvents = new QueueEvents('stock-try', { connection });

  before(async () => {
    await Promise.all([events.waitUntilReady(), tryEvents.waitUntilReady()]);
    instances = await startInstances('bullmq');
  });

  after(async () => {
    await stopInstances(instances);
    await Promise.all([queue, tryQueue, events, tryEvents].map((q) => q.close()));
    await stock.close();
  });

  it('50 jobs on one item, consumed by both instances: never oversold, no overlap', async () => {
    await assertExclusion(stock, 'bullmq-x', async (): Promise<Outcome | 'busy'> => {
      const job = await queue.add('decrement', { id: 'bullmq-x' });
      return (await job.waitUntilFinished(events, 60_000)) as Outcome;
    });
  });

  it('a held lock fails the attempt; BullMQ retries and the job runs once, after release', async () => {
    const id = 'bullmq-busy';
    await stock.seed(id, 5);
    const held = await holdLock(id);
    const job = await tryQueue.add(
      'decrement',
      { id },
      { attempts: 5, backoff: { type: 'fixed', delay: 500 } },
    );
    let failedReason = '';
    try {
      // The first attempt meets the held lock.
      const deadline = Date.now() + 20_000;
      let state: Job | undefined;
      while (!(state = await tryQueue.getJob(job.id!))?.attemptsMade && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      failedReason = state?.failedReason ?? '';
      console.log(`answer: busy: attempt ${state?.attemptsMade} failed: ${failedReason}`);
      assert.ok(state && state.attemptsMade >= 1, 'no attempt was made');
      assertNothingLeaked(state, id);
      assert.equal((await stock.read(id)).stock, 5, 'the job ran without the lock');
    } finally {
      await held.release();
    }
    const outcome = (await job.waitUntilFinished(tryEvents, 30_000)) as Outcome;
    assert.equal(outcome.ok, true);
    assert.equal((await stock.read(id)).stock, 4, 'the job ran more or less than once');
  });

  // Last but one: it hangs two of the three lock nodes and resumes them.
  it('a majority of lock nodes hung → the job fails (unavailable); it did not run', async () => {
    const id = 'bullmq-down';
    await stock.seed(id, 5);
    const resume = hangMajority();
    let failedReason = '';
    try {
      const job = await tryQueue.add('decrement', { id }, { attempts: 1 });
      const error = await job.waitUntilFinished(tryEvents, 30_000).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof Error, 'the job completed');
      const failed = await tryQueue.getJob(job.id!);
      failedReason = failed?.failedReason ?? '';
      console.log(`answer: unavailable: job failed: ${failedReason}`);
      assertNothingLeaked(failed, id);
    } finally {
      resume();
    }
    assert.equal((await stock.read(id)).stock, 5, 'the job ran without the lock');
  });

  it("onBusy 'skip' on a processor fails the bootstrap, saying why", async () => {
    const error = await startInstances('bullmq-skip').then(
      async (started) => {
        await stopInstances(started);
        return undefined;
      },
      (e: unknown) => e,
    );
    assert.ok(error instanceof Error, 'an app with a skipping processor started');
    console.log(`answer: skip: ${error.message.split('\n').find((l) => /skip/.test(l))}`);
    assert.match(error.message, /onBusy/);
    assert.match(error.message, /skip/);
    assert.match(error.message, /exited \(1\)/);
  });
});
