import { Test } from '@nestjs/testing';
import { REDLOCK_DEFAULTS, RedlockConfigError, RedlockModule, RedlockService } from '../../lib';
import { resolveOptions } from '../../lib/core/options';

/** The `telemetry` option (issue 11 item 2): validated like every other, known to the module. */
describe('telemetry option', () => {
  it('defaults to on (a no-op without @opentelemetry/api or a registered provider)', () => {
    expect(REDLOCK_DEFAULTS.telemetry).toBe(true);
    expect(resolveOptions({}).telemetry).toBe(true);
  });

  it.each([true, false, {}, { recordResources: true }, { recordResources: undefined }])(
    'accepts %p',
    (telemetry) => {
      expect(resolveOptions({ telemetry }).telemetry).toEqual(telemetry);
    },
  );

  it.each([
    ['a string', 'yes', 'telemetry'],
    ['null', null, 'telemetry'],
    ['an array', [], 'telemetry'],
    ['a typo inside', { recordResource: true }, 'telemetry.recordResource'],
    ['a non-boolean setting', { recordResources: 1 }, 'telemetry.recordResources'],
  ])('refuses %s, naming the option', (_, telemetry, option) => {
    expect(() => resolveOptions({ telemetry } as never)).toThrow(RedlockConfigError);
    expect(() => resolveOptions({ telemetry } as never)).toThrow(
      expect.objectContaining({ option }),
    );
  });

  it('is an option RedlockModule knows, and checks at bootstrap', async () => {
    const good = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          nodes: ['redis://127.0.0.1:1'],
          telemetry: { recordResources: false },
        }),
      ],
    }).compile();
    expect(good.get(RedlockService)).toBeInstanceOf(RedlockService);
    await good.close();
    await expect(
      Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'], telemetry: 'on' } as never),
        ],
      }).compile(),
    ).rejects.toMatchObject({ option: 'telemetry' });
  });
});
