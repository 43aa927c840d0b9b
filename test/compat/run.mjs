// npm run test:compat — the compatibility matrix (issues 10, 17 and 25): real apps, as users write
// them, installed from the *packed* package into scratch folders (so the repository's lockfile
// stays on one version of everything), each running its e2e against real redis-server
// processes on 127.0.0.1.
//
//   node test/compat/run.mjs [cell…]      (default: every cell; CI runs them all)
//
// Cells:
// - nest11-cjs-jest-ioredis{5,6}, nest12-esm-vitest-ioredis{5,6}: test/compat/app (Express, the
//   testing module, RedlockService) in a Nest 11 CommonJS + jest and a Nest 12 ESM + vitest app.
// - transports-{fastify,nats,rabbitmq,graphql,socketio,cron,bullmq}: test/compat/transports, one
//   Nest 12 ESM app (installed and built once for the seven) served as two processes per cell: Fastify HTTP
//   (with a CQRS command bus), a microservice over NATS and over RabbitMQ (a real nats-server /
//   rabbitmq-server of the cell's own, started here on free loopback ports, not the machine's),
//   an Apollo GraphQL resolver, a socket.io gateway. Each cell: 50 concurrent decrements over
//   both instances (never oversold, no overlapping critical sections), then what a caller
//   receives for a busy lock and for a majority of hung lock nodes, from a @Locked handler and
//   from a @Locked provider method (or command handler) under a plain one (architecture.md §5.12: code
//   and status per transport, neither the resource nor a node named, busy not logged as an
//   error). transports-cron: a @Cron job every second on both instances, one firing 250 ms late
//   (a clock behind), runs once per tick with onBusy 'skip'. transports-bullmq: processors on
//   both instances (exclusion; a busy lock fails the attempt and BullMQ's retry runs the job
//   once; an outage fails it; onBusy 'skip' fails the bootstrap). Their specs run on node:test
//   (no test runner to install).
//
// - docs-nest11-cjs, docs-nest12-esm: the docs' examples (architecture.md §7, issue 25): every TypeScript
//   block of README.md and docs/ compiled with emit, by scripts/check-doc-examples.js --app, in a
//   Nest 11 CLI app (CommonJS) and a Nest 12 CLI app (ESM, NodeNext), each with the scaffold's
//   tsconfig and TypeScript and the packages the examples import; then the headline examples
//   boot there as compiled — the README's minimal app and the GraphQL recipe, each alone
//   (test/compat/docs, node:test).
//
// Each cell gets its own three redis-server lock nodes (and, for the transports, a fourth for
// the shared stock), so cells that hang nodes cannot disturb each other. The cells of one
// install folder run one after another; folders run side by side, two at a time (the machine
// has two cores; REDLOCK_COMPAT_JOBS=1 runs everything in sequence): the transport folder
// beside the four app folders and the two docs folders, which take longer in all. Prints the
// pass/fail matrix with each folder's setup and each cell's e2e wall time, writes it to
// <scratch>/matrix.md, and exits non-zero if any cell failed. Scratch: $REDLOCK_COMPAT_DIR or <tmpdir>/nestjs-redlock-compat.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout, clearTimeout } from 'node:timers';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const { projects } = createRequire(import.meta.url)('../../scripts/doc-examples/projects.js');
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

/**
 * One Nest 12 ESM app for every transport cell (test/compat/transports), installed and built
 * once: Fastify, NATS microservices, Apollo GraphQL (Express) and socket.io. tsc emits it (the
 * typecheck), and each spec starts `node dist/src/main.js` twice. Specs run on node:test.
 */
const transportsApp = {
  packageJson: {
    type: 'module',
    dependencies: {
      '@apollo/server': '^5.0.0',
      amqplib: '^0.10.0',
      bullmq: '^5.0.0',
      'amqp-connection-manager': '^5.0.0',
      '@as-integrations/express5': '^1.1.0',
      '@nats-io/transport-node': '^3.0.0',
      '@nestjs/apollo': '^14.0.0',
      '@nestjs/bullmq': '^12.0.0',
      '@nestjs/common': '^12.0.1',
      '@nestjs/core': '^12.0.1',
      '@nestjs/cqrs': '^12.0.0',
      '@nestjs/graphql': '^14.0.0',
      '@nestjs/microservices': '^12.0.1',
      '@nestjs/platform-express': '^12.0.1',
      '@nestjs/platform-fastify': '^12.0.1',
      '@nestjs/platform-socket.io': '^12.0.1',
      '@nestjs/schedule': '^12.0.0',
      '@nestjs/websockets': '^12.0.1',
      graphql: '^16.11.0',
      ioredis: '^5.4.0',
      'reflect-metadata': '^0.2.2',
      rxjs: '^7.8.1',
      'socket.io-client': '^4.8.0',
    },
    devDependencies: { '@types/node': '^20.19.0', typescript: '^6.0.2' },
  },
  tsconfig: {
    compilerOptions: {
      module: 'nodenext',
      moduleResolution: 'nodenext',
      esModuleInterop: true,
      isolatedModules: true,
      emitDecoratorMetadata: true,
      experimentalDecorators: true,
      target: 'ES2023',
      sourceMap: true,
      outDir: './dist',
      rootDir: '.',
      skipLibCheck: true,
      strict: true,
      strictPropertyInitialization: false,
      types: ['node'],
    },
    include: ['src', 'test'],
  },
  files: {},
};

