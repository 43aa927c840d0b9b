import { metrics, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type DataPoint,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/** A metric reader collected on demand: what the SDK would export now. */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Fresh global OpenTelemetry providers that keep what the lock records: finished spans in
 * memory, metrics read on demand. One per test (a lock manager binds its meter when it starts);
 * `TelemetryCapture.stop()` after the last.
 */
export class TelemetryCapture {
  readonly spans = new InMemorySpanExporter();
  readonly reader = new TestReader();

  constructor() {
    trace.disable();
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.spans)] }),
    );
    metrics.disable();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [this.reader] }));
  }

  /** Unregisters the global providers. */
  static stop(): void {
    trace.disable();
    metrics.disable();
  }

  /** The finished spans called `name`, oldest first. */
  finished(name: string): ReadableSpan[] {
    return this.spans.getFinishedSpans().filter((span) => span.name === name);
  }

  /** The data points of the library's metric `name`, as collected now. */
  async points(name: string): Promise<DataPoint<unknown>[]> {
    const { resourceMetrics } = await this.reader.collect();
    return resourceMetrics.scopeMetrics
      .filter((scope) => scope.scope.name === 'nestjs-redlock')
      .flatMap((scope) => scope.metrics)
      .filter((metric) => metric.descriptor.name === name)
      .flatMap((metric) => metric.dataPoints as DataPoint<unknown>[]);
  }
}
