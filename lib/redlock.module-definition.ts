import { ConfigurableModuleBuilder, type Provider } from '@nestjs/common';
import { APP_FILTER, HttpAdapterHost } from '@nestjs/core';
import { RedlockConfigError } from './core';
import { LockedErrorFilter } from './exceptions/locked-error.filter';
import { redlockModuleDefined } from './module-registry';
import type { RedlockModuleOptions } from './redlock-module-options';

/** Extras of `forRoot` / `forRootAsync` that shape the module rather than the locks. */
export interface RedlockModuleExtras {
  /**
   * Register the module globally, so that `RedlockService` and `@Locked` work in every module
   * without importing it again.
   * @default true
   */
  isGlobal?: boolean;
  /**
   * Install {@link LockedErrorFilter} as a global exception filter: a busy lock, an outage and
   * a lost lock get the same answers in every transport (HTTP 409 + `Retry-After` / 503 / 500,
   * RPC and WebSocket `{ status: 'error', code: 'LOCK_BUSY' | 'LOCK_UNAVAILABLE' | 'LOCK_LOST' }`,
   * GraphQL `extensions.code`), also when the lock was taken by a `@Locked` provider method
   * deeper in the call; without it such an error is a 500 logged with a stack. `false` leaves
   * these errors to your own filters (catch `LockedCallException` and the typed errors).
   * @default true
   * @example
   * RedlockModule.forRoot({ nodes, lockErrorFilter: false })
   */
  lockErrorFilter?: boolean;
}

export const {
  ConfigurableModuleClass: ConfigurableRedlockModule,
  /** Injection token of the module options. */
  MODULE_OPTIONS_TOKEN: REDLOCK_MODULE_OPTIONS,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RedlockModuleOptions>({ moduleName: 'Redlock' })
  .setClassMethodName('forRoot')
  // `useClass` / `useExisting` factories implement `createRedlockOptions()`, the Nest convention
  // (cf. `createThrottlerOptions`, `createCacheOptions`).
  .setFactoryMethodName('createRedlockOptions')
  .setExtras<RedlockModuleExtras>(
    { isGlobal: true, lockErrorFilter: true },
    (definition, extras) => {
      redlockModuleDefined();
      return {
        ...definition,
        // The builder spreads the caller's keys over the defaults, so an explicit
        // `isGlobal: undefined` would otherwise turn the default off.
        global: extras.isGlobal ?? true,
        providers: [
          ...(definition.providers ?? []),
          ...lockErrorFilterProviders(extras.lockErrorFilter),
        ],
      };
    },
  )
  .build();

/** Argument of `RedlockModule.forRootAsync`: `imports`, `inject`, `useFactory` | `useClass` | `useExisting`, `isGlobal`. */
export type RedlockModuleAsyncOptions = typeof ASYNC_OPTIONS_TYPE;

/**
 * A class for `RedlockModule.forRootAsync({ useClass })` / `({ useExisting })`.
 *
 * @example
 * @Injectable()
 * class LockConfig implements RedlockOptionsFactory {
 *   constructor(private readonly config: ConfigService) {}
 *   createRedlockOptions() {
 *     return { nodes: this.config.getOrThrow<string>('LOCK_NODES').split(',') };
 *   }
 * }
 */
export interface RedlockOptionsFactory {
  createRedlockOptions(): RedlockModuleOptions | Promise<RedlockModuleOptions>;
}

/**
 * The global filter's provider, unless turned off.
 * @throws RedlockConfigError for a value that is not a boolean
 */
function lockErrorFilterProviders(enabled: unknown): Provider[] {
  if (enabled !== undefined && typeof enabled !== 'boolean') {
    throw new RedlockConfigError('lockErrorFilter', enabled, 'must be a boolean');
  }
  if (enabled === false) return [];
  return [
    {
      provide: APP_FILTER,
      // A factory: the filter takes the options token defined in this file.
      useFactory: (options: RedlockModuleOptions, adapterHost?: HttpAdapterHost) =>
        new LockedErrorFilter(options, adapterHost),
      inject: [REDLOCK_MODULE_OPTIONS, { token: HttpAdapterHost, optional: true }],
    },
  ];
}
