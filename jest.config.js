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
  // The sample imports the library by its package name (tsconfig.json `paths`): the sources.
  moduleNameMapper: {
    '^nestjs-redlock$': '<rootDir>/lib',
    '^nestjs-redlock/terminus$': '<rootDir>/lib/terminus',
  },
};

module.exports = {
  // Two cores on CI: two workers, each test file owning its own Redis fleet.
  maxWorkers: 2,
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.spec.ts'],
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
