import { Module } from '@nestjs/common';
import { RedlockModule } from 'nestjs-redlock';
import { JobsController } from './jobs.controller.js';
import { Ledger } from './ledger.service.js';

/** The nodes the compat driver started (real redis-server processes on 127.0.0.1). */
export function compatNodes(): string[] {
  const nodes = (process.env.REDLOCK_COMPAT_NODES ?? '').split(',').filter(Boolean);
  if (nodes.length === 0)
    throw new Error('REDLOCK_COMPAT_NODES is not set: run npm run test:compat');
  return nodes;
}

/** A small app as a user would write it: the module, a locked controller, a locking service. */
@Module({
  imports: [
    RedlockModule.forRoot({
      nodes: compatNodes(),
      ttl: 2_000,
      // As the transports app (env.ts): at 100 ms, a CI host with both cores busy and the matrix's
      // cells running side by side stalled this process long enough for a node's reply (or its
      // INFO read at connection) to time out, and a node then left out of the count (suspected,
      // or not yet identified) made "a busy route" answer 409 without Retry-After — documented:
      // the header comes when the blocking lease is known (README, docs/locked.md). Seen in both
      // Nest 11 cells of one CI run (stop 42); not about what this app tests.
      nodeTimeout: 500,
      wait: 0,
      keyPrefix: `compat:${process.pid}:`,
    }),
  ],
  controllers: [JobsController],
  providers: [Ledger],
})
export class AppModule {}
