/**
 * Logs, metrics and traces of one Lambda function, through Powertools for
 * AWS Lambda, set up once per function (module scope, so once per
 * container) and applied as one middy middleware stack:
 *
 * - Powertools' Logger, with injectLambdaContext, so every line carries the
 *   invocation's request id. Cairn's own Logger interface (logger.ts) is
 *   served by it: the handler hands `observability.logger` to
 *   createServices, and every line the services write goes through
 *   Powertools too. The lines keep the shape of the local logger (`level`,
 *   `time`, `msg`, then the fields), plus `fn` (the function), `requestId`,
 *   `coldStart` and `traceId`, all on stdout, so one description of the log
 *   fits both doors.
 * - One line per invocation (`msg: "invocation"`) once the handler has
 *   answered: what came in (method and path for HTTP events, never the
 *   query string, headers or body; the trigger otherwise), the status or
 *   the outcome, and the duration. For a streamed response the duration is
 *   the time to the response's head: the body is still flowing.
 * - Powertools' Metrics: the `ColdStart` metric in CloudWatch's embedded
 *   metric format (namespace `Cairn`, dimensions `service`, `fn` and
 *   `function_name`), flushed at the end of each invocation.
 * - Powertools' Tracer: the handler's X-Ray subsegment with the cold start
 *   and service annotations, when the function runs with active tracing.
 *   Responses are never recorded as metadata (they can carry API keys and
 *   secrets shown once); errors are. Loaded only where it traces (see
 *   `tracing`).
 *
 * Nothing here logs an event, a body or a header.
 */
import { Logger as PowertoolsLogger, LogFormatter, LogItem } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { MiddlewareObj, Request } from '@middy/core';
import type { LogLevel } from './config.js';
import type { LogFields, Logger } from './logger.js';

/** The CloudWatch namespace of Cairn's own metrics. */
export const METRICS_NAMESPACE = 'Cairn';
/** The `service` dimension of those metrics; `fn` names the function. */
export const METRICS_SERVICE = 'cairn';
/** The `msg` of the one line each invocation ends with. */
export const INVOCATION_MESSAGE = 'invocation';

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** CAIRN_LOG_LEVEL, or `info` when unset or not a level (loadConfig reports a bad value on the first request). */
export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): LogLevel {
  const value = env.CAIRN_LOG_LEVEL?.trim().toLowerCase();
  return LEVELS.includes(value as LogLevel) ? (value as LogLevel) : 'info';
}

/** Powertools' name for a level. */
const powertoolsLevel = (level: LogLevel) => level.toUpperCase() as Uppercase<LogLevel>;

/**
 * Powertools' attributes in the local logger's shape. The additional
 * attributes (the fields of the call) come last, as locally.
 */
export class CairnLogFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const context = attributes.lambdaContext;
    return new LogItem({
      attributes: {
        level: String(attributes.logLevel).toLowerCase(),
        time: attributes.timestamp.toISOString(),
        msg: attributes.message,
        fn: attributes.serviceName,
        requestId: context?.awsRequestId,
        coldStart: context?.coldStart,
        traceId: attributes.xRayTraceId,
      },
    }).addAttributes(additional);
  }
}

/**
 * Powertools' Logger writing every level to stdout, as the local logger does
 * (Powertools sends warnings and errors to stderr; in Lambda both reach the
 * log group, but one stream keeps the two doors alike and readable in order).
 */
export class StdoutPowertoolsLogger extends PowertoolsLogger {
  protected override printLog(logLevel: number, log: LogItem): void {
    log.prepareForPrint();
    process.stdout.write(`${JSON.stringify(log.getAttributes(), this.getJsonReplacer())}\n`);
  }
}

/** Keys Powertools keeps for itself (it drops them from a call's fields with a warning). */
const RESERVED = new Set(['level', 'message', 'sampling_rate', 'service', 'timestamp']);

function fieldsFor(base: LogFields, fields: LogFields | undefined): LogFields {
  const all: LogFields = { ...base, ...fields };
  for (const key of Object.keys(all)) {
    if (RESERVED.has(key)) {
      all[`${key}_`] = all[key];
      delete all[key];
    }
  }
  return all;
}

/**
 * Cairn's Logger over one Powertools Logger. A child only adds fields: it
 * writes through the same Powertools instance, so it carries the request id
 * of whatever invocation is running when it logs, even when it was made at
 * cold start (Powertools' own children copy the context they were made in).
 */
