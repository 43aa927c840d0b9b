// npm run test:compat — the compatibility matrix (issue 10): real apps, as users scaffold them,
// installed from the *packed* package into scratch folders (so the repository's lockfile stays
// on one version of everything), each running test/compat/app's e2e against real redis-server
// processes on 127.0.0.1.
//
//   node test/compat/run.mjs [cell…]      (default: every cell; CI runs them all)
//
// Cells run one after another (CI has two cores). Prints the pass/fail matrix and writes it to
// <scratch>/matrix.md; exits non-zero if any cell failed. Scratch: $REDLOCK_COMPAT_DIR or
// <tmpdir>/nestjs-redlock-compat.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout, clearTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const scratch = process.env.REDLOCK_COMPAT_DIR ?? path.join(os.tmpdir(), 'nestjs-redlock-compat');
const INSTALL_TIMEOUT_MS = 6 * 60_000;
const STEP_TIMEOUT_MS = 4 * 60_000;

const common = {
  'reflect-metadata': '^0.2.2',
  rxjs: '^7.8.1',
  supertest: '^7.0.0',
  '@types/supertest': '^7.0.0',
};

/** A Nest 11 app as its CLI scaffolds it: CommonJS, jest + ts-jest. */
function nest11Cjs(ioredis) {
  return {
    packageJson: {
      dependencies: {
        '@nestjs/common': '^11.0.1',
        '@nestjs/core': '^11.0.1',
        '@nestjs/platform-express': '^11.0.1',
        ioredis,
        ...common,
      },
      devDependencies: {
        '@nestjs/testing': '^11.0.1',
        '@types/jest': '^29.5.14',
        '@types/node': '^20.19.0',
        jest: '^29.7.0',
        'ts-jest': '^29.2.5',
        typescript: '~5.9.3',
      },
      jest: {
        moduleFileExtensions: ['js', 'json', 'ts'],
        rootDir: '.',
        testEnvironment: 'node',
        testRegex: 'test/(app|testing)\\.e2e-spec\\.ts$',
        transform: { '^.+\\.(t|j)s$': 'ts-jest' },
        // The shared sources use ESM-style `.js` specifiers; a CommonJS app maps them back.
        moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
      },
    },
    // The Nest 11 CLI's tsconfig (schematics 11.1.0), strict; CommonJS since there is no "type".
    tsconfig: {
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        resolvePackageJsonExports: true,
        esModuleInterop: true,
        isolatedModules: true,
        declaration: true,
        removeComments: true,
        emitDecoratorMetadata: true,
        experimentalDecorators: true,
        allowSyntheticDefaultImports: true,
        target: 'ES2023',
        sourceMap: true,
        outDir: './dist',
        skipLibCheck: true,
        strict: true,
        strictPropertyInitialization: false,
        forceConsistentCasingInFileNames: true,
        types: ['jest', 'node'],
      },
      include: ['src', 'test/app.e2e-spec.ts', 'test/testing.e2e-spec.ts'],
    },
    files: {},
    test: ['jest', '--runInBand'],
  };
}

/**
 * A Nest 12 app as its CLI scaffolds it (schematics 12.0.6): ESM, vitest, TypeScript 6 (without
 * the scaffold's vite-tsconfig-paths plugin: the app declares no path aliases).
 */
function nest12Esm(ioredis) {
  return {
    packageJson: {
      type: 'module',
      dependencies: {
        '@nestjs/common': '^12.0.1',
        '@nestjs/core': '^12.0.1',
        '@nestjs/platform-express': '^12.0.1',
        ioredis,
        ...common,
      },
      devDependencies: {
        '@nestjs/testing': '^12.0.1',
        '@types/node': '^20.19.0',
        typescript: '^6.0.2',
        vitest: '^4.1.2',
      },
    },
    tsconfig: {
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        resolvePackageJsonExports: true,
        esModuleInterop: true,
        isolatedModules: true,
        declaration: true,
        removeComments: true,
        emitDecoratorMetadata: true,
        experimentalDecorators: true,
        allowSyntheticDefaultImports: true,
        target: 'ES2023',
        sourceMap: true,
        outDir: './dist',
        rootDir: '.',
        skipLibCheck: true,
        strict: true,
        strictPropertyInitialization: false,
        types: ['vitest/globals', 'node'],
      },
      include: ['src', 'test'],
    },
    files: {
      'vitest.config.ts': [
        "import { defineConfig } from 'vitest/config';",
        '',
        'export default defineConfig({',
        "  test: { globals: true, root: './', include: ['test/**/*.e2e-spec.ts'], fileParallelism: false },",
        '});',
        '',
      ].join('\n'),
    },
    test: ['vitest', 'run'],
  };
}

const cells = {
  'nest11-cjs-jest-ioredis5': nest11Cjs('^5.4.0'),
  'nest11-cjs-jest-ioredis6': nest11Cjs('^6.0.0'),
  'nest12-esm-vitest-ioredis5': nest12Esm('^5.4.0'),
  'nest12-esm-vitest-ioredis6': nest12Esm('^6.0.0'),
};

/** Runs a command in its own process group, killed whole on timeout. */
function run(command, args, cwd, timeoutMs, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...env, CI: 'true', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      output += `\n[compat] timed out after ${timeoutMs} ms\n`;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, output });
    });
  });
}

