// Type-only: erased from the build, so the package loads without @opentelemetry/api installed.
import type * as OtelApi from '@opentelemetry/api';
import type { Clock } from '../clock';
import {
  LockKeyConflictError,
  LockNotAcquiredError,
  RedlockError,
  type NodeOutcome,
} from '../errors';
import { globalSingleton } from '../global-singleton';

/** The OpenTelemetry settings of a lock manager (`telemetry` option). */
export interface RedlockTelemetryOptions {
  /**
   * Put the resource names on spans (`redlock.resources`), and let span statuses carry error
   * messages, which name the resources. Off by default: resource names are often built from
   * request data (`order:${id}`, an e-mail) and traces leave the process. Never on metrics
   * (one series per resource would be unbounded), and owner values are never recorded at all.
   * @default false
   */
  recordResources?: boolean;
}

/** Instrumentation scope of every span and metric. */
export const TELEMETRY_SCOPE = 'nestjs-redlock';

/** Why an acquisition failed, as the `redlock.reason` attribute says it. */
export type AcquireFailureReason = 'held' | 'unavailable' | 'aborted' | 'conflict' | 'error';

type Api = typeof OtelApi;

// Numeric values of the API's enums, so that nothing but the lazily loaded module is needed.
const SPAN_KIND_INTERNAL = 0 as OtelApi.SpanKind.INTERNAL;
const STATUS_ERROR = 2 as OtelApi.SpanStatusCode.ERROR;

/** Outcomes a node can have in an attempt, each counted on a failed acquisition's span. */
const NODE_OUTCOMES: readonly NodeOutcome['outcome'][] = [
  'acquired',
  'held',
  'error',
  'timeout',
  'pending',
  'excluded',
];

/**
 * Durations of acquisitions, in seconds: from well under a millisecond (uncontended, local)
 * to the default `wait` of 10 s and beyond.
 */
const DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];
const ATTEMPT_BUCKETS = [1, 2, 3, 5, 10, 20, 50, 100];

let loading: Promise<Api | undefined> | undefined;

/**
 * `@opentelemetry/api`, imported once per process on first use; `undefined` when it is not
 * installed. A dynamic `import()` works in the CommonJS and the ESM build alike (a `require`
 * would not exist in the latter), and its failure is the "optional peer absent" case.
 */
export function loadOtelApi(): Promise<Api | undefined> {
  loading ??= import('@opentelemetry/api').then(
    (module: unknown) => {
      // Imported from ESM, a CommonJS module's names may only be on its default export (which
      // is then its whole `module.exports`).
      const api = module as Api & { default?: unknown };
      const candidate = (typeof api.createNoopMeter === 'function' ? api : api.default) as
        Partial<Api> | undefined;
      // An API too old to have what we use counts as absent.
      return typeof candidate?.createNoopMeter === 'function' ? (candidate as Api) : undefined;
    },
    () => undefined,
  );
  return loading;
}

/**
 * Locks held, summed over every lock manager in the process, for the `redlock.locks.held`
 * gauge: one callback per meter (the SDK keeps the last observation of a series, so one
 * callback per lock manager would report only one of them). On `globalThis`, shared by the
 * ESM and CommonJS copies of the package.
 */
const heldRegistry = globalSingleton('telemetryHeld@1', () => ({
  sources: new Set<() => number>(),
  meters: new WeakSet<object>(),
}));

/**
 * The OpenTelemetry instrumentation of one lock manager: spans `redlock.acquire`,
 * `redlock.release`, `redlock.extend` and the `redlock.*` metrics (README "OpenTelemetry").
 * Created only when the API is installed; with no provider registered its spans are the API's
 * non-recording ones and its instruments no-ops, and it skips all attribute work.
 */
