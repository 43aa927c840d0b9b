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
      nodeTimeout: 100,
      wait: 0,
      keyPrefix: `compat:${process.pid}:`,
    }),
  ],
  controllers: [JobsController],
  providers: [Ledger],
})
export class AppModule {}
