// nestjs-redlock/testing: unit-test an app's locking without Redis.
export { RedlockTestingModule, type RedlockTestingModuleOptions } from './redlock-testing.module';
export { RedlockTesting } from './redlock-testing';
export { InMemoryRedisNode } from './in-memory-node';
export { TestingRedlockService } from './testing-redlock.service';