/** A transport cell: the shared transports app, one spec, and the services it needs. */
function transport(spec, services = {}) {
  return {
    ...transportsApp,
    app: 'transports',
    folder: 'transports',
    build: ['build', 'npx', ['tsc', '-p', 'tsconfig.json']],
    test: ['node', ['--test', `dist/test/${spec}.e2e-spec.js`]],
    services: { store: true, ...services },
  };
}

/**
 * What the docs' examples import (scripts/doc-examples/prelude.ts and the blocks themselves), per
 * Nest major: an app with every one of them installed compiles every example, the CQRS one too.
 */
const docsPackages = {
  nest11: {
    '@nestjs/common': '^11.0.1',
    '@nestjs/core': '^11.0.1',
    '@nestjs/platform-express': '^11.0.1',
    '@nestjs/platform-fastify': '^11.0.1',
    '@nestjs/microservices': '^11.0.1',
    '@nestjs/websockets': '^11.0.1',
    '@nestjs/schedule': '^6.0.0',
    '@nestjs/bullmq': '^11.0.0',
    '@nestjs/cqrs': '^11.0.0',
    '@nestjs/terminus': '^11.0.0',
    '@nestjs/graphql': '^13.0.0',
    '@nestjs/apollo': '^13.0.0',
  },
  nest12: {
    '@nestjs/common': '^12.0.1',
    '@nestjs/core': '^12.0.1',
    '@nestjs/platform-express': '^12.0.1',
    '@nestjs/platform-fastify': '^12.0.1',
    '@nestjs/microservices': '^12.0.1',
    '@nestjs/websockets': '^12.0.1',
    '@nestjs/schedule': '^12.0.0',
    '@nestjs/bullmq': '^12.0.0',
    '@nestjs/cqrs': '^12.0.0',
    '@nestjs/terminus': '^12.0.0',
    '@nestjs/graphql': '^14.0.0',
    '@nestjs/apollo': '^14.0.0',
  },
};

/**
 * A docs cell: a Nest 11 CommonJS or a Nest 12 ESM app as its CLI scaffolds it, with what the
 * examples import; its "build" compiles every example (scripts/check-doc-examples.js --app), its
 * e2e boots the headline ones (test/compat/docs).
 */
function docsCell(name, project, typescript) {
  const { type, compilerOptions } = projects[project];
  return {
    app: 'docs',
    folder: name,
    packageJson: {
      ...(type === 'module' ? { type } : {}),
      dependencies: {
        ...docsPackages[project],
        '@apollo/server': '^5.0.0',
        '@as-integrations/express5': '^1.1.0',
        bullmq: '^5.0.0',
        graphql: '^16.11.0',
        ioredis: '^5.4.0',
        ...common,
      },
      devDependencies: {
        '@nestjs/testing': docsPackages[project]['@nestjs/core'],
        '@types/node': '^20.19.0',
        typescript,
      },
    },
    tsconfig: { compilerOptions: { ...compilerOptions, outDir: './dist' }, include: ['src'] },
    files: {},
    build: [
      'doc examples',
      'node',
      [path.join(root, 'scripts', 'check-doc-examples.js'), '--app', '.', '--project', project],
    ],
    test: ['node', ['--test', 'test/docs.e2e-spec.mjs']],
    services: {},
  };
}

