/** Injection token of the ioredis client that holds the stock levels (not the lock nodes). */
export const STOCK_REDIS = Symbol('STOCK_REDIS');

/** Injection token of the {@link StockModuleOptions}. */
export const STOCK_MODULE_OPTIONS = Symbol('STOCK_MODULE_OPTIONS');

/**
 * How long a decrement pauses between reading the stock and writing it back, in ms, unless
 * configured. Long enough that concurrent unlocked decrements reliably overlap (the demo must
 * show the race every time), short enough that 100 locked ones, one after the other, take
 * about a second.
 */
export const DEFAULT_RACE_WINDOW_MS = 5;
