// What the package must do without its optional peers, written once for both builds: `load` is
// `require` or `import()`, so every module of the package comes from the build under test.
'use strict';

/** A step's outcome: its result, or the error's code and message (a failed step is reported). */
async function step(run) {
  try {
    return { ok: true, ...(await run()) };
  } catch (error) {
    return { ok: false, code: error?.code, message: String(error?.message ?? error) };
  }
}

async function usePackage({ load, url }) {
  const report = {};
  // The block is in place: the peers are installed, yet cannot be loaded.
  for (const name of ['@nestjs/terminus', '@opentelemetry/api']) {
    report[name] = await step(async () => {
      await load(name);
      return {};
    });
  }
  const { Module } = await load('@nestjs/common');
  const { NestFactory } = await load('@nestjs/core');
  /** A class decorated as a Nest module (a class decorator returns nothing: keep the class). */
  const moduleOf = (metadata) => {
    const module = class {};
    Module(metadata)(module);
    return module;
  };

  // The main entry: RedlockModule against a real node, a lock taken, inspected and released.
  report.main = await step(async () => {
    const { RedlockModule, RedlockService } = await load('nestjs-redlock');
    const AppModule = moduleOf({ imports: [RedlockModule.forRoot({ nodes: [url] })] });
    const app = await NestFactory.createApplicationContext(AppModule, {
      logger: false,
      abortOnError: false,
    });
    try {
      const redlock = app.get(RedlockService);
      const lock = await redlock.acquire('optional-peers', { wait: 0 });
      const inspection = await redlock.inspect('optional-peers');
      const busy = await redlock.tryAcquire('optional-peers');
      await lock.release();
      const after = await redlock.inspect('optional-peers');
      const health = await redlock.health();
      return {
        lockedWhileHeld: inspection.nodes[0].state === 'locked' && busy === null,
        freeAfterRelease: after.nodes[0].state === 'free',
        healthUp: health.up,
      };
    } finally {
      await app.close();
    }
  });

  // nestjs-redlock/testing: the in-memory module.
  report.testing = await step(async () => {
    const { RedlockService } = await load('nestjs-redlock');
    const { RedlockTestingModule } = await load('nestjs-redlock/testing');
    const TestModule = moduleOf({ imports: [RedlockTestingModule.forRoot()] });
    const app = await NestFactory.createApplicationContext(TestModule, {
      logger: false,
      abortOnError: false,
    });
    try {
      const redlock = app.get(RedlockService);
      const result = await redlock.using('optional-peers', async () => 'ran');
      return { ran: result === 'ran' };
    } finally {
      await app.close();
    }
  });

  // The control: the entry that does need @nestjs/terminus fails to load, as it should.
  report.terminusEntry = await step(async () => {
    await load('nestjs-redlock/terminus');
    return {};
  });
  return report;
}

module.exports = { usePackage };
