// The HTTP benchmark of issue 26: what `@Locked` costs on a Nest 11 Express handler, beside the
// same handler calling `RedlockService.using()` and a plain one, in one app; and, in the same
// run, the same three endpoints in an app using @anchan828/nest-redlock (node-redlock 5β), its
// `using()` and its `@Redlock` decorator. 3 local redis-server nodes; autocannon with 32
// connections and a distinct key per request (`{"id": n}`, n counting up), each endpoint
// `--rounds` times (default 2), alternating endpoints within a round, rotating between rounds.
// Prints req/s per endpoint (median of the rounds), the app process's CPU time per request, and
// the ratios @Locked/using() and @Locked/anchan's @Redlock by both. Not a test: it reports numbers.
//
// Run from the repository root: npm run bench:http [-- --seconds 10 --rounds 2]
// (builds dist/ and installs bench/'s own dependencies first: autocannon, the peer).
// Each app runs in a child process of its own (`--serve ours|anchan`); autocannon runs here.
import { spawn } from 'node:child_process';
import { setTimeout } from 'node:timers';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
};

const ENDPOINTS = ['plain', 'using', 'locked'];
// Not run unless named in --endpoints: `intercepted`, the plain handler behind a pass-through
// interceptor (what Nest's interceptor pipeline itself costs, in our app only).
// --apps ours,anchan and --endpoints plain,using,locked narrow the run (a profile of one path);
// --profile runs the apps under --cpu-prof (bench/results/profiles; read them with
// bench/lib/cpuprofile-top.mjs).
const APPS = option('--apps', 'ours,anchan').split(',');
const ONLY = option('--endpoints', ENDPOINTS.join(',')).split(',');
const profile = argv.includes('--profile');

if (option('--serve') !== undefined) {
  await serve(option('--serve'), Number(option('--port')), option('--nodes').split(','));
} else {
  await main();
}

// ---------------------------------------------------------------------------------------------
// The driver: fleet, both apps, autocannon.

async function main() {
  const seconds = Number(option('--seconds', 10));
  const rounds = Number(option('--rounds', 2));
  const connections = Number(option('--connections', 32));
  const { startLocalFleet } = await import('./local-fleet.mjs');
  const autocannon = require('autocannon');
  const fleet = await startLocalFleet(3);
  const servers = [];
  try {
    const apps = {};
    for (const name of APPS) {
      const { child, port } = await startServer(name, fleet.urls);
      servers.push(child);
      apps[name] = { child, port };
    }
    const targets = [];
    for (const app of APPS) {
      for (const endpoint of ONLY) {
        // The pass-through interceptor is a measurement of Nest, in our app only.
        if (endpoint === 'intercepted' && app !== 'ours') continue;
        targets.push({ app, endpoint, ...apps[app] });
      }
    }
    // Warm-up: JIT, connections, scripts loaded on every node.
    for (const target of targets) await load(autocannon, target, 2, connections);
    const results = new Map(targets.map((t) => [`${t.app} ${t.endpoint}`, []]));
    for (let round = 0; round < rounds; round++) {
      const order = targets.map((_, i) => targets[(i + round * 3) % targets.length]);
      for (const target of order) {
        const run = await load(autocannon, target, seconds, connections);
        results.get(`${target.app} ${target.endpoint}`).push(run);
        console.error(
          `round ${round + 1}: ${target.app} ${target.endpoint}: ${run.rps.toFixed(0)} req/s, ${run.cpuUs.toFixed(0)} µs CPU/request`,
        );
      }
    }
    report(results, { seconds, rounds, connections });
  } finally {
    // The apps first: their lock managers close their connections while the nodes still answer.
    await Promise.all(
      servers.map(
        (child) =>
          new Promise((resolve) => {
            child.removeAllListeners('exit');
            child.once('exit', resolve);
            // Asked to close (not a signal): a --cpu-prof profile is written on a normal exit.
            child.send('stop');
            setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
          }),
      ),
    );
    fleet.stop();
  }
}

