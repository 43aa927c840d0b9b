/**
 * `npm run demo`: the race, and the lock that fixes it, on a real little cluster.
 *
 * 1. Starts 5 local lock nodes and 1 stock node (redis-server processes on free loopback ports).
 * 2. Starts two instances of the sample app, each its own Node process, against those nodes.
 * 3. For `decrement-unsafe`, `decrement` and `decrement-nowait` in turn: sets a fresh item's
 *    stock to 100 and sends 100 concurrent POSTs, alternately to each instance.
 * 4. Prints one table, and exits 1 when a locked endpoint was not exact (oversold, lost an
 *    update, or answered anything but 2xx/409; for the waiting one, anything but 2xx).
 *
 * Everything it started is stopped by pid on the way out: on success, on failure, on Ctrl-C.
 * Run after `nest build sample` (the `predemo` script).
 */
import { LocalRedis } from '../src/local-redis';
import { AppInstance } from './app-instance';
import { LoadClient } from './load';
import { problems, table, tally, type EndpointResult } from './report';

const REQUESTS = 100;
const INITIAL_STOCK = 100;

const ENDPOINTS = [
  { endpoint: 'decrement-unsafe', locked: false, waits: false, how: 'no lock' },
  { endpoint: 'decrement', locked: true, waits: true, how: "@Locked('stock:{id}'): waits" },
  {
    endpoint: 'decrement-nowait',
    locked: true,
    waits: false,
    how: "@Locked('stock:{id}', { wait: 0 }): 409 when busy",
  },
] as const;

const log = (line = '') => process.stdout.write(`${line}\n`);

/** A live "37/100" counter on a terminal; nothing in between when the output is a file or CI log. */
function progress(label: string): { update(done: number): void; end(): void } {
  if (!process.stdout.isTTY) return { update: () => undefined, end: () => undefined };
  let last = -1;
  return {
    update(done) {
      // Repainting on every reply would cost more than the requests; every 5th is smooth enough.
      if (done !== REQUESTS && done - last < 5) return;
      last = done;
      process.stdout.write(`\r  ${label} ${done}/${REQUESTS}`);
    },
    end() {
      process.stdout.write('\r\x1b[2K');
    },
  };
}

/** Everything started so far, stopped in reverse order exactly once. */
class Started {
  private readonly stops: (() => Promise<void> | void)[] = [];
  private stopping: Promise<void> | undefined;

  add(stop: () => Promise<void> | void): void {
    this.stops.push(stop);
  }

  stopAll(): Promise<void> {
    this.stopping ??= (async () => {
      for (const stop of this.stops.reverse()) {
        try {
          await stop();
        } catch (error) {
          log(`  (cleaning up: ${String(error)})`);
        }
      }
    })();
    return this.stopping;
  }
}

async function run(started: Started): Promise<number> {
  log(`Starting 5 lock nodes and 1 stock node (local redis-server processes)…`);
  const local = await LocalRedis.start({ lockNodes: true, stock: true });
  started.add(() => local.stop());
  const config = { lockNodes: local.lockNodes!, stockRedisUrl: local.stockRedisUrl! };
  log(`  lock nodes: ${config.lockNodes.map((url) => url.replace('redis://', '')).join(' ')}`);
  log(`  stock node: ${config.stockRedisUrl.replace('redis://', '')}`);

  log('Starting 2 instances of the sample app…');
  const instances: AppInstance[] = [];
  started.add(() =>
    Promise.all(instances.map((instance) => instance.stop())).then(() => undefined),
  );
  // Stopped before the instances: an instance closing its HTTP server waits for open
  // keep-alive connections (up to their 5 s idle timeout) unless the client closes them.
  const client = new LoadClient();
  started.add(() => client.close());
  // allSettled: when one fails to start, the other must be tracked (and stopped) all the same.
  const starts = await Promise.allSettled(
    ['A', 'B'].map((name) => AppInstance.start(name, config)),
  );
  const urls: string[] = [];
  for (const start of starts) {
    if (start.status === 'rejected') continue;
    const [instance, url] = start.value;
    instances.push(instance);
    urls.push(url);
    log(`  instance ${instance.name}: ${url} (pid ${instance.pid})`);
  }
  const notStarted = starts.find((start) => start.status === 'rejected');
  if (notStarted) throw notStarted.reason;

  // Warm-up: open the keep-alive connections and warm both instances' code paths, so that the
  // first burst is as concurrent as the others (a cold start spreads it out and hides the race).
  await client.burst(urls, '/stock/warm-up', REQUESTS, undefined, 'GET');

  const results: EndpointResult[] = [];
  for (const { endpoint, locked, waits, how } of ENDPOINTS) {
    const id = `demo-${endpoint}`;
    const set = await client.send('PUT', `${urls[0]}/stock/${id}`, { quantity: INITIAL_STOCK });
    if (set.status !== 200) throw new Error(`PUT /stock/${id} answered ${set.status}: ${set.body}`);

    log(
      `▶ ${endpoint} (${how}): ${REQUESTS} concurrent POSTs over both instances, stock ${INITIAL_STOCK}`,
    );
    const bar = progress(endpoint);
    const begin = performance.now();
    const replies = await client.burst(urls, `/stock/${id}/${endpoint}`, REQUESTS, bar.update);
    const wallMs = performance.now() - begin;
    bar.end();

    const got = await client.send('GET', `${urls[1]}/stock/${id}`);
    if (got.status !== 200) throw new Error(`GET /stock/${id} answered ${got.status}: ${got.body}`);
    const final = (JSON.parse(got.body) as { quantity: number }).quantity;
    const result: EndpointResult = {
      endpoint,
      locked,
      waits,
      initial: INITIAL_STOCK,
      final,
      wallMs,
      ...tally(replies),
    };
    results.push(result);
    log(
      `  done in ${(wallMs / 1000).toFixed(1)} s: ${result.ok} × 2xx, ${result.conflict} × 409, ` +
        `${result.other} other; stock ${INITIAL_STOCK} → ${final}`,
    );
    for (const body of result.otherBodies) log(`    other: ${body}`);
  }

  log();
  log(table(results));
  log();

  const unsafe = results[0];
  log(
    unsafe.final !== unsafe.initial - unsafe.ok
      ? `decrement-unsafe: ${unsafe.ok} sales from a stock of ${unsafe.initial} should leave ` +
          `${unsafe.initial - unsafe.ok}, not ${unsafe.final}: concurrent read-modify-writes ` +
          `overwrote each other.`
      : 'decrement-unsafe: no lost update this time (the race is likely, not certain).',
  );
  let wrong = false;
  for (const result of results) {
    if (!result.locked) continue;
    const found = problems(result, REQUESTS);
    wrong ||= found.length > 0;
    log(
      found.length === 0
        ? `${result.endpoint}: exact — every success took exactly one unit, across both instances.`
        : `${result.endpoint}: WRONG — ${found.join('; ')}`,
    );
  }
  return wrong ? 1 : 0;
}

async function main(): Promise<void> {
  const started = new Started();
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => {
      log(`\n${signal}: stopping everything the demo started…`);
      void started.stopAll().then(() => process.exit(code));
    });
  }
  let code: number;
  try {
    code = await run(started);
  } catch (error) {
    log(`\nThe demo failed: ${error instanceof Error ? error.message : String(error)}`);
    code = 1;
  }
  process.exitCode = code;
  log('Stopping the instances and the Redis nodes…');
  await started.stopAll();
  process.exit(code);
}

void main();
