import { Module, type DynamicModule } from '@nestjs/common';
import { AdminTokenGuard } from './admin-token.guard';
import { ADMIN_TOKEN } from './locks.constants';
import { LocksController } from './locks.controller';

/**
 * The admin view of the locks (`GET /locks/:resource`), closed unless `adminToken` is set.
 * Needs `RedlockModule` (global).
 *
 * @example
 * LocksModule.register({ adminToken: process.env.ADMIN_TOKEN })
 */
@Module({})
export class LocksModule {
  /** The module, with the token its guard requires (`undefined`: every request is refused). */
  static register(options: { adminToken?: string }): DynamicModule {
    return {
      module: LocksModule,
      controllers: [LocksController],
      providers: [{ provide: ADMIN_TOKEN, useValue: options.adminToken }, AdminTokenGuard],
    };
  }
}
