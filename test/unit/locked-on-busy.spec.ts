import { LockNotAcquiredError, RedlockConfigError } from '../../lib';
import { SHUTTING_DOWN } from '../../lib/core/errors';
import { buildLockedMetadata } from '../../lib/locked/locked-metadata';
import { validateLockedOptions } from '../../lib/locked/locked-options';

describe('@Locked onBusy option (validated at decoration time)', () => {
  it("defaults to 'throw' and leaves wait to the module", () => {
    const metadata = buildLockedMetadata('job', {}, '@Locked on Job.run');
    expect(metadata.onBusy).toBe('throw');
    expect(metadata.lockOptions.wait).toBeUndefined();
  });

  it("'skip' makes wait 0 unless wait is given: a skipping job must not queue behind the winner", () => {
    expect(validateLockedOptions({ onBusy: 'skip' }, 'here').wait).toBe(0);
    expect(validateLockedOptions({ onBusy: 'skip', wait: 250 }, 'here').wait).toBe(250);
    expect(validateLockedOptions({ onBusy: 'throw' }, 'here').wait).toBeUndefined();
    expect(buildLockedMetadata('job', { onBusy: 'skip' }, 'here').onBusy).toBe('skip');
  });

  it('does not pass onBusy on to acquire()', () => {
    expect(validateLockedOptions({ onBusy: 'skip' }, 'here')).not.toHaveProperty('onBusy');
  });

  it('rejects an unknown value, naming the option and the value', () => {
    const attempt = () => validateLockedOptions({ onBusy: 'ignore' }, '@Locked on Job.run');
    expect(attempt).toThrow(RedlockConfigError);
    expect(attempt).toThrow(/@Locked on Job\.run options\.onBusy.*'throw', 'skip'.*"ignore"/);
  });
});

describe("onBusy: 'skip' decides on the refusal", () => {
  const { skipsWhenBusy } = jest.requireActual<typeof import('../../lib/locked/skip-when-busy')>(
    '../../lib/locked/skip-when-busy',
  );
  const skip = { onBusy: 'skip', where: '@Locked on Job.run' } as never;
  const refusal = (reason: 'held' | 'unavailable', detail?: string) =>
    new LockNotAcquiredError(['job'], reason, 1, [], undefined, detail);

  it('skips a lock held elsewhere and a tick that races the shutdown, not an outage', () => {
    expect(skipsWhenBusy(skip, refusal('held'))).toBe(true);
    expect(skipsWhenBusy(skip, refusal('unavailable', SHUTTING_DOWN))).toBe(true);
    expect(skipsWhenBusy(skip, refusal('unavailable'))).toBe(false);
    expect(skipsWhenBusy({ ...(skip as object), onBusy: 'throw' } as never, refusal('held'))).toBe(
      false,
    );
  });
});
