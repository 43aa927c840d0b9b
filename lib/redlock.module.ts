import { Module, type NestModule } from '@nestjs/common';
import { DiscoveryModule, ModuleRef } from '@nestjs/core';
import { LockedExplorer } from './locked.explorer';
import { ConfigurableRedlockModule, REDLOCK_MODULE_OPTIONS } from './redlock.module-definition';
import { RedlockService } from './redlock.service';

/**
 * Registers {@link RedlockService} and `@Locked` (the interceptor for handlers, the explorer
 * that wraps provider methods at bootstrap). Global by default (`isGlobal: false` to opt out;
 * then import it wherever `@Locked` or `RedlockService` is used).
 *
 * @example
 * RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'] })
 *
 * @example
 * RedlockModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ nodes: config.get('LOCK_NODES').split(',') }),
 * })
 */
@Module({
  imports: [DiscoveryModule],
  providers: [RedlockService, LockedExplorer],
  // The options are exported for LockedInterceptor, which Nest instantiates in the module of
  // each @Locked controller (it reads `mapLockedError`).
  exports: [RedlockService, REDLOCK_MODULE_OPTIONS],
})
export class RedlockModule extends ConfigurableRedlockModule implements NestModule {
  // ModuleRef rather than the explorer itself: the module class is public API, and its
  // constructor's parameter types appear in the API report; the explorer is internal.
  constructor(private readonly moduleRef: ModuleRef) {
    super();
  }

  /**
   * Called by Nest while it registers the modules of an HTTP application, before it builds the
   * routes: `@Locked` route handlers are prepared to lock without the interceptor (issue 26).
   */
  configure(): void {
    this.moduleRef.get(LockedExplorer, { strict: true }).prepareRoutes();
  }
}
