import { setTimeout as sleep } from 'node:timers/promises';
import type { Response } from 'supertest';
import { startSampleInstance, type SampleInstance } from './sample-instance';

/**
 * The sample's `GET /health` (@nestjs/terminus + RedlockHealthIndicator) while lock nodes are
 * killed for real (SIGKILL) and restarted: 5 lock nodes, quorum 3. A file of its own: it faults
 * the fleet.
 */

let sample: SampleInstance;

beforeAll(async () => {
  sample = await startSampleInstance();
});

afterAll(async () => {
  await sample?.close();
});

interface NodeDetail {
  node: string;
  status: 'up' | 'down';
  latencyMs?: number;
  error?: string;
}

const health = () => sample.http().get('/health');
const redlockDetail = (response: Response) =>
  response.body.details.redlock as {
    status: string;
    quorum: number;
    nodesUp: number;
    nodes: NodeDetail[];
  };
const nodeNames = () => sample.locks.nodes.map((node) => `127.0.0.1:${node.port}`);
const statuses = (response: Response) => redlockDetail(response).nodes.map((node) => node.status);

describe('GET /health with 5 lock nodes', () => {
  it('all up: 200, status ok, every node up with its PING latency', async () => {
    const response = await health().expect(200);
    expect(response.headers['cache-control']).toContain('no-cache');
    expect(response.body.status).toBe('ok');
    expect(response.body.info.redlock.status).toBe('up');
    const redlock = redlockDetail(response);
    expect(redlock).toMatchObject({ status: 'up', quorum: 3, nodesUp: 5 });
    expect(redlock.nodes.map((node) => node.node)).toEqual(nodeNames());
    for (const node of redlock.nodes) {
      expect(node.status).toBe('up');
      expect(node.latencyMs).toBeGreaterThanOrEqual(0);
      expect(node.latencyMs).toBeLessThan(200); // nodeTimeout: an answer after it is no answer
    }
  });

  it('2 of 5 killed: still 200 up (a quorum of 3 answers), the 2 reported down', async () => {
    await Promise.all([sample.locks.nodes[0].kill(), sample.locks.nodes[1].kill()]);
    const response = await health().expect(200);
    expect(redlockDetail(response)).toMatchObject({ status: 'up', nodesUp: 3 });
    expect(statuses(response)).toEqual(['down', 'down', 'up', 'up', 'up']);
    const down = redlockDetail(response).nodes[0];
    expect(down.latencyMs).toBeUndefined();
    expect(typeof down.error).toBe('string');
  });

  it('3 of 5 killed: 503, status error, redlock down with 2 nodes up, answered promptly', async () => {
    await sample.locks.nodes[2].kill();
    const started = performance.now();
    const response = await health().expect(503);
    // Dead nodes refuse at once and each PING is bounded by nodeTimeout (200 ms): the check
    // never waits for a node long after it.
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(response.body.status).toBe('error');
    expect(response.body.error.redlock).toMatchObject({ status: 'down', quorum: 3, nodesUp: 2 });
    expect(statuses(response)).toEqual(['down', 'down', 'down', 'up', 'up']);
  });

  it('the 3 restarted: back to 200 up with every node up', async () => {
    await Promise.all([0, 1, 2].map((i) => sample.locks.nodes[i].restart()));
    // The app's clients reconnect in the background; give them a few seconds.
    const deadline = performance.now() + 15_000;
    let response = await health();
    while (response.status !== 200 && performance.now() < deadline) {
      await sleep(100);
      response = await health();
    }
    expect(response.status).toBe(200);
    // Up once a quorum answers: the last of the three may still be reconnecting.
    expect(redlockDetail(response).nodesUp).toBeGreaterThanOrEqual(3);
    while (redlockDetail(response).nodesUp < 5 && performance.now() < deadline) {
      await sleep(100);
      response = await health().expect(200);
    }
    expect(statuses(response)).toEqual(['up', 'up', 'up', 'up', 'up']);
  });
});
