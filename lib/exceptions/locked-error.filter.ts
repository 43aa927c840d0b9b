import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { BaseExceptionFilter, type HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import {
  LockKeyConflictError,
  LockLostError,
  LockNotAcquiredError,
  LockResourceError,
} from '../core';
import { responseHeaderSetter } from '../locked/response-header';
import type { RedlockModuleOptions } from '../redlock-module-options';
import { LockedCallException } from './locked-call.exception';
import { mapLockedError, type LockedErrorStage } from './locked-error-mapper';
import { answerWs } from './ws-answer';

/**
 * The module's global exception filter (installed by `RedlockModule` unless
 * `lockErrorFilter: false`): the same answers for a busy lock, an outage and a lost lock in
 * every transport (architecture.md §5.12), also when the lock was taken by a `@Locked` provider method
 * deeper in the call (a CQRS command handler called from a controller), whose typed error would
 * otherwise be a 500 / "Internal server error" logged with a stack:
 * - HTTP (Express, Fastify): 409 + `Retry-After` / 503 / 500 (400 for a bad template value);
 * - RPC: the error payload `{ status: 'error', code, message, retryAfterMs? }`, as an
 *   `RpcException` with that object sends it (a hybrid app's microservice needs
 *   `connectMicroservice(options, { inheritAppConfig: true })` to get global filters);
 * - WebSocket: that payload as the `exception` event, as a `WsException` sends it, and to the
 *   client's ack callback when the message had one (a socket.io `emitWithAck` gets an answer).
 *   Nest applies no global filter to gateways: a `@Locked` gateway handler is answered by
 *   `LockedInterceptor` itself; for provider methods called from a gateway, bind this filter
 *   there: `@UseFilters(new LockedErrorFilter())`;
 * - GraphQL: rethrown; graphql-js makes it the field's `GraphQLError` with `extensions.code`.
 *
 * It catches only the typed lock errors and {@link LockedCallException}; the module's
 * `mapLockedError` is asked first (user mappers override). Filters you bind to a controller or
 * a method take precedence over this global one; turn it off with
 * `RedlockModule.forRoot({ …, lockErrorFilter: false })` to answer these errors with your own.
 *
 * @example
 * // Installed for you; to replace it:
 * RedlockModule.forRoot({ nodes, lockErrorFilter: false })
 */
@Catch(
  LockNotAcquiredError,
  LockLostError,
  LockResourceError,
  LockKeyConflictError,
  LockedCallException,
)
export class LockedErrorFilter implements ExceptionFilter {
  /**
   * @param options the module's options (`mapLockedError`).
   * @param adapterHost the application's HTTP adapter, read per error: HTTP answers are sent
   *   through it (Express or Fastify), as Nest's own filter sends them.
   */
  constructor(
    private readonly options: Pick<RedlockModuleOptions, 'mapLockedError'> = {},
    private readonly adapterHost?: HttpAdapterHost,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): Observable<never> | void {
    const type = host.getType<string>();
    const answer = exception instanceof LockedCallException ? exception : this.map(exception, host);
    switch (type) {
      case 'http':
        // Nest's own HTTP answer: the status and body of an HttpException, a logged 500 for
        // anything else a user mapper returned.
        return new BaseExceptionFilter(this.adapterHost?.httpAdapter).catch(answer, host);
      case 'rpc':
        return throwError(() => payloadOf(answer));
      case 'ws':
        return answerWs(host, payloadOf(answer));
      default:
        throw answer;
    }
  }

  /** A typed error (from a provider method deeper in the call) → this transport's answer. */
  private map(exception: unknown, host: ArgumentsHost): unknown {
    const type = host.getType<string>();
    const stage: LockedErrorStage =
      exception instanceof LockLostError
        ? 'hold'
        : exception instanceof LockResourceError
          ? 'resolve'
          : 'acquire';
    const resources = (exception as { resources?: readonly string[] }).resources;
    try {
      return mapLockedError(
        exception,
        {
          type,
          stage,
          resources: stage === 'resolve' ? undefined : resources,
          setHeader:
            type === 'http' ? responseHeaderSetter(host.switchToHttp().getResponse()) : undefined,
        },
        [this.options.mapLockedError],
      );
    } catch (thrown) {
      return thrown;
    }
  }
}

/**
 * The object an RPC or WebSocket caller receives: ours, or — when a user mapper returned an
 * `RpcException` / `WsException` — its error as Nest would send it; anything else is the
 * generic answer Nest gives an unknown error (never its message: it may name resources).
 */
function payloadOf(answer: unknown): unknown {
  if (answer instanceof LockedCallException) return answer.payload;
  const getError = (answer as { getError?: () => unknown } | null)?.getError;
  if (typeof getError === 'function') {
    const error = getError.call(answer);
    return typeof error === 'object' && error !== null
      ? error
      : { status: 'error', message: error };
  }
  return { status: 'error', message: 'Internal server error' };
}