export class RedlockTelemetry {
  private readonly tracer: OtelApi.Tracer;
  /** False while no MeterProvider was registered when this lock manager started. */
  private readonly metered: boolean;
  private readonly duration: OtelApi.Histogram;
  private readonly attemptCount: OtelApi.Histogram;
  private readonly outcomes: OtelApi.Counter;
  private readonly lost: OtelApi.Counter;
  private readonly nodeErrors: OtelApi.Counter;

  constructor(
    private readonly api: Api,
    private readonly clock: Clock,
    private readonly recordResources: boolean,
    private readonly nodeCount: number,
    private readonly quorum: number,
    private readonly heldCount: () => number,
  ) {
    // The tracer is the API's proxy: a provider registered later is used from then on.
    this.tracer = api.trace.getTracer(TELEMETRY_SCOPE);
    // The meter is not: without a provider now, it is the API's no-op meter for good.
    const meter = api.metrics.getMeter(TELEMETRY_SCOPE);
    this.metered = Object.getPrototypeOf(meter) !== Object.getPrototypeOf(api.createNoopMeter());
    this.duration = meter.createHistogram('redlock.acquire.duration', {
      description: 'Duration of lock acquisitions, waiting and retries included',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.attemptCount = meter.createHistogram('redlock.acquire.attempts', {
      description: 'Attempts made per lock acquisition',
      unit: '{attempt}',
      valueType: api.ValueType.INT,
      advice: { explicitBucketBoundaries: ATTEMPT_BUCKETS },
    });
    this.outcomes = meter.createCounter('redlock.acquire.outcomes', {
      description: 'Lock acquisitions by outcome and reason',
      unit: '{acquisition}',
    });
    this.lost = meter.createCounter('redlock.lock.lost', {
      description: 'Locks lost while held',
      unit: '{lock}',
    });
    this.nodeErrors = meter.createCounter('redlock.node.errors', {
      description:
        'Failures of a Redis node: errors and timeouts in attempts, lost connections, slow answers',
      unit: '{error}',
    });
    if (this.metered) {
      heldRegistry.sources.add(heldCount);
      if (!heldRegistry.meters.has(meter)) {
        heldRegistry.meters.add(meter);
        meter
          .createObservableGauge('redlock.locks.held', {
            description: 'Locks held by this process now',
            unit: '{lock}',
            valueType: api.ValueType.INT,
          })
          .addCallback((result) => {
            let held = 0;
            for (const source of heldRegistry.sources) held += source();
            result.observe(held);
          });
      }
    }
  }

  /**
   * Starts the trace of one acquisition, or returns `undefined` when nothing would record it
   * (no provider, or the span sampled out and no metrics): the lock path then does no more.
   */
  startAcquire(resources: readonly string[]): AcquireTrace | undefined {
    const span = this.tracer.startSpan('redlock.acquire', { kind: SPAN_KIND_INTERNAL });
    const recording = span.isRecording();
    if (!recording && !this.metered) return undefined;
    if (recording) this.describe(span, resources);
    return new AcquireTrace(this, recording ? span : undefined, this.clock.now());
  }

  /**
   * The span of a release or extension round, or `undefined` when it would not record: the
   * caller then runs the round as it would without telemetry.
   */
  startRound(
    name: 'redlock.release' | 'redlock.extend',
    resources: readonly string[],
  ): OtelApi.Span | undefined {
    const span = this.tracer.startSpan(name, { kind: SPAN_KIND_INTERNAL });
    if (!span.isRecording()) return undefined;
    this.describe(span, resources);
    return span;
  }

  /** Runs `round` (one release) under `span` (from {@link startRound}), and ends it. */
  async traceRelease(
    span: OtelApi.Span,
    heldMs: number | undefined,
    round: () => Promise<void>,
  ): Promise<void> {
    if (heldMs === undefined) span.setAttribute('redlock.lock.lost', true);
    else span.setAttribute('redlock.lock.held_ms', heldMs);
    try {
      await this.within(span, round);
    } finally {
      span.end();
    }
  }

  /** Runs `round` (one extension) under `span` (from {@link startRound}), and ends it. */
  async traceExtend<T extends { deadline: number } | { lost: boolean }>(
    span: OtelApi.Span,
    ttl: number,
    round: () => Promise<T>,
  ): Promise<T> {
    span.setAttribute('redlock.lock.ttl_ms', ttl);
    try {
      const result = await this.within(span, round);
      const outcome = 'deadline' in result ? 'extended' : result.lost ? 'lost' : 'failed';
      span.setAttribute('redlock.outcome', outcome);
      if (outcome !== 'extended') span.setStatus({ code: STATUS_ERROR, message: outcome });
      return result;
    } catch (error) {
      span.setAttribute('redlock.outcome', 'error');
      this.fail(span, 'error', error);
      throw error;
    } finally {
      span.end();
    }
  }

  /** A held lock was lost. */
  lockLost(): void {
    if (this.metered) this.lost.add(1);
  }

  /** A node failed: an error or timeout in an attempt, or its connection was lost. */
  nodeError(node: string, type: 'error' | 'timeout' | 'down' | 'slow'): void {
    if (this.metered) this.nodeErrors.add(1, { 'redlock.node': node, 'error.type': type });
  }

  /** Stops counting this lock manager's locks in `redlock.locks.held`. */
  close(): void {
    heldRegistry.sources.delete(this.heldCount);
  }

  /** @internal The end of an acquisition: its span and metrics. */
  finishAcquire(
    trace: AcquireTrace,
    reason: AcquireFailureReason | undefined,
    error: unknown,
  ): void {
    const { span, attempts } = trace;
    const outcome = reason === undefined ? 'acquired' : 'failed';
    if (span !== undefined) {
      span.setAttribute('redlock.acquire.attempts', attempts);
      span.setAttribute('redlock.outcome', outcome);
      if (reason !== undefined) {
        span.setAttribute('redlock.reason', reason);
        const nodes = error instanceof LockNotAcquiredError ? error.nodes : trace.lastOutcomes;
        if (nodes !== undefined && nodes.length > 0) describeNodes(span, nodes);
        // A lock held by someone else, or a caller giving up, is an answer, not a fault.
        if (reason !== 'held' && reason !== 'aborted') this.fail(span, reason, error);
      }
      span.end();
    }
    if (this.metered) {
      const attributes: OtelApi.Attributes =
        reason === undefined
          ? { 'redlock.outcome': outcome }
          : { 'redlock.outcome': outcome, 'redlock.reason': reason };
      this.duration.record((this.clock.now() - trace.startedAt) / 1_000, attributes);
      this.attemptCount.record(attempts, { 'redlock.outcome': outcome });
      this.outcomes.add(1, attributes);
    }
  }

  /** @internal The granted attempt of an acquisition: its node summary and node errors. */
  granted(trace: AcquireTrace, read: () => readonly NodeOutcome[]): void {
    if (trace.span === undefined && !this.metered) return;
    const nodes = read();
    if (trace.span !== undefined) describeNodes(trace.span, nodes);
    this.countNodeErrors(nodes);
  }

  /** @internal One failed attempt of an acquisition. */
  attemptFailed(
    trace: AcquireTrace,
    attempt: number,
    reason: string,
    nodes: readonly NodeOutcome[],
  ) {
    this.countNodeErrors(nodes);
    trace.span?.addEvent('redlock.attempt_failed', {
      'redlock.attempt': attempt,
      'redlock.reason': reason,
      ...nodeCounts(nodes),
    });
  }

  /** @internal Runs `fn` with `span` as the active span (Redis client spans nest under it). */
  within<T>(span: OtelApi.Span, fn: () => Promise<T>): Promise<T> {
    const { context, trace } = this.api;
    return context.with(trace.setSpan(context.active(), span), fn);
  }

  /** Errors and timeouts of nodes in one attempt, into `redlock.node.errors`. */
  private countNodeErrors(nodes: readonly NodeOutcome[]): void {
    if (!this.metered) return;
    for (const { node, outcome } of nodes) {
      if (outcome === 'error' || outcome === 'timeout') this.nodeError(node, outcome);
    }
  }

  private describe(span: OtelApi.Span, resources: readonly string[]): void {
    span.setAttribute('redlock.resource.count', resources.length);
    span.setAttribute('redlock.nodes.total', this.nodeCount);
    span.setAttribute('redlock.nodes.quorum', this.quorum);
    if (this.recordResources) span.setAttribute('redlock.resources', [...resources]);
  }

  /** An error status: the error's message only when resources may be recorded (it names them). */
  private fail(span: OtelApi.Span, type: string, error: unknown): void {
    span.setAttribute('error.type', type);
    const message =
      this.recordResources && error instanceof RedlockError
        ? error.diagnostic
        : this.recordResources && error instanceof Error
          ? error.message
          : type;
    span.setStatus({ code: STATUS_ERROR, message });
  }
}

/** One acquisition being traced: its span (when recording), start and attempts so far. */
export class AcquireTrace {
  /** Attempts made so far. */
  attempts = 0;
  /** The node outcomes of the latest failed attempt. */
  lastOutcomes?: readonly NodeOutcome[];

  constructor(
    private readonly telemetry: RedlockTelemetry,
    readonly span: OtelApi.Span | undefined,
    /** Our clock's time of the call. */
    readonly startedAt: number,
  ) {}

  /** Runs the acquisition with this span active, so that Redis client spans nest under it. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.span === undefined ? fn() : this.telemetry.within(this.span, fn);
  }

  /** Attempt `attempt` failed (it may be retried). */
  attemptFailed(attempt: number, reason: string, nodes: readonly NodeOutcome[]): void {
    this.lastOutcomes = nodes;
    this.telemetry.attemptFailed(this, attempt, reason, nodes);
  }

  /** The attempt that got the lock: what each node answered (read only when recorded). */
  granted(outcomes: () => readonly NodeOutcome[]): void {
    this.telemetry.granted(this, outcomes);
  }

  /** The acquisition succeeded. */
  succeeded(): void {
    this.telemetry.finishAcquire(this, undefined, undefined);
  }

  /** The acquisition failed with `error`, thrown to the caller. */
  failed(error: unknown, signal: AbortSignal | undefined): void {
    this.telemetry.finishAcquire(this, failureReason(error, signal), error);
  }
}

/** `redlock.reason` of an acquisition that threw `error`. */
function failureReason(error: unknown, signal: AbortSignal | undefined): AcquireFailureReason {
  if (error instanceof LockNotAcquiredError) return error.reason;
  if (error instanceof LockKeyConflictError) return 'conflict';
  if (signal?.aborted && error === signal.reason) return 'aborted';
  return 'error';
}

/** The attribute counting each node outcome, built once: `redlock.nodes.held`, … */
const COUNT_KEYS = Object.fromEntries(
  NODE_OUTCOMES.map((outcome) => [outcome, `redlock.nodes.${outcome}`]),
) as Record<NodeOutcome['outcome'], string>;

/** Per outcome, how many nodes had it: `redlock.nodes.held` = 2, … */
function nodeCounts(nodes: readonly NodeOutcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const outcome of NODE_OUTCOMES) counts[COUNT_KEYS[outcome]] = 0;
  for (const { outcome } of nodes) counts[COUNT_KEYS[outcome]]++;
  return counts;
}

/** The per-node summary of a failed acquisition: counts, and `host:port=outcome` per node. */
function describeNodes(span: OtelApi.Span, nodes: readonly NodeOutcome[]): void {
  span.setAttributes(nodeCounts(nodes));
  span.setAttribute(
    'redlock.nodes.outcomes',
    nodes.map(({ node, outcome }) => `${node}=${outcome}`),
  );
}
