// The cost of the OpenTelemetry instrumentation on an uncontended acquire → release cycle, in
// one run on 5 local nodes (issue 11): `telemetry: false` (the API never loaded), the default
// with no provider registered (the API's no-ops), and the default with an SDK tracer provider
// (batch processor, an exporter that drops) and meter provider (a reader, never collected)
// registered. Run: npm run build && node bench/otel-cost.mjs
// NODES=memory: over 5 in-memory nodes (nestjs-redlock/testing) instead, so that the client's own
// CPU per cycle, the instrumentation's included, is not buried under the network's.
import { performance } from 'node:perf_hooks';
import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Redlock } from '../dist/index.js';
import { InMemoryRedisNode } from '../dist/testing/index.js';
import { startLocalFleet } from './local-fleet.mjs';

const CYCLES = Number(process.env.CYCLES ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

/** Accepts every batch and keeps nothing: the SDK's own cost, not an exporter's. */
const dropping = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: () => Promise.resolve(),
};

/** A reader nobody collects: instruments aggregate as they would in an app. */
class IdleReader extends MetricReader {
  onForceFlush() {
    return Promise.resolve();
  }
  onShutdown() {
    return Promise.resolve();
  }
}

const CONFIGS = {
  off: { telemetry: false, provider: false },
  'no provider': { telemetry: true, provider: false },
  'SDK provider': { telemetry: true, provider: true },
};

const memory = process.env.NODES === 'memory';
const fleet = memory ? undefined : await startLocalFleet(5);
const nodes = () =>
  memory ? ['a', 'b', 'c', 'd', 'e'].map((name) => new InMemoryRedisNode(name)) : fleet.urls;
const quiet = { log() {}, warn() {}, error() {} };
try {
  const results = {};
  const cpus = {};
  let spansEnded = 0;
  // Interleaved rounds so that machine noise hits every configuration alike.
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, config] of Object.entries(CONFIGS)) {
      let tracerProvider;
      let meterProvider;
      if (config.provider) {
        tracerProvider = new BasicTracerProvider({
          spanProcessors: [
            new BatchSpanProcessor(dropping),
            {
              onStart() {},
              onEnd: () => spansEnded++,
              forceFlush: async () => {},
              shutdown: async () => {},
            },
          ],
        });
        meterProvider = new MeterProvider({ readers: [new IdleReader()] });
        trace.setGlobalTracerProvider(tracerProvider);
        metrics.setGlobalMeterProvider(meterProvider);
      }
      const redlock = new Redlock(nodes(), { telemetry: config.telemetry, logger: quiet });
      await redlock.ready();
      for (let i = 0; i < 200; i++) await (await redlock.acquire(`warm${i}`)).release();
      globalThis.gc?.();
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      for (let i = 0; i < CYCLES; i++) await (await redlock.acquire(`r${i % 64}`)).release();
      const perCycle = (performance.now() - start) / CYCLES;
      const cpu = process.cpuUsage(cpu0);
      (results[name] ??= []).push(perCycle);
      // This process's CPU per cycle (µs): less noisy than wall time on a shared machine.
      (cpus[name] ??= []).push((cpu.user + cpu.system) / CYCLES);
      await redlock.close();
      if (config.provider) {
        await tracerProvider.shutdown();
        await meterProvider.shutdown();
        trace.disable();
        metrics.disable();
      }
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const off = median(results.off);
  console.log(
    `uncontended acquire→release, 5 ${memory ? 'in-memory' : 'local redis-server'} nodes, ${CYCLES} cycles × ${ROUNDS} rounds (median), node ${process.version}`,
  );
  for (const name of Object.keys(CONFIGS)) {
    const us = median(results[name]);
    console.log(
      `${name.padEnd(13)} ${(us * 1000).toFixed(0).padStart(4)} µs/cycle, ` +
        `client CPU ${median(cpus[name]).toFixed(0).padStart(3)} µs/cycle  ` +
        `(throughput ${(off / us).toFixed(3)}× off; rounds: ${results[name].map((x) => (x * 1000).toFixed(0)).join(' ')})`,
    );
  }
  const noProvider = median(results['no provider']);
  const sdk = median(results['SDK provider']);
  console.log(
    `SDK provider / no provider: ${(sdk / noProvider).toFixed(3)}× the time per cycle, ` +
      `${(median(cpus['SDK provider']) - median(cpus['no provider'])).toFixed(1)} µs more client CPU`,
  );
  // The SDK run must really have traced (2 spans a cycle), or its figure would mean nothing.
  const expected = ROUNDS * (CYCLES + 200) * 2;
  if (spansEnded !== expected) throw new Error(`${spansEnded} spans ended, expected ${expected}`);
  console.log(`spans ended under the SDK provider: ${spansEnded} (2 per cycle, as expected)`);
} finally {
  fleet?.stop();
}
