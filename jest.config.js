/**
 * Three projects so that `npm test` runs everything and each layer can run alone
 * (`npm run test:unit`, `test:integration`, `test:e2e`). Integration and e2e tests
 * start their own real redis-server processes (test/support), so they get longer timeouts.
 * @type {import('jest').Config}
 */
const base = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  rootDir: __dirname,
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: false }],
    // @nestjs/terminus 12 is ESM only; jest runs CommonJS (test/support/esm-package-transformer.js).
    '/node_modules/@nestjs/terminus/.+\\.js$': '<rootDir>/test/support/esm-package-transformer.js',
  },
  transformIgnorePatterns: ['/node_modules/(?!@nestjs/terminus/)'],
  setupFiles: ['<rootDir>/test/setup/disposable.ts'],
  // Stryker's sandbox (a copy of the repository) would give jest's module map duplicates.
  modulePathIgnorePatterns: ['<rootDir>/.redis-fleet/'],
  // The sample imports the library by its package name (tsconfig.json `paths`): the sources.
  moduleNameMapper: {
    // ESM-style relative imports (`./stock.service.js`, as in sample/minimal: the README's app
    // must build in a Nest 12 ESM project too) name the TypeScript file without its extension.
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^nestjs-redlock$': '<rootDir>/lib',
    '^nestjs-redlock/terminus$': '<rootDir>/lib/terminus',
    '^nestjs-redlock/adapters$': '<rootDir>/lib/adapters',
  },
};

/**
 * Specs of the core's behaviour that hold whatever client a node is given as. Not here: the
 * specs of ioredis settings, pub/sub notifications (ioredis only) and faults.spec, whose log
 * assertions are about clients the module creates (a caller's client, as every node-redis
 * client is, gets events but no log lines), and mutual-exclusion.spec, whose 200 waiters poll
 * every 5-25 ms without notifications and could starve one past its 60 s budget on a busy
 * machine (node-redis.spec has its own read-modify-write exclusion test across both adapters).
 */
const NODE_REDIS_SPECS = [
  'validity',
  'release',
  'multi-resource',
  'extension',
  'fencing',
  'quorum-masks',
  'quarantine',
  'stale-cleanup',
];

module.exports = {
  // Two cores on CI: two workers, each test file owning its own Redis fleet.
  maxWorkers: 2,
  // A worker keeps ~40 MB of every test file it ran (a file's modules stay reachable while
  // anything it left open does; --detectLeaks flags some of ours, e.g. a lock manager over URLs
  // never closed), ~2.9 GB by the end of a run. Collecting that heap took many-waiters.spec from
  // 4 s to 15 s on a loaded machine and broke a 400 ms bound in multi-resource.spec: a worker
  // past this is replaced before its next file.
  workerIdleMemoryLimit: '1GB',
  projects: [
    {
      ...base,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.spec.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup/unit-timeout.ts'],
    },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.spec.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup/integration-timeout.ts'],
    },
    {
      // The core's integration specs that do not depend on the client library, run again with
      // every URL node turned into a node-redis client (test/support/node-redis-lib.ts).
      ...base,
      displayName: 'integration-node-redis',
      testMatch: NODE_REDIS_SPECS.map((name) => `<rootDir>/test/integration/${name}.spec.ts`),
      moduleNameMapper: {
        ...base.moduleNameMapper,
        '^\\.\\./\\.\\./lib$': '<rootDir>/test/support/node-redis-lib.ts',
      },
      setupFilesAfterEnv: ['<rootDir>/test/setup/integration-timeout.ts'],
    },
    {
      // The same specs over a third, test-only adapter: a raw RESP socket written against
      // nestjs-redlock/adapters alone (test/support/resp-transport.ts, issue 26).
      ...base,
      displayName: 'integration-resp',
      testMatch: NODE_REDIS_SPECS.map((name) => `<rootDir>/test/integration/${name}.spec.ts`),
      moduleNameMapper: {
        ...base.moduleNameMapper,
        '^\\.\\./\\.\\./lib$': '<rootDir>/test/support/resp-lib.ts',
      },
      setupFilesAfterEnv: ['<rootDir>/test/setup/integration-timeout.ts'],
    },
    {
      ...base,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.spec.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup/e2e-timeout.ts'],
    },
  ],
};
