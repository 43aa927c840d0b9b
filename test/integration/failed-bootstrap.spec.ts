import { setTimeout as delay } from 'node:timers/promises';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RedlockModule, RedlockService } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * A Nest bootstrap that fails after RedlockService was created (`abortOnError: false`: the error
 * is thrown to the caller, who gets no app to close) must not leave the lock manager's
 * connections open (issue 10 item 7): they would keep the process alive and the nodes' client
 * lists growing with every retry of a crash-looping start.
 */

let fleet: RedisFleet;

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await fleet?.stop();
});

/** Connections on each node besides the fleet's own admin connection. */
async function clientsPerNode(): Promise<number[]> {
  const lists = await Promise.all(fleet.nodes.map((n) => n.command('CLIENT', 'LIST')));
  return lists.map((list) => String(list).trim().split('\n').length - 1);
}

class BrokenDependencyError extends Error {}

@Injectable()
class Broken {
  // Created after RedlockService (it depends on it), then fails, as a misconfigured provider does.
  constructor(readonly redlock: RedlockService) {
    throw new BrokenDependencyError('broken provider');
  }
}

it('a bootstrap failing after RedlockService was created leaves no connection open', async () => {
  expect(await clientsPerNode()).toEqual([0, 0, 0]);
  @Module({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls() })],
    providers: [Broken],
  })
  class BrokenApp {}

  const error = await NestFactory.create(BrokenApp, { abortOnError: false, logger: false }).catch(
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BrokenDependencyError);
  // Connections open asynchronously: give any that were started time to show up.
  await delay(300);
  expect(await clientsPerNode()).toEqual([0, 0, 0]);
});

it('the same module bootstraps, connects and closes normally', async () => {
  @Module({ imports: [RedlockModule.forRoot({ nodes: fleet.urls() })] })
  class GoodApp {}
  const app = await NestFactory.create(GoodApp, { logger: false });
  await app.init();
  const lock = await app.get(RedlockService).acquire('bootstrap-ok');
  expect((await clientsPerNode()).every((n) => n >= 1)).toBe(true);
  await lock.release();
  await app.close();
  await delay(100);
  expect(await clientsPerNode()).toEqual([0, 0, 0]);
});
