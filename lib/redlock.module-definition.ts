import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedlockModuleOptions } from './redlock-module-options';

/** Extras of `forRoot` / `forRootAsync` that shape the module rather than the locks. */
export interface RedlockModuleExtras {
  /**
   * Register the module globally, so that `RedlockService` and `@Locked` work in every module
   * without importing it again.
   * @default true
   */
  isGlobal?: boolean;
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
  .setExtras<RedlockModuleExtras>({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    // The builder spreads the caller's keys over the defaults, so an explicit
    // `isGlobal: undefined` would otherwise turn the default off.
    global: extras.isGlobal ?? true,
  }))
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
