import { execFile, execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * The optional peer dependencies are optional (issue 11's acceptance): the built package — its
 * main entry and `nestjs-redlock/testing`, through `require` and through `import` — loads and
 * works when `@nestjs/terminus` and `@opentelemetry/api` cannot be resolved, as when they are not
 * installed. Each build runs in a child Node process with a preload that makes resolving those
 * names fail (test/integration/optional-peers/block-peers.*), against a real Redis node.
 *
 * Against dist/, as users get it: built here when missing or older than the sources.
 */

const root = join(__dirname, '..', '..');
const fixtures = join(__dirname, 'optional-peers');
const run = promisify(execFile);

/** The newest modification time under `dir` (files only), in ms. */
function newest(dir: string): number {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .reduce(
      (latest, entry) => Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs),
      0,
    );
}

/** Builds dist/ unless every built file is newer than every source and build setting. */
function ensureBuilt(): void {
  const built = ['index.js', 'index.mjs', 'testing/index.js', 'testing/index.mjs'].map((file) =>
    join(root, 'dist', file),
  );
  const sources = Math.max(
    newest(join(root, 'lib')),
    ...['package.json', 'tsup.config.ts', 'tsconfig.build.json'].map(
      (f) => statSync(join(root, f)).mtimeMs,
    ),
  );
  const fresh = built.every((file) => {
    try {
      return statSync(file).mtimeMs >= sources;
    } catch {
      return false;
    }
  });
  if (!fresh) execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'ignore' });
}

interface Step {
  ok: boolean;
  code?: string;
  message?: string;
  [result: string]: unknown;
}

/** Runs one build's script with its preload; its report. */
async function usePackage(preload: string[], script: string): Promise<Record<string, Step>> {
  const { stdout } = await run(process.execPath, [...preload, join(fixtures, script)], {
    cwd: root,
    env: { ...process.env, LOCK_NODE_URL: fleet.urls()[0] },
    timeout: 30_000,
  });
  return JSON.parse(stdout) as Record<string, Step>;
}

let fleet: RedisFleet;

beforeAll(async () => {
  ensureBuilt();
  fleet = await startFleet(1);
}, 180_000);

afterAll(async () => {
  await fleet?.stop();
});

describe.each([
  {
    build: 'CommonJS (require)',
    preload: ['--require', join(fixtures, 'block-peers.cjs')],
    script: 'use-package.cjs',
    notFound: 'MODULE_NOT_FOUND',
  },
  {
    build: 'ESM (import)',
    preload: ['--import', join(fixtures, 'block-peers.mjs')],
    script: 'use-package.mjs',
    notFound: 'ERR_MODULE_NOT_FOUND',
  },
])(
  'the $build build without @nestjs/terminus and @opentelemetry/api',
  ({ preload, script, notFound }) => {
    let report: Record<string, Step>;

    beforeAll(async () => {
      report = await usePackage(preload, script);
    });

    it('cannot resolve either peer (the block is in place)', () => {
      expect(report['@nestjs/terminus']).toMatchObject({ ok: false, code: notFound });
      expect(report['@opentelemetry/api']).toMatchObject({ ok: false, code: notFound });
    });

    it('main entry: RedlockModule starts, a lock is taken, inspected and released on a real node', () => {
      expect(report.main).toEqual({
        ok: true,
        lockedWhileHeld: true,
        freeAfterRelease: true,
        healthUp: true,
      });
    });

    it('nestjs-redlock/testing: the in-memory module runs a locked routine', () => {
      expect(report.testing).toEqual({ ok: true, ran: true });
    });

    it('nestjs-redlock/terminus, which does need @nestjs/terminus, fails to load (the control)', () => {
      expect(report.terminusEntry.ok).toBe(false);
      expect(report.terminusEntry.message).toContain('@nestjs/terminus');
    });
  },
);
