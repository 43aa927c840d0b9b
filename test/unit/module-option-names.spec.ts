import { Test } from '@nestjs/testing';
import { RedlockConfigError, RedlockModule } from '../../lib';

/**
 * A module option RedlockModule does not know fails the bootstrap, like a `@Locked` option typo
 * (issue 10 item 7). The constructor throws before any connection is opened: no Redis needed.
 */
async function bootstrapError(module: ReturnType<typeof RedlockModule.forRoot>): Promise<unknown> {
  return Test.createTestingModule({ imports: [module] })
    .compile()
    .then(
      async (moduleRef) => {
        await moduleRef.close();
        return undefined;
      },
      (error: unknown) => error,
    );
}

describe('RedlockModule options: unknown names fail the bootstrap', () => {
  it('a typo (tll) is a RedlockConfigError naming it, its value and the option meant', async () => {
    const error = await bootstrapError(
      RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'], tll: 5_000 } as never),
    );
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(error).toMatchObject({ option: 'tll', value: 5_000 });
    expect((error as Error).message).toMatch(
      /^Invalid option tll: is not an option of RedlockModule \(did you mean ttl\?\)/,
    );
  });

  it('also through forRootAsync (the factory result is checked)', async () => {
    const error = await bootstrapError(
      RedlockModule.forRootAsync({
        useFactory: () => ({ nodes: ['redis://127.0.0.1:1'], nodeTimout: 100 }) as never,
      }),
    );
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as Error).message).toMatch(
      /nodeTimout: is not an option .*did you mean nodeTimeout\?/,
    );
  });

  it('logger is refused with the way to log', async () => {
    const error = await bootstrapError(
      RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'], logger: console } as never),
    );
    expect((error as Error).message).toMatch(
      /logger: is not an option of RedlockModule: it logs through Nest's Logger/,
    );
  });

  it('a name far from every option gets no suggestion', async () => {
    const error = await bootstrapError(
      RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'], colour: 'blue' } as never),
    );
    expect((error as Error).message).toMatch(
      /colour: is not an option of RedlockModule; expected one of nodes, /,
    );
  });

  it('the list names the extras (isGlobal, lockErrorFilter) and not the test-only clock (issue 25)', async () => {
    const error = await bootstrapError(
      RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'], colour: 'blue' } as never),
    );
    const expected = (error as Error).message.replace(/^.*expected one of /s, '');
    const names = expected.replace(/, got .*$/s, '').split(', ');
    expect(names).toEqual(expect.arrayContaining(['isGlobal', 'lockErrorFilter', 'awaitQuorum']));
    expect(names).not.toContain('clock');
  });

  it('a typo of an extra gets its "did you mean"; an extra returned by a forRootAsync factory says where it goes', async () => {
    const typo = await bootstrapError(
      RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'], isGlobl: false } as never),
    );
    expect((typo as Error).message).toMatch(/isGlobl: is not an option .*did you mean isGlobal\?/);
    const misplaced = await bootstrapError(
      RedlockModule.forRootAsync({
        useFactory: () => ({ nodes: ['redis://127.0.0.1:1'], isGlobal: false }) as never,
      }),
    );
    expect((misplaced as Error).message).toMatch(
      /isGlobal: is an option of RedlockModule\.forRootAsync\(\{ isGlobal, useFactory… \}\) itself/,
    );
  });
});