export function loggerOver(powertools: PowertoolsLogger, base: LogFields = {}): Logger {
  return {
    debug: (msg, fields) => powertools.debug(msg, fieldsFor(base, fields)),
    info: (msg, fields) => powertools.info(msg, fieldsFor(base, fields)),
    warn: (msg, fields) => powertools.warn(msg, fieldsFor(base, fields)),
    error: (msg, fields) => powertools.error(msg, fieldsFor(base, fields)),
    child: (fields) => loggerOver(powertools, { ...base, ...fields }),
  };
}

type AnyRecord = Record<string, unknown>;
const isRecord = (value: unknown): value is AnyRecord => typeof value === 'object' && value !== null;

const MAX_PATH = 512;

/**
 * What an invocation was asked, in a few safe fields: the method and path
 * of an HTTP event (API Gateway HTTP and REST APIs, Function URLs; the
 * query string is left out: presigned signatures and hook tokens live
 * there), or the trigger of any other.
 */
export function describeEvent(event: unknown): LogFields {
  if (!isRecord(event)) return { trigger: 'invoke' };
  const requestContext = isRecord(event.requestContext) ? event.requestContext : undefined;
  const http = requestContext && isRecord(requestContext.http) ? requestContext.http : undefined;
  const apiRequestId = typeof requestContext?.requestId === 'string' ? requestContext.requestId : undefined;
  const clip = (path: unknown) => (typeof path === 'string' ? (path.length > MAX_PATH ? `${path.slice(0, MAX_PATH)}…` : path) : undefined);
  if (http && typeof http.method === 'string') {
    return { trigger: 'http', method: http.method, path: clip(event.rawPath ?? http.path), apiRequestId };
  }
  if (typeof event.httpMethod === 'string') {
    return { trigger: 'http', method: event.httpMethod, path: clip(event.path), apiRequestId };
  }
  if (Array.isArray(event.Records)) {
    const first: unknown = event.Records[0];
    const source = isRecord(first) ? (first.eventSource ?? first.EventSource) : undefined;
    return { trigger: typeof source === 'string' ? source : 'records', records: event.Records.length };
  }
  if (typeof event['detail-type'] === 'string' && typeof event.source === 'string') {
    return { trigger: 'eventbridge', source: event.source, detailType: event['detail-type'] };
  }
  return { trigger: 'invoke' };
}

/** What the handler answered, in a few safe fields (never the body). */
export function describeResponse(response: unknown): LogFields {
  if (!isRecord(response)) return { outcome: 'ok' };
  if (typeof response.statusCode === 'number') return { status: response.statusCode };
  if (Array.isArray(response.batchItemFailures)) return { outcome: 'ok', failures: response.batchItemFailures.length };
  // A handler that names its own outcome (the preview function's `taken`, `skipped`, ...).
  if (typeof response.outcome === 'string' && /^[a-z][a-z-]{0,31}$/.test(response.outcome)) return { outcome: response.outcome };
  return { outcome: 'ok' };
}

/**
 * The one line each invocation ends with. Innermost in the stack, so its
 * duration is the handler's own.
 */
export function invocationLine(logger: Logger): MiddlewareObj {
  const started = new WeakMap<object, number>();
  const line = (request: Request, outcome: LogFields, level: 'info' | 'warn' | 'error') => {
    const begun = started.get(request);
    const durationMs = begun === undefined ? undefined : Math.round(performance.now() - begun);
    logger[level](INVOCATION_MESSAGE, { ...describeEvent(request.event), ...outcome, durationMs });
  };
  return {
    before: (request) => {
      started.set(request, performance.now());
    },
    after: (request) => {
      const outcome = describeResponse(request.response);
      line(request, outcome, typeof outcome.status === 'number' && outcome.status >= 500 ? 'warn' : 'info');
    },
    onError: (request) => {
      const err = request.error;
      line(request, { outcome: 'error', error: err instanceof Error ? { name: err.name, message: err.message } : String(err) }, 'error');
    },
  };
}

export interface Observability {
  /** The function's short name (`graphql`, `gateway`, ...): the lines' `fn`, the metrics' `fn` dimension. */
  readonly name: string;
  /** Cairn's Logger, written through Powertools: give it to createServices. */
  readonly logger: Logger;
  readonly powertoolsLogger: PowertoolsLogger;
  readonly metrics: Metrics;
  /** The level's first reading, injectLambdaContext, the tracer's handler segment, the metrics' flush and the invocation line, in that order. */
  readonly middlewares: MiddlewareObj[];
}

export interface ObservabilityOptions {
  /** @default CAIRN_LOG_LEVEL, else `info` */
  readonly logLevel?: LogLevel;
}

