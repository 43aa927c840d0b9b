// The ESM and CommonJS builds of the package may both be loaded by one app. Each test loads a
// second copy of the modules (jest.isolateModules: fresh module instances, as a second build
// would be) and checks that the copies behave as one.
import * as errors from '../../lib/core/errors';
import { lockedScope } from '../../lib/locked/locked-scope';

function secondCopy<T extends object>(path: string): T {
  let loaded: T | undefined;
  jest.isolateModules(() => {
    loaded = jest.requireActual<T>(path);
  });
  return loaded as T;
}

describe('two copies of the package in one process', () => {
  const other = secondCopy<typeof errors>('../../lib/core/errors');

  it('loads distinct classes (the hazard this guards against)', () => {
    expect(other.LockNotAcquiredError).not.toBe(errors.LockNotAcquiredError);
  });

  it("recognises the other copy's errors with instanceof, class by class", () => {
    const held = new other.LockNotAcquiredError(['r'], 'held', 1, []);
    expect(held instanceof errors.LockNotAcquiredError).toBe(true);
    expect(held instanceof errors.RedlockError).toBe(true);
    expect(held instanceof errors.LockLostError).toBe(false);
    const lost = new errors.LockLostError(['r']);
    expect(lost instanceof other.LockLostError).toBe(true);
    expect(lost instanceof other.LockNotAcquiredError).toBe(false);
    expect(
      new errors.RedlockConfigError('ttl', 0, 'must be > 0') instanceof other.RedlockConfigError,
    ).toBe(true);
  });

  it('does not take a plain Error or a look-alike object for ours', () => {
    expect(new Error('x') instanceof other.RedlockError).toBe(false);
    expect({ name: 'LockNotAcquiredError' } instanceof other.LockNotAcquiredError).toBe(false);
    expect((null as unknown) instanceof other.RedlockError).toBe(false);
  });

  it("keeps a user's subclass exact: a parent's error is not an instance of the subclass", () => {
    class BusyError extends errors.LockNotAcquiredError {}
    expect(new other.LockNotAcquiredError(['r'], 'held', 1, []) instanceof BusyError).toBe(false);
    expect(new BusyError(['r'], 'held', 1, []) instanceof other.LockNotAcquiredError).toBe(true);
  });

  it('shares the @CurrentLock scope', () => {
    const otherScope = secondCopy<{ lockedScope: typeof lockedScope }>(
      '../../lib/locked/locked-scope',
    ).lockedScope;
    expect(otherScope).toBe(lockedScope);
    const seen = lockedScope.run({}, () => otherScope.getStore());
    expect(seen).toEqual({});
  });
});
