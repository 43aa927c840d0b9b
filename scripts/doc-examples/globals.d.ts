// What the docs' examples take from the reader's own app (their services, config, helpers):
// declared here so that the examples type-check against the package without them. Only names an
// example uses without defining; what comes from nestjs-redlock or Nest is imported for real
// (prelude.ts, or the example's own imports).
/* eslint-disable @typescript-eslint/no-explicit-any */

declare const nodes: string[];
declare const id: string;
declare function transfer(): Promise<void>;
declare function decrement(id: number, signal: AbortSignal): Promise<void>;
declare class ConfigModule {}
declare class ConfigService {
  getOrThrow<T>(key: string): T;
}
declare class AppRedisModule {}
declare const LOCK_CLIENTS: unique symbol;
declare class StockController {}
declare class StockService {
  [method: string]: any;
}
declare class AuditInterceptor {
  intercept(context: unknown, next: { handle(): unknown }): unknown;
}
declare class CacheInterceptor {
  intercept(context: unknown, next: { handle(): unknown }): unknown;
}
declare class AdminTokenGuard {
  canActivate(): boolean;
}
