import { RedlockError } from './core';
import { globalSingleton } from './core/global-singleton';

/**
 * How many `RedlockModule.forRoot()` / `forRootAsync()` definitions this process has made, in
 * any copy of the package. Nest fails a bootstrap that lacks a provider with its own generic text
 * first ("Nest can't resolve dependencies of …"); while no definition exists at all the module
 * was certainly forgotten, and `@Locked` can say so in its own words before Nest looks.
 */
const definitions = globalSingleton('redlockModuleDefinitions@1', () => ({ count: 0 }));

/** Counts a `RedlockModule` definition (called by `forRoot` / `forRootAsync`). */
export function redlockModuleDefined(): void {
  definitions.count++;
}

/** Whether any `RedlockModule` has been defined in this process. */
export function anyRedlockModule(): boolean {
  return definitions.count > 0;
}

/**
 * The error of a class that needs `RedlockService` in an application without `RedlockModule`:
 * the first line names `RedlockModule.forRoot` and where it goes, right whether the module is
 * global (the default: the root module) or not (`isGlobal: false`: the class's own module).
 */
export function missingModuleError(className: string, why: string): RedlockError {
  return new RedlockError(
    `${className} needs RedlockModule (${why}): import RedlockModule.forRoot({ nodes }) in your root module ` +
      `(AppModule) — or, registered with isGlobal: false, import it in the module that declares ${className}`,
  );
}
