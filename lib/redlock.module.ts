import { Module } from '@nestjs/common';
import { ConfigurableRedlockModule } from './redlock.module-definition';
import { RedlockService } from './redlock.service';

/**
 * Registers {@link RedlockService}. Global by default (`isGlobal: false` to opt out).
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
  providers: [RedlockService],
  exports: [RedlockService],
})
export class RedlockModule extends ConfigurableRedlockModule {}
