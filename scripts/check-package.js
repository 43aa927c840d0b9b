// Checks the package as users get it, after `npm run build`:
// - both builds (`require` → dist/index.js, `import` → dist/index.mjs, through the `exports` map)
//   expose the public names docs/architecture.md §4 promises, each with its own declarations, and so does
//   `nestjs-redlock/testing` and `nestjs-redlock/terminus` (each built on the main entry of its
//   own format, not a copy of it), and `nestjs-redlock/adapters` (a bundle of its own, whose
//   errors are recognised across copies);
// - the two builds loaded side by side (the dual-package hazard) share their module state and
//   recognise each other's errors with `instanceof`;
// - `npm pack` ships exactly the intended files;
// - publint and @arethetypeswrong/cli find nothing wrong in the packed tarball.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const pkg = require(path.join(root, 'package.json'));
const failures = [];
const fail = (message) => failures.push(message);

const required = [
  'Redlock',
  'RedlockModule',
  'RedlockService',
  'RedlockError',
  'LockNotAcquiredError',
  'LockLostError',
  'RedlockConfigError',
  'LockResourceError',
  'Locked',
  'CurrentLock',
  'LockedInterceptor',
];

/** Exactly what `npm pack` must ship (npm adds package.json itself). */
const expectedFiles = [
  'CHANGELOG.md',
  'LICENSE',
  'README.md',
  'dist/index.d.mts',
  'dist/index.d.ts',
  'dist/index.js',
  'dist/index.mjs',
  'dist/adapters/index.d.mts',
  'dist/adapters/index.d.ts',
  'dist/adapters/index.js',
  'dist/adapters/index.mjs',
  'dist/testing/index.d.mts',
  'dist/testing/index.d.ts',
  'dist/testing/index.js',
  'dist/testing/index.mjs',
  'dist/terminus/index.d.mts',
  'dist/terminus/index.d.ts',
  'dist/terminus/index.js',
  'dist/terminus/index.mjs',
  'docs/architecture.md',
  'docs/development.md',
  'docs/fair-hand-off.md',
  'docs/guarantees.md',
  'docs/locked.md',
  'docs/migrating.md',
  'docs/operations.md',
  'docs/performance.md',
  'docs/recipes.md',
  'docs/redis-nodes.compose.yml',
  'docs/redis-nodes.sh',
  'docs/restart-search.md',
  'docs/testing.md',
  'adapters/package.json',
  'package.json',
  'terminus/package.json',
  'testing/package.json',
];

/** What `nestjs-redlock/testing` exports. */
const requiredTesting = ['RedlockTestingModule', 'RedlockTesting', 'InMemoryRedisNode'];

/** What `nestjs-redlock/adapters` exports: the protocol, the adapters and their errors. */
const requiredAdapters = [
  'ScriptedNode',
  'IoredisNode',
  'IoredisTransport',
  'NodeRedisNode',
  'NodeRedisTransport',
  'NodeTimeoutError',
  'KeyTypeConflict',
  'DescribedNodeError',
];

/** What `nestjs-redlock/terminus` exports. */
const requiredTerminus = ['RedlockHealthIndicator'];

function run(command, args, options = {}) {
  return execFileSync(command, args, { cwd: root, encoding: 'utf8', ...options });
}

