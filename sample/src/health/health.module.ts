import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedlockHealthIndicator } from 'nestjs-redlock/terminus';
import { HealthController } from './health.controller';

/**
 * The health check: `TerminusModule` provides the `HealthIndicatorService` the indicator builds
 * its result with; `RedlockService` comes from the global `RedlockModule`.
 */
@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [RedlockHealthIndicator],
})
export class HealthModule {}
