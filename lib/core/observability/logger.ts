/**
 * What the core logs through. Nest's `Logger` satisfies it; so does `console`.
 * The core never logs an owner value.
 */
export interface RedlockLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug?(message: string): void;
}

/** The default logger of the framework-free core: warnings and errors to the console, nothing else. */
export const consoleLogger: RedlockLogger = {
  log: () => undefined,
  warn: (message) => console.warn(`[redlock] ${message}`),
  error: (message) => console.error(`[redlock] ${message}`),
};