async function main() {
  // 1. Both builds, resolved by the package's own name (self-reference goes through `exports`).
  const cjs = require(pkg.name);
  const esm = await import(pkg.name);
  for (const [format, api] of [
    ['require', cjs],
    ['import', esm],
  ]) {
    const missing = required.filter((name) => typeof api[name] !== 'function');
    if (missing.length > 0) fail(`${format}: missing ${missing.join(', ')}`);
    const target = pkg.exports['.'][format];
    for (const file of [target.types, target.default]) {
      if (!fs.existsSync(path.join(root, file))) fail(`${format}: ${file} does not exist`);
    }
  }
  const cjsTesting = require(`${pkg.name}/testing`);
  const esmTesting = await import(`${pkg.name}/testing`);
  for (const [format, api] of [
    ['require', cjsTesting],
    ['import', esmTesting],
  ]) {
    const missing = requiredTesting.filter((name) => typeof api[name] !== 'function');
    if (missing.length > 0) fail(`${format} ${pkg.name}/testing: missing ${missing.join(', ')}`);
    const target = pkg.exports['./testing'][format];
    for (const file of [target.types, target.default]) {
      if (!fs.existsSync(path.join(root, file))) fail(`${format}: ${file} does not exist`);
    }
  }
  const cjsTerminus = require(`${pkg.name}/terminus`);
  const esmTerminus = await import(`${pkg.name}/terminus`);
  for (const [format, api] of [
    ['require', cjsTerminus],
    ['import', esmTerminus],
  ]) {
    const missing = requiredTerminus.filter((name) => typeof api[name] !== 'function');
    if (missing.length > 0) fail(`${format} ${pkg.name}/terminus: missing ${missing.join(', ')}`);
    const target = pkg.exports['./terminus'][format];
    for (const file of [target.types, target.default]) {
      if (!fs.existsSync(path.join(root, file))) fail(`${format}: ${file} does not exist`);
    }
  }
  const cjsAdapters = require(`${pkg.name}/adapters`);
  const esmAdapters = await import(`${pkg.name}/adapters`);
  for (const [format, api] of [
    ['require', cjsAdapters],
    ['import', esmAdapters],
  ]) {
    const missing = requiredAdapters.filter((name) => typeof api[name] !== 'function');
    if (missing.length > 0) fail(`${format} ${pkg.name}/adapters: missing ${missing.join(', ')}`);
    const target = pkg.exports['./adapters'][format];
    for (const file of [target.types, target.default]) {
      if (!fs.existsSync(path.join(root, file))) fail(`${format}: ${file} does not exist`);
    }
  }
  // Every exported class or function keeps its own name in both builds: the build turns
  // esbuild's keepNames off (tsup.config.ts: a defineProperty per closure on the hot path), so a
  // bundling collision would rename a class (`Foo` -> `Foo2`), and an error's `name` is its
  // class's (lib/core/errors.ts).
  for (const [entry, api] of [
    ['.', cjs],
    ['.', esm],
    ['testing', cjsTesting],
    ['testing', esmTesting],
    ['terminus', cjsTerminus],
    ['terminus', esmTerminus],
    ['adapters', cjsAdapters],
    ['adapters', esmAdapters],
  ]) {
    for (const [name, value] of Object.entries(api)) {
      if (typeof value === 'function' && value.name !== name) {
        fail(`${entry}: export ${name} is named ${JSON.stringify(value.name)} in the build`);
      }
    }
  }
  // The adapters entry bundles its own copy of the errors an adapter throws; the core knows them
  // by brand, as it knows the errors of the other format's build.
  for (const name of ['NodeTimeoutError', 'KeyTypeConflict']) {
    if (!(new cjsAdapters[name]('x') instanceof esmAdapters[name])) {
      fail(`adapters: a require-built ${name} is not instanceof the import-built one`);
    }
  }
  if (new Error('x') instanceof esmAdapters.NodeTimeoutError) {
    fail('adapters: a plain Error is instanceof NodeTimeoutError');
  }
  // The testing and terminus entries must use the main entry of their own format, not a bundled
  // copy: a copy would bring its own RedlockService class, another injection token than the app's.
  for (const [format, main, testing, terminus] of [
    ['require', cjs, cjsTesting, cjsTerminus],
    ['import', esm, esmTesting, esmTerminus],
  ]) {
    if (!(testing.TestingRedlockService.prototype instanceof main.RedlockService)) {
      fail(`${format}: ${pkg.name}/testing does not extend the main entry's RedlockService`);
    }
    const injected = Reflect.getMetadata('design:paramtypes', terminus.RedlockHealthIndicator);
    if (!Array.isArray(injected) || injected[0] !== main.RedlockService) {
      fail(`${format}: ${pkg.name}/terminus does not inject the main entry's RedlockService`);
    }
  }
  if (cjs.RedlockModule === esm.RedlockModule) {
    fail('import and require loaded the same file: the exports map does not split by format');
  }

  // 2. The dual-package hazard: errors of one copy are instances of the other's classes (the HTTP
  //    mapping uses instanceof), user subclasses still work, and module state is one per process.
  const fromCjs = new cjs.LockNotAcquiredError(['r'], 'held', 1, []);
  const fromEsm = new esm.LockLostError(['r']);
  const instanceChecks = [
    [
      'cjs LockNotAcquiredError instanceof esm LockNotAcquiredError',
      fromCjs instanceof esm.LockNotAcquiredError,
      true,
    ],
    [
      'cjs LockNotAcquiredError instanceof esm RedlockError',
      fromCjs instanceof esm.RedlockError,
      true,
    ],
    ['esm LockLostError instanceof cjs LockLostError', fromEsm instanceof cjs.LockLostError, true],
    [
      'esm LockLostError instanceof cjs LockNotAcquiredError',
      fromEsm instanceof cjs.LockNotAcquiredError,
      false,
    ],
    ['a plain Error instanceof RedlockError', new Error('x') instanceof esm.RedlockError, false],
  ];
  class UserError extends cjs.LockNotAcquiredError {}
  instanceChecks.push(
    [
      'esm LockNotAcquiredError instanceof a user subclass',
      new esm.LockNotAcquiredError(['r'], 'held', 1, []) instanceof UserError,
      false,
    ],
    [
      'a user subclass instance instanceof esm LockNotAcquiredError',
      new UserError(['r'], 'held', 1, []) instanceof esm.LockNotAcquiredError,
      true,
    ],
  );
  for (const [what, actual, expected] of instanceChecks) {
    if (actual !== expected) fail(`dual package: ${what} is ${actual}, expected ${expected}`);
  }
  const shared = Object.getOwnPropertySymbols(globalThis).filter((s) =>
    String(s.description).startsWith('nestjs-redlock:'),
  );
  if (!shared.some((s) => s.description === 'nestjs-redlock:lockedScope@1')) {
    fail(
      'dual package: the @CurrentLock scope is not on globalThis (each copy would have its own)',
    );
  }

  // 2b. OpenTelemetry: each build imports the optional @opentelemetry/api lazily (a dynamic
  //     import, which both formats have) and traces to a provider registered by the app.
  {
    const { trace } = require('@opentelemetry/api');
    const otel = require('@opentelemetry/sdk-trace-base');
    const exporter = new otel.InMemorySpanExporter();
    trace.setGlobalTracerProvider(
      new otel.BasicTracerProvider({ spanProcessors: [new otel.SimpleSpanProcessor(exporter)] }),
    );
    const quiet = { log() {}, warn() {}, error() {} };
    for (const [format, main, testing] of [
      ['require', cjs, cjsTesting],
      ['import', esm, esmTesting],
    ]) {
      exporter.reset();
      const nodes = ['a', 'b', 'c'].map((name) => new testing.InMemoryRedisNode(name));
      const redlock = new main.Redlock(nodes, { logger: quiet });
      await (await redlock.acquire('otel-check')).release();
      await redlock.close();
      const names = exporter.getFinishedSpans().map((span) => span.name);
      if (names.join() !== 'redlock.acquire,redlock.release') {
        fail(`${format}: OpenTelemetry spans ${JSON.stringify(names)}, expected acquire, release`);
      }
    }
    trace.disable();
  }

  // 3. The packed file list, exactly.
  const [packed] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts']));
  const files = packed.files.map((f) => f.path).sort();
  const extra = files.filter((f) => !expectedFiles.includes(f));
  const absent = expectedFiles.filter((f) => !files.includes(f));
  if (extra.length > 0) fail(`npm pack ships unexpected files: ${extra.join(', ')}`);
  if (absent.length > 0) fail(`npm pack does not ship: ${absent.join(', ')}`);

  // 4. publint and attw on the real tarball.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-redlock-pack-'));
  try {
    const [{ filename }] = JSON.parse(
      run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir]),
    );
    const tarball = path.join(dir, filename);
    for (const [name, args] of [
      ['publint', [path.join(root, 'node_modules/publint/src/cli.js'), 'run', tarball, '--strict']],
      [
        'attw',
        [
          path.join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js'),
          tarball,
          '--format',
          'table-flipped',
          '--no-color',
          '--no-emoji',
        ],
      ],
    ]) {
      try {
        const out = run(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        console.log(`-- ${name}\n${out.trim()}`);
      } catch (error) {
        console.log(
          `-- ${name}\n${String(error.stdout ?? '').trim()}\n${String(error.stderr ?? '').trim()}`,
        );
        fail(`${name} reported problems in ${filename}`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }

  if (failures.length > 0) {
    console.error(`Package check failed:\n- ${failures.join('\n- ')}`);
    process.exit(1);
  }
  console.log(
    `${pkg.name}: ${required.length} public names in both builds (require + import), ` +
      `errors and state shared across them, OpenTelemetry spans from both, ${files.length} packed files as expected:\n  ${files.join('\n  ')}`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
