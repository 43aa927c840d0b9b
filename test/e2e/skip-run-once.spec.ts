import { setTimeout as delay } from 'node:timers/promises';
import { Inject, Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Locked, RedlockModule } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { startLatencyProxy, type LatencyProxy } from '../support/latency-proxy';

/**
 * Jobs with `onBusy: 'skip'` run exactly once per tick across instances (issue 17 item 4,
 * issue 16 defect 7). The scheduler is played by the test: each instance's tick is a direct call
 * of the job method, fired at the same moment (split votes) or a few hundred ms apart (clocks
 * that differ), as `@Cron` would on instances whose clocks disagree.
 */

const INSTANCE = Symbol('instance');
/** Tick → instances that ran it. */
const ran = new Map<number, string[]>();

@Injectable()
class TickJob {
  constructor(@Inject(INSTANCE) private readonly instance: string) {}

  /** A 1 ms job: the shape that let a late instance run a tick already done. */
  @Locked('tick:{args.0}', { onBusy: 'skip' })
  async run(tick: number): Promise<void> {
    ran.set(tick, [...(ran.get(tick) ?? []), this.instance]);
    await delay(1);
  }
}

let fleet: RedisFleet;
const proxies: LatencyProxy[] = [];
const apps: INestApplication[] = [];

async function instance(name: string, nodes: string[]): Promise<TickJob> {
  const moduleRef = await Test.createTestingModule({
    // No quarantine: no node restarts here, and a fleet a few seconds old would otherwise have
    // its nodes leave the young-fleet waiver one by one while the ticks run.
    imports: [RedlockModule.forRoot({ nodes, nodeTimeout: 1_000, ttl: 5_000, quarantine: false })],
    providers: [{ provide: INSTANCE, useValue: name }, TickJob],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  apps.push(app);
  return app.get(TickJob);
}

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  for (const app of apps) await app.close();
  for (const proxy of proxies) await proxy.close();
  await fleet?.stop();
});

/** Ticks nobody ran, and ticks run more than once. */
function tally(ticks: number[]): { none: number[]; twice: number[] } {
  return {
    none: ticks.filter((t) => (ran.get(t) ?? []).length === 0),
    twice: ticks.filter((t) => (ran.get(t) ?? []).length > 1),
  };
}

describe("onBusy: 'skip' jobs across instances", () => {
  it('a tick fired at once on 3 instances, each near another node (split votes), is run by exactly one', async () => {
    // Instance i reaches node i directly and the two others through a 40 ms proxy (each way):
    // every instance wins its own node first, so a first round splits 1-1-1.
    const jobs: TickJob[] = [];
    for (let i = 0; i < 3; i++) {
      const nodes: string[] = [];
      for (let n = 0; n < 3; n++) {
        if (n === i) nodes.push(fleet.nodes[n].url);
        else {
          const proxy = await startLatencyProxy(fleet.nodes[n].port, 40);
          proxies.push(proxy);
          nodes.push(proxy.url);
        }
      }
      jobs.push(await instance(`split-${i}`, nodes));
    }
    const ticks = Array.from({ length: 20 }, (_, t) => 1_000 + t);
    for (const tick of ticks) await Promise.all(jobs.map((job) => job.run(tick)));
    expect(tally(ticks)).toEqual({ none: [], twice: [] });
  });

  it('a 1 ms tick fired 300 ms later on a second instance (clocks apart) is not run again', async () => {
    const early = await instance('early', fleet.urls());
    const late = await instance('late', fleet.urls());
    const ticks = Array.from({ length: 5 }, (_, t) => 2_000 + t);
    await Promise.all(
      ticks.map(async (tick, i) => {
        await delay(i * 50);
        await Promise.all([early.run(tick), delay(300).then(() => late.run(tick))]);
      }),
    );
    expect(tally(ticks)).toEqual({ none: [], twice: [] });
  });
});
