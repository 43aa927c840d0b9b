import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { lastValueFrom, type Observable } from 'rxjs';
import {
  LockedCallException,
  LockedErrorFilter,
  LockLostError,
  LockNotAcquiredError,
  type LockErrorPayload,
} from '../../lib';

/**
 * LockedErrorFilter (issue 17 item 2) without a transport: what it answers for each typed error
 * in each context type — the lost lock included, which the transport e2e cannot provoke — and
 * that the module's mapLockedError overrides it.
 */

const busy = () => new LockNotAcquiredError(['account:alice@example.com'], 'held', 1, [], 2_500.2);
const lost = () => new LockLostError(['account:alice@example.com']);

function host(type: string, args: unknown[]): ExecutionContextHost {
  const context = new ExecutionContextHost(args);
  context.setType(type);
  return context;
}

describe('LockedErrorFilter', () => {
  it('rpc: the payload as the RPC error, LOCK_LOST for a lost lock', async () => {
    const filter = new LockedErrorFilter();
    const answer = (error: unknown) =>
      lastValueFrom(filter.catch(error, host('rpc', [{}, {}])) as Observable<never>).catch(
        (e: unknown) => e,
      );
    expect(await answer(lost())).toEqual({
      status: 'error',
      code: 'LOCK_LOST',
      message: expect.any(String),
    });
    expect(await answer(busy())).toEqual({
      status: 'error',
      code: 'LOCK_BUSY',
      message: expect.any(String),
      retryAfterMs: 2_501,
    });
    expect(JSON.stringify(await answer(lost()))).not.toContain('alice');
  });

  it('ws: the exception event and the ack, whatever the position of the pattern', () => {
    const emitted: unknown[] = [];
    const acked: unknown[] = [];
    const client = { emit: (event: string, payload: unknown) => emitted.push([event, payload]) };
    const ack = (payload: unknown) => acked.push(payload);
    new LockedErrorFilter().catch(lost(), host('ws', [client, { id: 1 }, ack, 'debit']));
    const payload: LockErrorPayload = {
      status: 'error',
      code: 'LOCK_LOST',
      message: expect.any(String) as unknown as string,
    };
    expect(emitted).toEqual([['exception', payload]]);
    expect(acked).toEqual([payload]);
  });

  it('graphql: rethrows a LockedCallException whose extensions carry the code', () => {
    let thrown: unknown;
    try {
      new LockedErrorFilter().catch(lost(), host('graphql', [{}, {}, {}, {}]));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LockedCallException);
    expect((thrown as LockedCallException).extensions).toEqual({ code: 'LOCK_LOST' });
  });

  it("asks the module's mapLockedError first", async () => {
    const filter = new LockedErrorFilter({
      mapLockedError: (error, ctx) =>
        ctx.type === 'rpc' && error instanceof LockNotAcquiredError
          ? { getError: () => ({ status: 'error', code: 'MINE' }) }
          : undefined,
    });
    const answer = await lastValueFrom(
      filter.catch(busy(), host('rpc', [{}, {}])) as Observable<never>,
    ).catch((e: unknown) => e);
    expect(answer).toEqual({ status: 'error', code: 'MINE' });
  });

  it('http: a lost lock is a 500 sent through the adapter, busy a 409 with Retry-After', () => {
    const replies: { body: unknown; status: number }[] = [];
    const headers: Record<string, string> = {};
    const adapter = {
      reply: (_res: unknown, body: unknown, status: number) => replies.push({ body, status }),
      isHeadersSent: () => false,
      end: () => undefined,
    };
    const response = { setHeader: (name: string, value: string) => (headers[name] = value) };
    const filter = new LockedErrorFilter({}, { httpAdapter: adapter } as never);
    filter.catch(busy(), host('http', [{}, response, () => undefined]));
    filter.catch(lost(), host('http', [{}, response, () => undefined]));
    expect(replies.map((r) => r.status)).toEqual([409, 500]);
    expect(headers['Retry-After']).toBe('3');
    expect(JSON.stringify(replies)).not.toContain('alice');
  });
});