function startServer(name, urls) {
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      ...(profile
        ? ['--cpu-prof', `--cpu-prof-dir=${path.join(here, 'results', 'profiles')}`]
        : []),
      fileURLToPath(import.meta.url),
      '--serve',
      name,
      '--port',
      '0',
      '--nodes',
      urls.join(','),
    ],
    { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], cwd: path.join(here, '..') },
  );
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} app exited (${code})`)));
    child.stdout.on('data', (chunk) => {
      const ready = /ready (\d+)/.exec(String(chunk));
      if (ready) resolve({ child, port: Number(ready[1]) });
    });
  });
}

/** One autocannon run against one endpoint; resolves to its mean req/s (2xx only). */
async function load(autocannon, { port, endpoint, child }, seconds, connections) {
  const cpuBefore = await serverCpu(child);
  let id = 0;
  const base = `${Date.now().toString(36)}-${port}-${endpoint}`;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/${endpoint}`,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // A distinct key per request: nobody waits for anybody, so this measures the path.
        setupRequest: (request) => ({ ...request, body: `{"id":"${base}-${++id}"}` }),
      },
    ],
  });
  const cpuAfter = await serverCpu(child);
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) console.error(`  ${port}/${endpoint}: ${failed} failed requests`);
  const done = result['2xx'] ?? result.requests.total;
  return {
    rps: done / (result.duration || seconds),
    // The app's own CPU time per request (user + system): what a busy machine disturbs least.
    cpuUs: (cpuAfter - cpuBefore) / Math.max(1, done),
  };
}

/** The app process's CPU time so far (µs), asked over IPC. */
function serverCpu(child) {
  return new Promise((resolve) => {
    const onMessage = (message) => {
      if (typeof message !== 'object' || message === null || !('cpu' in message)) return;
      child.off('message', onMessage);
      resolve(message.cpu);
    };
    child.on('message', onMessage);
    child.send('cpu');
  });
}

function report(results, { seconds, rounds, connections }) {
  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  };
  const rps = (key) => median(results.get(key).map((run) => run.rps));
  const cpu = (key) => median(results.get(key).map((run) => run.cpuUs));
  console.log(
    `\nNest 11 Express, 3 local nodes, autocannon ${connections} connections, ${seconds} s x ${rounds} rounds per endpoint (medians; each run listed)\n`,
  );
  console.log('| app | endpoint | req/s | runs | app CPU µs/request | runs |');
  console.log('|---|---|---:|---|---:|---|');
  for (const [key, runs] of results) {
    const [app, endpoint] = key.split(' ');
    const label = app === 'ours' ? 'nestjs-redlock' : '@anchan828/nest-redlock';
    const list = (pick) => runs.map((run) => pick(run).toFixed(0)).join(', ');
    console.log(
      `| ${label} | ${endpoint} | ${rps(key).toFixed(0)} | ${list((r) => r.rps)} | ${cpu(key).toFixed(0)} | ${list((r) => r.cpuUs)} |`,
    );
  }
  // Throughput ratios, and the same from the app's CPU time per request (the inverse ratio of
  // µs/request): on a busy machine the second moves far less.
  const ratio = (a, b) =>
    results.has(a) && results.has(b)
      ? `${(rps(a) / rps(b)).toFixed(2)} req/s, ${(cpu(b) / cpu(a)).toFixed(2)} by CPU/request`
      : 'not measured';
  console.log('');
  console.log(
    `@Locked / using() (ours):              ${ratio('ours locked', 'ours using')}  (target ≥ 0.9)`,
  );
  console.log(
    `@Locked / anchan's @Redlock:           ${ratio('ours locked', 'anchan locked')}  (target ≥ 1.0)`,
  );
  console.log(`using() / anchan's using():            ${ratio('ours using', 'anchan using')}`);
  console.log(
    `plain (ours) / plain (anchan's app):   ${ratio('ours plain', 'anchan plain')}  (the apps' baseline)`,
  );
  console.log(`intercepted / plain (Nest's own cost): ${ratio('ours intercepted', 'ours plain')}`);
}