/** An app cell: test/compat/app in a folder of its own, type-checked, run by its test runner. */
function appCell(name, cell) {
  return {
    ...cell,
    app: 'app',
    folder: name,
    build: ['typecheck', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json']],
    test: ['npx', cell.test],
    services: {},
  };
}

const cells = {
  'nest11-cjs-jest-ioredis5': appCell('nest11-cjs-jest-ioredis5', nest11Cjs('^5.4.0')),
  'nest11-cjs-jest-ioredis6': appCell('nest11-cjs-jest-ioredis6', nest11Cjs('^6.0.0')),
  'nest12-esm-vitest-ioredis5': appCell('nest12-esm-vitest-ioredis5', nest12Esm('^5.4.0')),
  'nest12-esm-vitest-ioredis6': appCell('nest12-esm-vitest-ioredis6', nest12Esm('^6.0.0')),
  'transports-fastify': transport('fastify'),
  'transports-nats': transport('nats', { nats: true }),
  'transports-rabbitmq': transport('rabbitmq', { rabbitmq: true }),
  'transports-graphql': transport('graphql'),
  'transports-socketio': transport('socketio'),
  'transports-cron': transport('cron'),
  'transports-bullmq': transport('bullmq'),
  'docs-nest11-cjs': docsCell('docs-nest11-cjs', 'nest11', '~5.9.3'),
  'docs-nest12-esm': docsCell('docs-nest12-esm', 'nest12', '^6.0.2'),
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

/** Resolves whether a server on `port` answers `probe` with a reply starting with `expect`. */
function answers(port, probe, expect) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(500);
    socket.once('connect', () => probe && socket.write(probe));
    socket.once('data', (d) => {
      socket.destroy();
      resolve(String(d).startsWith(expect));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/** Every service process started, so that an interrupted run still stops them (by pid). */
const started = new Set();

/**
 * Starts `count` servers on fresh loopback ports and waits until each answers; a server that
 * exits first (a port taken between the pick and the bind, by a cell running beside) is
 * started again on another port.
 */
async function startServers(count, argsFor, probe, expect, what) {
  const servers = [];
  for (const port of await freePorts(count)) {
    for (let attempt = 1; ; attempt++) {
      const p = attempt === 1 ? port : (await freePorts(1))[0];
      const child = spawn(what, argsFor(p), { stdio: 'ignore' });
      started.add(child);
      let exited = false;
      child.once('exit', () => (exited = true));
      const deadline = Date.now() + 10_000;
      let up = false;
      while (!exited && Date.now() < deadline && !(up = await answers(p, probe, expect))) {
        await new Promise((r) => setTimeout(r, 50));
      }
      if (up) {
        servers.push({ port: p, child });
        break;
      }
      stopServers([{ child }]);
      if (attempt === 3) throw new Error(`${what} on 127.0.0.1:${p} did not start`);
    }
  }
  return servers;
}

/** Independent redis-server processes on loopback ports, no persistence. */
function startRedis(count) {
  return startServers(
    count,
    (port) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    'PING\r\n',
    '+PONG',
    'redis-server',
  );
}

/** A nats-server on a loopback port (it greets every client with INFO). */
function startNats() {
  return startServers(
    1,
    (port) => ['-a', '127.0.0.1', '-p', String(port)],
    '',
    'INFO',
    'nats-server',
  );
}

/**
 * A rabbitmq-server of our own (not the machine's, if it runs one): its own epmd, node name,
 * ports, data and cookie under the scratch folder, bound to 127.0.0.1. Erlang starts an epmd
 * daemon when none answers, which nothing would stop: so ours is started first, in the
 * foreground. The broker runs in a process group of its own (a shell, beam.smp and helpers),
 * killed whole.
 */
async function startRabbitmq(name) {
  const home = path.join(scratch, 'rabbitmq', name);
  fs.rmSync(home, { recursive: true, force: true });
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(path.join(home, 'enabled_plugins'), '[].\n');
  const [epmdPort, amqpPort, distPort] = await freePorts(3);
  const epmd = spawn('epmd', ['-port', String(epmdPort), '-address', '127.0.0.1'], {
    stdio: 'ignore',
  });
  started.add(epmd);
  const servers = [{ child: epmd }];
  try {
    const deadline = Date.now() + 10_000;
    while (!(await connects(epmdPort))) {
      if (Date.now() > deadline) throw new Error(`epmd on 127.0.0.1:${epmdPort} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const out = fs.openSync(path.join(home, 'out.log'), 'w');
    const broker = spawn('/usr/lib/rabbitmq/bin/rabbitmq-server', [], {
      cwd: home,
      stdio: ['ignore', out, out],
      detached: true,
      env: {
        ...process.env,
        HOME: home,
        ERL_EPMD_PORT: String(epmdPort),
        RABBITMQ_NODENAME: `compat${amqpPort}@localhost`,
        RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
        RABBITMQ_NODE_PORT: String(amqpPort),
        RABBITMQ_DIST_PORT: String(distPort),
        RABBITMQ_MNESIA_BASE: path.join(home, 'mnesia'),
        RABBITMQ_LOG_BASE: path.join(home, 'log'),
        RABBITMQ_ENABLED_PLUGINS_FILE: path.join(home, 'enabled_plugins'),
        RABBITMQ_CONFIG_FILE: path.join(home, 'rabbitmq'),
        RABBITMQ_ADVANCED_CONFIG_FILE: path.join(home, 'advanced.config'),
        RABBITMQ_PID_FILE: path.join(home, 'pid'),
      },
    });
    broker.group = true;
    started.add(broker);
    servers.push({ child: broker });
    let exited = false;
    broker.once('exit', () => (exited = true));
    // A wrong 8-byte protocol header is answered with the server's own ("AMQP…"): it is up.
    const until = Date.now() + 120_000;
    while (!(await answers(amqpPort, 'HELLO!\r\n', 'AMQP'))) {
      if (exited || Date.now() > until) {
        const logs = fs.readFileSync(path.join(home, 'out.log'), 'utf8').slice(-2000);
        throw new Error(`rabbitmq-server on 127.0.0.1:${amqpPort} did not start:\n${logs}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    return { url: `amqp://guest:guest@127.0.0.1:${amqpPort}`, servers };
  } catch (error) {
    stopServers(servers);
    throw error;
  }
}

function connects(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

function stopServers(servers) {
  for (const { child } of servers) {
    const pid = child.group ? -child.pid : child.pid;
    try {
      process.kill(pid, 'SIGCONT'); // a cell stopped mid-test must still die
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    started.delete(child);
  }
}

/** The services one cell's e2e needs, and the environment that names them. */
async function startServices(name, cell) {
  const servers = [];
  try {
    const nodes = await startRedis(3);
    servers.push(...nodes);
    const env = {
      REDLOCK_COMPAT_NODES: nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(','),
      REDLOCK_COMPAT_PIDS: nodes.map((n) => n.child.pid).join(','),
    };
    if (cell.services.store) {
      const [store] = await startRedis(1);
      servers.push(store);
      env.REDLOCK_COMPAT_STORE = `redis://127.0.0.1:${store.port}`;
    }
    if (cell.services.nats) {
      const [nats] = await startNats();
      servers.push(nats);
      env.COMPAT_NATS_URL = `nats://127.0.0.1:${nats.port}`;
    }
    if (cell.services.rabbitmq) {
      const rabbitmq = await startRabbitmq(name);
      servers.push(...rabbitmq.servers);
      env.COMPAT_RABBITMQ_URL = rabbitmq.url;
    }
    return { env, stop: () => stopServers(servers) };
  } catch (error) {
    stopServers(servers);
    throw error;
  }
}

const log = (name, text) =>
  console.log(
    text
      .split('\n')
      .map((line) => `[${name}] ${line}`)
      .join('\n'),
  );

const seconds = (since) => Math.round((Date.now() - since) / 1000);

function installedVersions(dir) {
  const version = (p) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', p, 'package.json'))).version;
    } catch {
      return '?';
    }
  };
  return [
    '@nestjs/core',
    'ioredis',
    'typescript',
    'jest',
    'vitest',
    'fastify',
    '@nats-io/transport-node',
    'amqplib',
    '@apollo/server',
    'socket.io',
    'bullmq',
  ]
    .map((p) => [p, version(p)])
    .filter(([, v]) => v !== '?')
    .map(([p, v]) => `${p} ${v}`)
    .join(', ');
}

/**
 * One install folder: its sources copied, package.json pointing at the tarball, installed and
 * type-checked (or built) once. Returns the step results and the seconds it took.
 */
async function prepare(folder, cell, tarball) {
  const since = Date.now();
  const dir = path.join(scratch, folder);
  for (const stale of [
    'src',
    'test',
    'dist',
    'doc-examples',
    'dist-doc-examples',
    'package-lock.json',
  ]) {
    fs.rmSync(path.join(dir, stale), { recursive: true, force: true });
  }
  // A previous run's lockfile or copy would pin the previous tarball's contents.
  fs.rmSync(path.join(dir, 'node_modules', 'nestjs-redlock'), { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.cpSync(path.join(here, cell.app), dir, { recursive: true });
  const packageJson = {
    name: `compat-${folder}`,
    private: true,
    ...cell.packageJson,
    dependencies: { ...cell.packageJson.dependencies, 'nestjs-redlock': `file:${tarball}` },
  };
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(packageJson, null, 2));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(cell.tsconfig, null, 2));
  for (const [file, text] of Object.entries(cell.files))
    fs.writeFileSync(path.join(dir, file), text);

  const steps = {};
  const install = ['npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts']];
  for (const [step, command, args, timeout] of [
    ['install', ...install, INSTALL_TIMEOUT_MS],
    [...cell.build, STEP_TIMEOUT_MS],
  ]) {
    log(folder, step);
    const result = await run(command, args, dir, timeout);
    steps[step] = result.ok;
    // The doc examples' count and versions, in the log of a passing run too.
    if (result.ok && step === 'doc examples') log(folder, result.output.trim().split('\n').pop());
    if (!result.ok) {
      log(folder, result.output.split('\n').slice(-80).join('\n'));
      break;
    }
  }
  return {
    dir,
    steps,
    versions: steps.install ? installedVersions(dir) : '',
    seconds: seconds(since),
  };
}

/** One cell's e2e in its prepared folder, against services of its own. */
async function runCell(name, cell, dir) {
  const since = Date.now();
  const services = await startServices(name, cell);
  try {
    log(name, 'e2e');
    const [command, args] = cell.test;
    const result = await run(command, args, dir, STEP_TIMEOUT_MS, services.env);
    const lines = result.output.split('\n');
    const shown = result.ok
      ? [...lines.filter((l) => /exclusion:|answer:|ticks:/.test(l)), ...lines.slice(-15)]
      : lines.slice(-80);
    log(name, shown.join('\n'));
    return { ok: result.ok, seconds: seconds(since) };
  } finally {
    services.stop();
  }
}

/** Runs `tasks` (functions returning Promises), at most `limit` at a time. */
async function pool(tasks, limit) {
  const queue = [...tasks];
  const workers = Array.from({ length: Math.min(limit, queue.length) }, async () => {
    while (queue.length > 0) await queue.shift()();
  });
  await Promise.all(workers);
}

async function main() {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !(name in cells));
  if (unknown.length > 0) throw new Error(`unknown cells: ${unknown.join(', ')}`);
  const selected = wanted.length > 0 ? wanted : Object.keys(cells);
  const jobs = Math.max(1, Number(process.env.REDLOCK_COMPAT_JOBS ?? 2));

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

  const stopAll = () => stopServers([...started].map((child) => ({ child })));
  process.once('SIGINT', () => (stopAll(), process.exit(130)));
  process.once('SIGTERM', () => (stopAll(), process.exit(143)));

  // The cells of one folder run in sequence after its one install; folders run side by side,
  // the one with the most cells first (it takes longest).
  const folders = new Map();
  for (const name of selected) {
    const folder = cells[name].folder;
    folders.set(folder, [...(folders.get(folder) ?? []), name]);
  }
  const order = [...folders.entries()].sort((a, b) => b[1].length - a[1].length);
  const rows = new Map();
  const since = Date.now();
  try {
    await pool(
      order.map(([folder, names]) => async () => {
        const setup = await prepare(folder, cells[names[0]], tarball);
        for (const [i, name] of names.entries()) {
          const row = { name, steps: { ...setup.steps }, versions: setup.versions };
          row.setup = i === 0 ? `${setup.seconds}` : `(${names[0]})`;
          if (Object.values(setup.steps).every(Boolean) && Object.keys(setup.steps).length === 2) {
            const e2e = await runCell(name, cells[name], setup.dir);
            row.steps.e2e = e2e.ok;
            row.e2eSeconds = e2e.seconds;
          }
          rows.set(name, row);
        }
      }),
      jobs,
    );
  } finally {
    stopAll();
  }

  const results = selected.map((name) => rows.get(name));
  const mark = (ok) => (ok === undefined ? '—' : ok ? 'pass' : 'FAIL');
  const built = (r) => r.steps.typecheck ?? r.steps.build ?? r.steps['doc examples'];
  const lines = [
    `Node ${process.version}, redis-server ${spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout.match(/v=(\S+)/)?.[1] ?? '?'}; ${jobs} job(s), ${seconds(since)} s in all (after the pack)`,
    '',
    '| cell | install | typecheck | e2e | versions | setup s | e2e s |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...results.map(
      (r) =>
        `| ${r.name} | ${mark(r.steps.install)} | ${mark(built(r))} | ${mark(r.steps.e2e)} | ${r.versions} | ${r.setup} | ${r.e2eSeconds ?? '—'} |`,
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
