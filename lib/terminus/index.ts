// nestjs-redlock/terminus: the lock service as a @nestjs/terminus health indicator. An entry of
// its own so that the main entry never loads @nestjs/terminus (an optional peer dependency).
export {
  RedlockHealthIndicator,
  type RedlockHealthDetails,
  type RedlockNodeHealthDetail,
} from './redlock-health.indicator';
