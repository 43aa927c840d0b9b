import { Transport, type NatsOptions, type RmqOptions } from '@nestjs/microservices';

/** What test/compat/run.mjs and the spec that spawned this instance put in the environment. */
export function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(`${name} is not set: run npm run test:compat (test/compat/run.mjs)`);
  }
  return value;
}

/** The lock's nodes: real redis-server processes on 127.0.0.1, started by run.mjs. */
export function lockNodes(): string[] {
  return env('REDLOCK_COMPAT_NODES').split(',').filter(Boolean);
}

/**
 * The lock options every instance shares: both instances (and the spec's own holder) must name
 * the same keys. A short wait here; handlers that queue say so on their decorator. The node
 * timeout is generous: these cells run beside others on two cores, and a reply later than it
 * counts as a node not heard from (with 100 ms, a starved instance once answered a held lock
 * LOCK_UNAVAILABLE: two of three nodes not heard in time is no quorum either way).
 */
export const LOCK_OPTIONS = {
  ttl: 5_000,
  nodeTimeout: 500,
  wait: 0,
  keyPrefix: 'compat-transports:',
} as const;

/** The microservice transport's options, shared by the instances (server) and the spec (client). */
export function brokerOptions(transport: string): NatsOptions | RmqOptions {
  switch (transport) {
    case 'nats':
      // A queue group: each request goes to one of the instances, as deployed.
      return {
        transport: Transport.NATS,
        options: { servers: [env('COMPAT_NATS_URL')], queue: 'stock' },
      };
    case 'rabbitmq':
      // One queue both instances consume: the broker hands each message to one of them.
      return {
        transport: Transport.RMQ,
        options: {
          urls: [env('COMPAT_RABBITMQ_URL')],
          queue: 'stock',
          queueOptions: { durable: false },
        },
      };
    default:
      throw new Error(`no broker for ${transport}`);
  }
}