// ---------------------------------------------------------------------------------------------
// The apps. Plain JavaScript: decorators are applied with Reflect.decorate, in the order
// TypeScript emits them.

async function serve(name, port, urls) {
  require('reflect-metadata');
  const common = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  const { Controller, Post, Body, Module, Inject } = common;
  const reply = (id) => ({ ok: true, id });

  let controller;
  let module;
  if (name === 'ours') {
    const { RedlockModule, RedlockService, Locked } = require(
      path.join(here, '..', 'dist', 'index.js'),
    );
    class Ours {
      constructor(redlock) {
        this.redlock = redlock;
      }
      async plain(body) {
        return reply(body.id);
      }
      async using(body) {
        return this.redlock.using(`k:${body.id}`, async () => reply(body.id));
      }
      async locked(body) {
        return reply(body.id);
      }
      async intercepted(body) {
        return reply(body.id);
      }
    }
    class PassThrough {
      intercept(_context, next) {
        return next.handle();
      }
    }
    Inject(RedlockService)(Ours, undefined, 0);
    decorate(Ours, 'intercepted', [
      Post('intercepted'),
      common.UseInterceptors(PassThrough),
      param(0, Body()),
    ]);
    decorate(Ours, 'plain', [Post('plain'), param(0, Body())]);
    decorate(Ours, 'using', [Post('using'), param(0, Body())]);
    decorate(Ours, 'locked', [Post('locked'), Locked('k:{body.id}'), param(0, Body())]);
    controller = Controller()(Ours) ?? Ours;
    class AppModule {}
    module =
      Module({
        imports: [RedlockModule.forRoot({ nodes: urls })],
        controllers: [controller],
      })(AppModule) ?? AppModule;
  } else {
    const Redis = require('ioredis');
    const anchan = require('@anchan828/nest-redlock');
    const { RedlockModule, RedlockService, Redlock } = anchan;
    class Theirs {
      constructor(redlock) {
        this.redlock = redlock;
      }
      async plain(body) {
        return reply(body.id);
      }
      async using(body) {
        return this.redlock.using([`k:${body.id}`], 10_000, async () => reply(body.id));
      }
      async locked(body) {
        return reply(body.id);
      }
    }
    Inject(RedlockService)(Theirs, undefined, 0);
    decorate(Theirs, 'plain', [Post('plain'), param(0, Body())]);
    decorate(Theirs, 'using', [Post('using'), param(0, Body())]);
    decorate(Theirs, 'locked', [
      Post('locked'),
      Redlock((_target, body) => `k:${body.id}`, 10_000),
      param(0, Body()),
    ]);
    controller = Controller()(Theirs) ?? Theirs;
    class AppModule {}
    module =
      Module({
        imports: [
          RedlockModule.register({
            clients: urls.map((url) => new Redis(url)),
            settings: { retryCount: 100, retryDelay: 100, retryJitter: 100 },
            duration: 10_000,
          }),
        ],
        controllers: [controller],
      })(AppModule) ?? AppModule;
  }
  const app = await NestFactory.create(module, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  process.on('message', (message) => {
    if (message === 'stop') void app.close().then(() => process.exit(0));
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send({ cpu: user + system });
    }
  });
  await app.listen(port, '127.0.0.1');
  process.stdout.write(`ready ${app.getHttpServer().address().port}\n`);
}

function decorate(type, key, decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(type.prototype, key);
  const result = Reflect.decorate(decorators, type.prototype, key, descriptor);
  Object.defineProperty(type.prototype, key, result ?? descriptor);
}

function param(index, decorator) {
  return (target, key) => decorator(target, key, index);
}
