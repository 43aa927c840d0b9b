import {
  ForbiddenException,
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { ADMIN_TOKEN, ADMIN_TOKEN_HEADER } from './locks.constants';

/**
 * Lets a request through only with the configured admin token in `x-admin-token`: 401 without
 * the header, 403 with a wrong one — and 403 for every request when no token is configured
 * (`ADMIN_TOKEN` unset), so the admin routes are closed unless someone opened them.
 *
 * A sample-sized guard: in an app, put the admin routes behind your real authentication.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected?: Buffer;

  constructor(@Inject(ADMIN_TOKEN) token: string | undefined) {
    this.expected = token ? digest(token) : undefined;
  }

  /** @throws UnauthorizedException without the header, ForbiddenException with a wrong token */
  canActivate(context: ExecutionContext): boolean {
    const headers = context.switchToHttp().getRequest<{ headers: IncomingHttpHeaders }>().headers;
    const given = headers[ADMIN_TOKEN_HEADER];
    if (typeof given !== 'string' || given === '') {
      throw new UnauthorizedException(`The ${ADMIN_TOKEN_HEADER} header is required`);
    }
    // Digests of equal length, compared in constant time: the answer's timing says nothing about
    // how much of the token was right.
    if (this.expected === undefined || !timingSafeEqual(digest(given), this.expected)) {
      throw new ForbiddenException();
    }
    return true;
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
