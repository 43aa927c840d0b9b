import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { RedlockHealthIndicator } from 'nestjs-redlock/terminus';

/**
 * `GET /health`: 200 `{ status: 'ok', … }` while a quorum of the lock nodes answers, 503
 * `{ status: 'error', … }` otherwise, with each lock node's status and PING latency under
 * `details.redlock`. The stock Redis is not checked here: the sample is about the lock.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redlock: RedlockHealthIndicator,
  ) {}

  /** The health check (not cached: `@HealthCheck()` sets `Cache-Control: no-cache`). */
  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.redlock.check('redlock')]);
  }
}
