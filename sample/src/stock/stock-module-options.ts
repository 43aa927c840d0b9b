/** Options of {@link StockModule}. */
export interface StockModuleOptions {
  /**
   * The Redis that holds the stock levels: a `redis://` URL. Keep it apart from the lock nodes
   * (another instance, or at least another database: `redis://host:6379/1`), so that lock keys
   * and data never share a keyspace or a failure.
   */
  redisUrl: string;
  /**
   * Pause between a decrement's read and its write, in ms: the stand-in for real work (a price
   * lookup, a payment call) that makes read-modify-write a race without a lock.
   * @default DEFAULT_RACE_WINDOW_MS (5)
   */
  raceWindowMs?: number;
  /**
   * Run the scheduled stock report (`StockReportJob`: every second, on one instance of the
   * cluster). Needs `ScheduleModule.forRoot()` in the app.
   * @default false
   */
  report?: boolean;
}