/**
 * `count` distinct free loopback ports. All are held open together while they are picked: a port
 * closed before the next pick can be handed out again (a CI run got one port for two nodes, and
 * the library rightly refused one server listed twice).
 */
async function freePorts(count) {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise((resolve, reject) => {
          const server = net.createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => server.address().port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(500);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (d) => {
      socket.destroy();
      resolve(String(d).startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/** Three independent redis-server processes on loopback ports, no persistence. */
async function startRedis(count) {
  const nodes = [];
  for (const port of await freePorts(count)) {
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    nodes.push({ port, child });
  }
  for (const { port } of nodes) {
    const deadline = Date.now() + 10_000;
    while (!(await ping(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return nodes;
}

function stopRedis(nodes) {
  for (const { child } of nodes) {
    try {
      process.kill(child.pid, 'SIGCONT'); // a cell stopped mid-test must still die
      process.kill(child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

async function main() {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !(name in cells));
  if (unknown.length > 0) throw new Error(`unknown cells: ${unknown.join(', ')}`);
  const selected = wanted.length > 0 ? wanted : Object.keys(cells);

  fs.mkdirSync(scratch, { recursive: true });
  console.log(`[compat] building and packing into ${scratch}`);
  const build = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  const packed = spawnSync(
    'npm',
    ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch],
    { cwd: root, encoding: 'utf8' },
  );
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`);
  const tarball = path.join(scratch, JSON.parse(packed.stdout)[0].filename);

  const nodes = await startRedis(3);
  const cleanup = () => stopRedis(nodes);
  process.once('SIGINT', () => (cleanup(), process.exit(130)));
  process.once('SIGTERM', () => (cleanup(), process.exit(143)));
  const env = {
    REDLOCK_COMPAT_NODES: nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(','),
    REDLOCK_COMPAT_PIDS: nodes.map((n) => n.child.pid).join(','),
  };

  const results = [];
  try {
    for (const name of selected) {
      const cell = cells[name];
      const dir = path.join(scratch, name);
      const started = Date.now();
      fs.rmSync(path.join(dir, 'src'), { recursive: true, force: true });
      fs.rmSync(path.join(dir, 'test'), { recursive: true, force: true });
      // A previous run's lockfile would pin the previous tarball's contents.
      fs.rmSync(path.join(dir, 'package-lock.json'), { force: true });
      fs.rmSync(path.join(dir, 'node_modules', 'nestjs-redlock'), { recursive: true, force: true });
      fs.mkdirSync(dir, { recursive: true });
      fs.cpSync(path.join(here, 'app'), dir, { recursive: true });
      const packageJson = {
        name: `compat-${name}`,
        private: true,
        ...cell.packageJson,
        dependencies: { ...cell.packageJson.dependencies, 'nestjs-redlock': `file:${tarball}` },
      };
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(packageJson, null, 2));
      fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(cell.tsconfig, null, 2));
      for (const [file, text] of Object.entries(cell.files))
        fs.writeFileSync(path.join(dir, file), text);

      const steps = [
        [
          'install',
          'npm',
          ['install', '--no-audit', '--no-fund', '--ignore-scripts'],
          INSTALL_TIMEOUT_MS,
        ],
        ['typecheck', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], STEP_TIMEOUT_MS],
        ['e2e', 'npx', cell.test, STEP_TIMEOUT_MS],
      ];
      const row = { name, steps: {}, versions: '' };
      for (const [step, command, args, timeout] of steps) {
        console.log(`[compat] ${name}: ${step}`);
        const result = await run(command, args, dir, timeout, env);
        row.steps[step] = result.ok;
        if (!result.ok) {
          console.log(result.output.split('\n').slice(-80).join('\n'));
          break;
        }
        if (step === 'e2e') console.log(result.output.split('\n').slice(-15).join('\n'));
      }
      if (row.steps.install) {
        const version = (p) => {
          try {
            return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', p, 'package.json')))
              .version;
          } catch {
            return '?';
          }
        };
        row.versions = ['@nestjs/core', 'ioredis', 'typescript', 'jest', 'vitest']
          .map((p) => [p, version(p)])
          .filter(([, v]) => v !== '?')
          .map(([p, v]) => `${p} ${v}`)
          .join(', ');
      }
      row.seconds = Math.round((Date.now() - started) / 1000);
      results.push(row);
    }
  } finally {
    cleanup();
  }

  const mark = (ok) => (ok === undefined ? '—' : ok ? 'pass' : 'FAIL');
  const lines = [
    `Node ${process.version}, redis-server ${spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout.match(/v=(\S+)/)?.[1] ?? '?'}`,
    '',
    '| cell | install | typecheck | e2e | versions | s |',
    '| --- | --- | --- | --- | --- | --- |',
    ...results.map(
      (r) =>
        `| ${r.name} | ${mark(r.steps.install)} | ${mark(r.steps.typecheck)} | ${mark(r.steps.e2e)} | ${r.versions} | ${r.seconds} |`,
    ),
  ];
  fs.writeFileSync(path.join(scratch, 'matrix.md'), `${lines.join('\n')}\n`);
  console.log(`\n${lines.join('\n')}\n`);
  if (results.some((r) => !r.steps.e2e)) process.exit(1);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
