import { Module, type DynamicModule } from '@nestjs/common';
import { REDLOCK_MODULE_OPTIONS, RedlockService, type RedlockModuleOptions } from 'nestjs-redlock';
import { globalSingleton } from '../core/global-singleton';
import { InMemoryRedisNode } from './in-memory-node';
import { RedlockTesting } from './redlock-testing';
import { TestingRedlockService } from './testing-redlock.service';

/** Options of {@link RedlockTestingModule.forRoot}: the module's, without `nodes`. */
export type RedlockTestingModuleOptions = Omit<RedlockModuleOptions, 'nodes'>;

/**
 * `RedlockModule` for unit tests, without Redis: the same `RedlockService` (acquire, tryAcquire,
 * using, currentLock), `@Locked` and `@CurrentLock` with the same semantics — a lock is exclusive
 * per resource within the process, waiting and `wait: 0` behave as configured, errors are the
 * typed ones (409 / 503 over HTTP) — over an in-memory node. {@link RedlockTesting} forces
 * failures. Import it instead of `RedlockModule` (global, like it).
 *
 * @example
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RedlockTestingModule.forRoot()],
 *   controllers: [StockController],
 *   providers: [StockService],
 * }).compile();
 */
@Module({})
export class RedlockTestingModule {
  /** The module, with lock options as `RedlockModule.forRoot` takes them (defaults otherwise). */
  static forRoot(options: RedlockTestingModuleOptions = {}): DynamicModule {
    return testingModule(options);
  }
}

/**
 * {@link RedlockTestingModule.forRoot}'s module. Outside the class: a reference to the class from
 * its own body makes the build name it `_RedlockTestingModule` (tsup.config.ts, keepNames).
 */
function testingModule(options: RedlockTestingModuleOptions): DynamicModule {
  // It provides RedlockService as RedlockModule does: `@Locked` must not take it for missing
  // (module-registry.ts; the same shared counter, whichever copy of the package counts).
  globalSingleton('redlockModuleDefinitions@1', () => ({ count: 0 })).count++;
  const moduleOptions: RedlockModuleOptions = {
    // Nothing to quarantine, nobody to notify in one process: the node has no INFO, no pub/sub.
    quarantine: false,
    ...options,
    nodes: [new InMemoryRedisNode()],
  };
  return {
    module: RedlockTestingModule,
    global: true,
    providers: [
      { provide: REDLOCK_MODULE_OPTIONS, useValue: moduleOptions },
      { provide: RedlockService, useClass: TestingRedlockService },
      RedlockTesting,
    ],
    exports: [RedlockService, REDLOCK_MODULE_OPTIONS, RedlockTesting],
  };
}
