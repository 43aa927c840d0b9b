import { defineConfig } from 'tsup';

/**
 * The published build: one ESM bundle (`import`) and one CommonJS bundle (`require`), each with
 * its own declarations (`.d.mts` / `.d.ts`), so that a Nest 12 ESM app and a Nest 11 CommonJS
 * app load a file of their own format. Bundling (rather than emitting one file per source) means
 * the sources keep their extension-less relative imports, which Node's ESM loader would reject.
 *
 * Decorators: tsup hands the sources to swc (`@swc/core`) because tsconfig sets
 * `emitDecoratorMetadata`; esbuild alone drops the `design:paramtypes` metadata Nest's
 * dependency injection reads.
 *
 * Both bundles may be loaded by one app (a CommonJS dependency requiring us while the app
 * imports us): the state they must share lives on `globalThis` (lib/shared-state.ts) and the
 * error classes recognise each other's instances (lib/core/errors.ts).
 */
export default defineConfig({
  entry: {
    index: 'lib/index.ts',
    'testing/index': 'lib/testing/index.ts',
    // An entry of its own: @nestjs/terminus is an optional peer, the main entry never loads it.
    'terminus/index': 'lib/terminus/index.ts',
  },
  // nestjs-redlock/testing and nestjs-redlock/terminus import the main entry by the package's
  // name (resolved through `exports` to the same file the app loads), never a bundled copy of
  // it: a second copy would have its own RedlockService class, a different injection token from
  // the app's. (Peer dependencies, @nestjs/terminus among them, are external by default.)
  external: ['nestjs-redlock'],
  format: ['cjs', 'esm'],
  tsconfig: 'tsconfig.build.json',
  target: 'node20',
  platform: 'node',
  dts: {
    // Types resolve `nestjs-redlock` to the sources; the emitted declarations keep importing it.
    compilerOptions: { baseUrl: '.', paths: { 'nestjs-redlock': ['./lib/index.ts'] } },
  },
  // No source maps: they would point at lib/ sources the package does not ship.
  sourcemap: false,
  clean: true,
  splitting: false,
  treeshake: false,
  outDir: 'dist',
  esbuildPlugins: [
    {
      // tsup's swc step (for decorator metadata) turns esbuild's keepNames on, which wraps every
      // closure in `__name(fn, 'name')`, an Object.defineProperty per closure created: on the
      // lock's hot path (a fan-out creates several per call) S1 ran 10-19 % fewer cycles/s with
      // it. Without it a class keeps its name unless the bundle renames it (a collision, or a
      // reference to the class from its own body): error names are their classes' names, so
      // scripts/check-package.js fails when an export is not named as exported.
      name: 'no-keep-names',
      setup(build) {
        build.initialOptions.keepNames = false;
      },
    },
  ],
});
