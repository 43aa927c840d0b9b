/**
 * Starts the sample app: the stock API under Redlock, one instance.
 *
 * Environment (see config/sample-config.ts): `LOCK_NODES` (comma-separated redis:// URLs of
 * the lock's Redis masters), `STOCK_REDIS_URL` (the Redis of the stock data), `PORT` (default
 * 3000), `HOST` (default 127.0.0.1), `ADMIN_TOKEN` (opens `GET /locks/:resource`). Without `LOCK_NODES` it starts 5 local lock nodes, without
 * `STOCK_REDIS_URL` one local stock node (redis-server processes on free loopback ports), and
 * stops them when it exits. Ctrl-C (SIGINT) or SIGTERM: closes the app (releasing its locks),
 * then stops the local nodes.
 *
 * `npm run sample` builds and runs this; several instances against the same nodes form the
 * cluster the lock is for (`npm run demo` runs two).
 */
import { Logger, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { readSampleConfig, redactUrl, type SampleConfig } from './config/sample-config';
import { LOCAL_LOCK_NODES, LocalRedis } from './local-redis';

/** What has been started so far, for the shutdown (which may come before start-up is done). */
interface Running {
  local?: LocalRedis;
  app?: INestApplication;
}

const logger = new Logger('Sample');

async function start(config: SampleConfig, running: Running): Promise<void> {
  if (!config.lockNodes || !config.stockRedisUrl) {
    running.local = await LocalRedis.start({
      lockNodes: !config.lockNodes,
      stock: !config.stockRedisUrl,
    });
  }
  const lockNodes = config.lockNodes ?? running.local!.lockNodes!;
  const stockRedisUrl = config.stockRedisUrl ?? running.local!.stockRedisUrl!;
  const local = (embedded: boolean, what: string) =>
    embedded ? ` (${what}, started here, stopped on exit)` : '';
  logger.log(
    `Lock nodes: ${lockNodes.map(redactUrl).join(', ')}` +
      local(!config.lockNodes, `${LOCAL_LOCK_NODES} local redis-server processes`),
  );
  logger.log(
    `Stock Redis: ${redactUrl(stockRedisUrl)}` +
      local(!config.stockRedisUrl, 'a local redis-server process'),
  );

  running.app = await NestFactory.create(
    AppModule.register({
      lockNodes,
      stockRedisUrl,
      stockReport: config.stockReport,
      adminToken: config.adminToken,
    }),
  );
  await running.app.listen(config.port, config.host);
  const url = await running.app.getUrl();
  // The demo reads this line to find an instance started with PORT=0.
  logger.log(`Listening on ${url}`);
  logger.log(`Health: curl ${url}/health`);
  if (!config.adminToken) logger.log('GET /locks/:resource is closed: ADMIN_TOKEN is not set');
  logger.log(
    `Try: curl -X PUT ${url}/stock/a -H 'content-type: application/json' -d '{"quantity":5}'` +
      ` && curl -X POST ${url}/stock/a/decrement`,
  );
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

async function main(): Promise<void> {
  let config: SampleConfig;
  try {
    config = readSampleConfig();
  } catch (error) {
    logger.error(`Bad configuration: ${message(error)}`);
    process.exit(1);
  }
  const running: Running = {};
  const startup = start(config, running);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Whatever start-up is doing finishes first, so nothing it starts is left behind.
      await startup.catch(() => undefined);
      try {
        await running.app?.close(); // releases the locks still held, closes the connections
      } finally {
        await running.local?.stop();
      }
    })());

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    // `once`: a second Ctrl-C while stopping ends the process at once (the local nodes' watchdog
    // still kills them).
    process.once(signal, () => {
      logger.log(`${signal}: stopping`);
      stop().then(
        () => {
          logger.log('Stopped');
          process.exit(0);
        },
        (error: unknown) => {
          logger.error(`Stopping failed: ${message(error)}`);
          process.exit(1);
        },
      );
    });
  }

  try {
    await startup;
  } catch (error) {
    logger.error(`Start-up failed: ${message(error)}`);
    await stop().catch(() => undefined);
    process.exit(1);
  }
}

void main();