/** Set up once per function, at module scope. */
export function createObservability(name: string, options: ObservabilityOptions = {}): Observability {
  const level = options.logLevel ?? logLevelFromEnv();
  const powertoolsLogger = new StdoutPowertoolsLogger({
    serviceName: name,
    logLevel: powertoolsLevel(level),
    logFormatter: new CairnLogFormatter(),
  });
  const logger = loggerOver(powertoolsLogger);
  // Powertools warns on every flush without application metrics; the
  // cold-start metric alone is the normal case here, so that one is debug.
  const metricsLogger = {
    debug: (...args: unknown[]) => powertoolsLogger.debug(String(args[0])),
    info: (...args: unknown[]) => powertoolsLogger.info(String(args[0])),
    warn: (...args: unknown[]) => {
      const text = String(args[0]);
      if (text.startsWith('No application metrics')) powertoolsLogger.debug(text);
      else powertoolsLogger.warn(text);
    },
    error: (...args: unknown[]) => powertoolsLogger.error(String(args[0])),
  };
  const metrics = new Metrics({
    namespace: METRICS_NAMESPACE,
    serviceName: METRICS_SERVICE,
    defaultDimensions: { fn: name },
    logger: metricsLogger,
  });
  // Without a level given, CAIRN_LOG_LEVEL is read again when the first
  // invocation starts: the environment a handler module was loaded in is
  // not always the one it runs in (tests set it after importing).
  let levelPending = options.logLevel === undefined;
  const middlewares: MiddlewareObj[] = [
    {
      before: () => {
        if (!levelPending) return;
        levelPending = false;
        powertoolsLogger.setLogLevel(powertoolsLevel(logLevelFromEnv()));
      },
    },
    injectLambdaContext(powertoolsLogger, { logEvent: false }) as MiddlewareObj,
    tracing(name),
    logMetrics(metrics, { captureColdStartMetric: true }) as MiddlewareObj,
    invocationLine(logger),
  ];
  return { name, logger, powertoolsLogger, metrics, middlewares };
}

/**
 * Whether Powertools' Tracer traces here, decided as it decides
 * (`Tracer.setTracingEnabled`): in Lambda (`AWS_EXECUTION_ENV` is set:
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime),
 * neither Amplify's mock nor SAM's local runner, and POWERTOOLS_TRACE_ENABLED
 * not `false`.
 */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  const runtime = env.AWS_EXECUTION_ENV ?? '';
  if (runtime === '' || runtime === 'AWS_Lambda_amplify-mock' || (env.AWS_SAM_LOCAL ?? '') !== '') return false;
  return (env.POWERTOOLS_TRACE_ENABLED ?? '').toLowerCase() !== 'false';
}

/**
 * The Tracer's handler segment, loaded only where it traces: from the
 * function's initialization on, awaited by the first invocation.
 * Importing @aws-lambda-powertools/tracer loads aws-xray-sdk-core, whose
 * cls-hooked namespace enables an async hook with a destroy callback for
 * the whole process, at import, traced or not: every promise made
 * afterwards is tracked until collected (measured: 300,000 awaits took 41
 * ms of CPU without the hook, 415 ms with it). A process that only imports
 * a handler (the local service's tests, the bench) was paying that, once
 * per import: each Jest test file gets its own copy of the module, and so
 * another hook in the same process.
 */
function tracing(name: string): MiddlewareObj {
  let loaded: Promise<MiddlewareObj | undefined> | undefined;
  const segment = () =>
    (loaded ??= tracingWanted()
      ? Promise.all([import('@aws-lambda-powertools/tracer'), import('@aws-lambda-powertools/tracer/middleware')]).then(
          ([{ Tracer }, { captureLambdaHandler }]) =>
            captureLambdaHandler(new Tracer({ serviceName: name }), { captureResponse: false }) as MiddlewareObj,
        )
      : Promise.resolve(undefined));
  // Where it traces, loading starts now: in Lambda, during the function's initialization, before the first invocation waits on it.
  if (tracingWanted()) void segment().catch(() => undefined);
  return {
    before: async (request: Request) => (await segment())?.before?.(request),
    after: async (request: Request) => (await segment())?.after?.(request),
    onError: async (request: Request) => (await segment())?.onError?.(request),
  };
}

interface Usable {
  use(middlewares: MiddlewareObj[]): unknown;
}

/**
 * The handler with the observability stack in front: a middy handler gets
 * it with `.use` (so a streaming one keeps streaming), anything else is an
 * error at module load rather than a function that logs nothing.
 */
export function observe<H>(handler: H, observability: Observability): H {
  const usable = handler as unknown as Partial<Usable>;
  if (typeof usable.use !== 'function') throw new TypeError('observe() needs a middy handler');
  usable.use(observability.middlewares);
  return handler;
}
