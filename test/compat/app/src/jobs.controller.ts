import { Controller, Param, Post } from '@nestjs/common';
// `import type`: a type in a decorated signature must be, under the Nest CLI's
// isolatedModules + emitDecoratorMetadata (TS1272).
import type { Lock } from 'nestjs-redlock';
import { CurrentLock, Locked } from 'nestjs-redlock';
import { Ledger } from './ledger.service.js';

/** `@Locked` on a route, with the lock injected by `@CurrentLock()`. */
@Controller('jobs')
export class JobsController {
  constructor(private readonly ledger: Ledger) {}

  @Post(':id')
  @Locked('job:{id}')
  async run(@Param('id') id: string, @CurrentLock() lock: Lock) {
    await this.ledger.record(id);
    return { resources: lock.resources, remaining: lock.remainingMs() > 0 };
  }
}
