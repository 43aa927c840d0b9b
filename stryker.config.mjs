/**
 * Mutation testing of the protocol files of lib/core (issue 9 item 5): `npm run mutation`.
 * CPU-heavy (tens of minutes on two cores): not part of `npm test` or CI. The score is in the
 * README's Development section; surviving mutants are explained in
 * test/unit/mutation-survivors.spec.ts or killed by tests there.
 *
 * What runs against each mutant: the unit tests that cover it (per-test coverage) — the core in
 * virtual time over simulated nodes (core-safety, rounds, quorum and its properties, fencing,
 * reentrancy, and the deterministic simulation with a smaller seed count). The Lua scripts'
 * text (scripts.ts) is not mutated as strings: only real Redis runs Lua, and the integration
 * tests that check the scripts against real nodes would cost a fleet per mutant.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */

// The simulation's seed count per mutant: enough to find an overlap a mutant allows, small
// enough that thousands of mutants finish.
process.env.SIM_SEEDS ??= '20';

export default {
  packageManager: 'npm',
  testRunner: 'jest',
  plugins: ['@stryker-mutator/jest-runner'],
  // The protocol files. Override to widen or narrow a run, e.g.
  // `npx stryker run --mutate lib/core/acquisition/rounds.ts`.
  mutate: [
    'lib/core/acquisition/rounds.ts',
    'lib/core/protocol/scripts.ts',
    'lib/core/quorum/quorum.ts',
    'lib/core/lease/lock.ts',
    'lib/core/redlock.ts',
    'lib/core/membership/membership.ts',
    'lib/core/quorum/quarantine.ts',
  ],
  // Log and error message texts are not behaviour the protocol depends on.
  mutator: { excludedMutations: ['StringLiteral'] },
  // Not 'perTest': in this suite (virtual time over setImmediate turns) Stryker's per-test
  // coverage selected too few tests — a run reported acquireRound's quorum check mutated to
  // `if (true)` as surviving, while that mutant fails six tests of core-safety and the
  // simulation when applied by hand. 'all' runs every test against each covered mutant.
  coverageAnalysis: 'all',
  // ignoreStatic needs per-test coverage, which this suite cannot use (above).
  ignoreStatic: false,
  concurrency: 2,
  timeoutMS: 8_000,
  timeoutFactor: 1.5,
  reporters: ['clear-text', 'progress', 'json'],
  // Inside .redis-fleet/, which git already ignores: no .gitignore change for a dev-only tool.
  jsonReporter: { fileName: '.redis-fleet/mutation/mutation.json' },
  tempDirName: '.redis-fleet/stryker-tmp',
  cleanTempDir: true,
  ignorePatterns: ['dist', 'dist-*', 'bench', 'sample', 'docs', 'test/e2e', 'coverage'],
  jest: {
    projectType: 'custom',
    enableFindRelatedTests: false,
    config: {
      preset: 'ts-jest',
      testEnvironment: 'node',
      rootDir: '.',
      transform: {
        '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true }],
      },
      setupFiles: ['<rootDir>/test/setup/disposable.ts'],
      moduleNameMapper: { '^nestjs-redlock$': '<rootDir>/lib' },
      testMatch: [
        '<rootDir>/test/unit/core-safety.spec.ts',
        '<rootDir>/test/unit/rounds.spec.ts',
        '<rootDir>/test/unit/quorum.spec.ts',
        '<rootDir>/test/unit/quorum.property.spec.ts',
        '<rootDir>/test/unit/fencing-quarantine.spec.ts',
        '<rootDir>/test/unit/reentrancy-fencing.spec.ts',
        '<rootDir>/test/unit/simulation.spec.ts',
        '<rootDir>/test/unit/mutation-survivors.spec.ts',
        '<rootDir>/test/unit/lock-mutants.spec.ts',
        '<rootDir>/test/unit/options.spec.ts',
        '<rootDir>/test/unit/resources.spec.ts',
        // The quarantine's ages (redlock.ts ages()), in virtual time over simulated nodes.
        '<rootDir>/test/unit/quarantine-idle.spec.ts',
        '<rootDir>/test/unit/membership.spec.ts',
        '<rootDir>/test/unit/restart-safety.spec.ts',
        '<rootDir>/test/unit/simulation-restarts.spec.ts',
        // The lock manager's events, errors, waits and aborts (redlock.ts), in virtual time.
        '<rootDir>/test/unit/redlock-mutants.spec.ts',
        // How the lock manager feeds OpenTelemetry (redlock.ts's telemetry lines).
        '<rootDir>/test/unit/telemetry-wiring.spec.ts',
      ],
    },
  },
};
