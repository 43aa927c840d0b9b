import { Catch, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { defaultLockedErrorMapper, RedlockError } from 'nestjs-redlock';

/** In an HTTP app: lock errors thrown below a handler get @Locked's HTTP answers (409, 503…). */
@Catch(RedlockError)
export class LockErrorsFilter extends BaseExceptionFilter {
  override catch(error: RedlockError, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse<{ setHeader(n: string, v: string): void }>();
    const mapped = defaultLockedErrorMapper(error, {
      type: 'http',
      stage: 'acquire',
      setHeader: (name, value) => response.setHeader(name, value),
    });
    return super.catch(mapped, host);
  }
}
