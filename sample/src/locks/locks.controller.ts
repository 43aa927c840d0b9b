import { BadRequestException, Controller, Get, Param, UseGuards } from '@nestjs/common';
import {
  LockResourceError,
  RedlockService,
  type HeldLockInfo,
  type LockInspection,
} from 'nestjs-redlock';
import { AdminTokenGuard } from './admin-token.guard';

/** `GET /locks/:resource`: what an operator sees. */
export interface LocksView {
  /** What every lock node says about the resource now (holders as opaque tags). */
  readonly inspection: LockInspection;
  /** Every lock this instance holds now, whatever its resources. */
  readonly heldLocks: readonly HeldLockInfo[];
}

/**
 * A read-only admin view of the locks, behind {@link AdminTokenGuard}. It never shows an owner
 * value — `inspect()` gives a short hash of it, enough to tell "one holder on 3 nodes" from a
 * split, useless to release or extend the lock — and it takes no lock itself.
 *
 * @example
 * curl -H "x-admin-token: $ADMIN_TOKEN" localhost:3000/locks/stock:42
 */
@Controller('locks')
@UseGuards(AdminTokenGuard)
export class LocksController {
  constructor(private readonly redlock: RedlockService) {}

  /** The resource on every lock node, and the locks this instance holds. */
  @Get(':resource')
  async show(@Param('resource') resource: string): Promise<LocksView> {
    try {
      return {
        inspection: await this.redlock.inspect(resource),
        heldLocks: this.redlock.heldLocks(),
      };
    } catch (error) {
      // A name the lock would refuse (empty, too long): the caller's mistake.
      if (error instanceof LockResourceError) throw new BadRequestException(error.message);
      throw error;
    }
  }
}
