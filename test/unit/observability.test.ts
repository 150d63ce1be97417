/**
 * The observability stack every Lambda function wears (functions/core/observability.ts):
 * one structured line per invocation carrying the Lambda request id, the
 * services' own lines through Powertools with the same id, the cold-start
 * metric flushed in CloudWatch's embedded metric format, and nothing of a
 * request's body, headers or query string in any of it. Driven with real
 * middy handlers, the project's own Lambda HTTP door (streaming) and a
 * Lambda context object.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import middy from '@middy/core';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEventV2, Context, SQSEvent } from 'aws-lambda';
import { lambdaHttpHandler } from '../../functions/core/http/lambda.js';
import {
  createObservability,
  describeEvent,
  INVOCATION_MESSAGE,
  logLevelFromEnv,
  METRICS_NAMESPACE,
  observe,
  tracingWanted,
} from '../../functions/core/observability.js';
import { v2Event } from '../support/lambda-door.js';
import { ROOT } from '../support/child-service.js';

type Line = Record<string, any>;

// What Lambda sets in an on-demand execution environment; Powertools counts
// a cold start only there. Set before the describe blocks build their stacks.
const initializationType = process.env.AWS_LAMBDA_INITIALIZATION_TYPE;
process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
afterAll(() => {
  if (initializationType === undefined) delete process.env.AWS_LAMBDA_INITIALIZATION_TYPE;
  else process.env.AWS_LAMBDA_INITIALIZATION_TYPE = initializationType;
});

/** Every stdout line written while `run` runs, parsed (each must be JSON). */
async function stdoutOf<T>(run: () => Promise<T>): Promise<{ lines: Line[]; result?: T; error?: unknown }> {
  const chunks: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  let result: T | undefined;
  let error: unknown;
  try {
    result = await run();
  } catch (err) {
    error = err;
  } finally {
    process.stdout.write = write;
  }
  const lines = chunks
    .join('')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Line);
  return { lines, result, error };
}

let invocation = 0;
function lambdaContext(): Context {
  invocation += 1;
  const requestId = `6f1e3a52-0000-4000-8000-${String(invocation).padStart(12, '0')}`;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'Cairn-GatewayFunction-AbC123',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:Cairn-GatewayFunction-AbC123',
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: '/aws/lambda/Cairn-GatewayFunction-AbC123',
    logStreamName: '2026/01/01/[$LATEST]abc',
    getRemainingTimeInMillis: () => 30_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

const SECRET_BODY = 'body-secret-7f3a';
const SECRET_QUERY = 'X-Amz-Signature=query-secret-9b2c';
const SECRET_HEADER = 'Bearer header-secret-41d0';

function httpEvent(): APIGatewayProxyEventV2 {
  const event = v2Event(
    'POST',
    `https://api.example.com/graphql?${SECRET_QUERY}`,
    { authorization: SECRET_HEADER },
    new TextEncoder().encode(SECRET_BODY),
  );
  return event;
}

const invocationLines = (lines: Line[]) => lines.filter((l) => l.msg === INVOCATION_MESSAGE);
const emfLines = (lines: Line[]) => lines.filter((l) => l._aws !== undefined);

describe('a buffered middy handler', () => {
  const obs = createObservability('graphql', { logLevel: 'info' });
  // Made at "cold start", before any invocation, as the services' children are.
  const coldChild = obs.logger.child({ component: 'resolvers' });
  const handler = observe(
    middy(async (event: APIGatewayProxyEventV2) => {
      coldChild.info('resolving', { path: event.rawPath });
      obs.logger.warn('something to say', { message: 'kept under another name' });
      return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"apiKey":"cairn_shown_once"}}' };
    }),
    obs,
  );

  test('one invocation line with the request id, the method, the path, the status and the duration', async () => {
    const context = lambdaContext();
    const { lines, result } = await stdoutOf(() => handler(httpEvent(), context));
    expect(result).toMatchObject({ statusCode: 200 });
    const ended = invocationLines(lines);
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      level: 'info',
      msg: INVOCATION_MESSAGE,
      fn: 'graphql',
      requestId: context.awsRequestId,
      coldStart: true,
      trigger: 'http',
      method: 'POST',
      path: '/graphql',
      status: 200,
    });
    expect(typeof ended[0]!.durationMs).toBe('number');
    expect(typeof ended[0]!.time).toBe('string');
    expect(new Date(ended[0]!.time).toISOString()).toBe(ended[0]!.time);
  });

  test("the services' lines carry the running invocation's request id, a child made at cold start's too", async () => {
    const first = lambdaContext();
    const second = lambdaContext();
    const one = await stdoutOf(() => handler(httpEvent(), first));
    const two = await stdoutOf(() => handler(httpEvent(), second));
    const resolving = (lines: Line[]) => lines.find((l) => l.msg === 'resolving');
    expect(resolving(one.lines)).toMatchObject({
      level: 'info',
      fn: 'graphql',
      component: 'resolvers',
      path: '/graphql',
      requestId: first.awsRequestId,
    });
    expect(resolving(two.lines)).toMatchObject({ requestId: second.awsRequestId, coldStart: false });
    // A field Powertools reserves is renamed, not dropped, and no warning about it is logged.
    expect(two.lines.find((l) => l.msg === 'something to say')).toMatchObject({ level: 'warn', message_: 'kept under another name' });
    expect(two.lines.some((l) => /reserved key/.test(String(l.msg)))).toBe(false);
  });

  test('no line holds the body, a header, the query string or the response', async () => {
    const { lines } = await stdoutOf(() => handler(httpEvent(), lambdaContext()));
    const text = JSON.stringify(lines);
    for (const secret of [SECRET_BODY, 'query-secret-9b2c', 'header-secret-41d0', 'cairn_shown_once']) expect(text).not.toContain(secret);
  });
});

describe('metrics in the embedded metric format', () => {
  test('the first invocation flushes ColdStart (namespace Cairn, dimensions service, fn, function_name); later ones do not', async () => {
    const obs = createObservability('deploy-worker', { logLevel: 'info' });
    const handler = observe(
      middy(async () => ({ batchItemFailures: [] })),
      obs,
    );
    const context = lambdaContext();
    const cold = await stdoutOf(() => handler({}, context));
    const [emf, ...more] = emfLines(cold.lines);
    expect(more).toEqual([]);
    expect(emf).toMatchObject({ ColdStart: 1, service: 'cairn', fn: 'deploy-worker', function_name: context.functionName });
    const directive = emf!._aws.CloudWatchMetrics[0];
    expect(directive.Namespace).toBe(METRICS_NAMESPACE);
    expect(directive.Metrics).toEqual([{ Name: 'ColdStart', Unit: 'Count' }]);
    expect(directive.Dimensions[0]).toEqual(expect.arrayContaining(['service', 'fn', 'function_name']));
    expect(typeof emf!._aws.Timestamp).toBe('number');
    // The invocation line is still there, and no warning about missing application metrics.
    expect(invocationLines(cold.lines)).toHaveLength(1);
    expect(cold.lines.some((l) => l.level === 'warn')).toBe(false);

    const warm = await stdoutOf(() => handler({}, lambdaContext()));
    expect(emfLines(warm.lines)).toEqual([]);
    expect(invocationLines(warm.lines)).toHaveLength(1);
  });

  test("a metric the handler adds is flushed at the invocation's end, even when the handler throws", async () => {
    const obs = createObservability('preview', { logLevel: 'info' });
    const handler = observe(
      middy(async (event: { fail?: boolean }) => {
        obs.metrics.addMetric('PreviewTaken', MetricUnit.Count, 1);
        if (event.fail) throw new Error('no browser');
        return { outcome: 'taken' };
      }),
      obs,
    );
    await stdoutOf(() => handler({}, lambdaContext())); // the cold start
    const ok = await stdoutOf(() => handler({}, lambdaContext()));
    expect(emfLines(ok.lines)).toEqual([expect.objectContaining({ PreviewTaken: 1, fn: 'preview', service: 'cairn' })]);
    const failed = await stdoutOf(() => handler({ fail: true }, lambdaContext()));
    expect((failed.error as Error).message).toBe('no browser');
    expect(emfLines(failed.lines)).toEqual([expect.objectContaining({ PreviewTaken: 1 })]);
  });
});

describe('invocations other than HTTP', () => {
  const obs = createObservability('deploy-worker', { logLevel: 'info' });
  const handler = observe(
    middy(async (event: SQSEvent | { fail: true }) => {
      if ('fail' in event) throw new TypeError('bad tick');
      return { batchItemFailures: [{ itemIdentifier: event.Records[1]!.messageId }] };
    }),
    obs,
  );
  const record = (id: string) => ({ messageId: id, eventSource: 'aws:sqs', body: '{"siteId":"s","deployId":"d"}' });

  test('an SQS batch: the source, the number of records and of failures', async () => {
    const context = lambdaContext();
    const { lines } = await stdoutOf(() => handler({ Records: [record('m1'), record('m2')] } as unknown as SQSEvent, context));
    expect(invocationLines(lines)).toEqual([
      expect.objectContaining({
        level: 'info',
        requestId: context.awsRequestId,
        trigger: 'aws:sqs',
        records: 2,
        outcome: 'ok',
        failures: 1,
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('deployId');
  });

  test('a thrown error: one error line naming it, and the error still reaches Lambda', async () => {
    const context = lambdaContext();
    const { lines, error } = await stdoutOf(() => handler({ fail: true }, context));
    expect(error).toBeInstanceOf(TypeError);
    expect(invocationLines(lines)).toEqual([
      expect.objectContaining({
        level: 'error',
        requestId: context.awsRequestId,
        outcome: 'error',
        error: { name: 'TypeError', message: 'bad tick' },
      }),
    ]);
  });

  test('events are described by their shape', () => {
    expect(
      describeEvent({ 'detail-type': 'CodeBuild Build State Change', source: 'aws.codebuild', detail: { 'build-status': 'FAILED' } }),
    ).toEqual({
      trigger: 'eventbridge',
      source: 'aws.codebuild',
      detailType: 'CodeBuild Build State Change',
    });
    // API Gateway REST (payload 1.0): the path without its query parameters.
    expect(
      describeEvent({
        httpMethod: 'GET',
        path: '/bucket/key.txt',
        queryStringParameters: { 'X-Amz-Signature': 'abc' },
        requestContext: { requestId: 'r-1' },
      }),
    ).toEqual({
      trigger: 'http',
      method: 'GET',
      path: '/bucket/key.txt',
      apiRequestId: 'r-1',
    });
    expect(describeEvent({ siteId: 's', deployId: 'd' })).toEqual({ trigger: 'invoke' });
    expect(describeEvent(undefined)).toEqual({ trigger: 'invoke' });
    expect(String(describeEvent({ httpMethod: 'GET', path: `/${'a'.repeat(2000)}` }).path).length).toBeLessThan(600);
  });
});

describe("the project's streaming Lambda door", () => {
  test('keeps streaming the body, and logs the status once the head is sent', async () => {
    const obs = createObservability('gateway', { logLevel: 'info' });
    const payload = 'x'.repeat(100_000);
    const handler = observe(
      lambdaHttpHandler(async () => ({
        handler: async () => new Response(payload, { status: 206, headers: { 'content-type': 'text/plain' } }),
        logger: obs.logger,
      })),
      obs,
    );
    const context = lambdaContext();
    const { lines, result } = await stdoutOf(() => handler(v2Event('GET', 'https://gw.example.com/ipfs/bafy/file.txt', {}), context));
    const answer = result as { statusCode: number; body: string };
    expect(answer.statusCode).toBe(206);
    expect(Buffer.from(answer.body, 'base64').toString()).toBe(payload);
    expect(invocationLines(lines)).toEqual([
      expect.objectContaining({ fn: 'gateway', requestId: context.awsRequestId, method: 'GET', path: '/ipfs/bafy/file.txt', status: 206 }),
    ]);
  });

  test('a 5xx answer is a warning line', async () => {
    const obs = createObservability('gateway', { logLevel: 'info' });
    const handler = observe(
      lambdaHttpHandler(async () => ({ handler: async () => new Response('down', { status: 503 }), logger: obs.logger }), {
        streaming: false,
      }),
      obs,
    );
    const { lines } = await stdoutOf(() => handler(v2Event('GET', 'https://gw.example.com/ipfs/x', {}), lambdaContext()));
    expect(invocationLines(lines)).toEqual([expect.objectContaining({ level: 'warn', status: 503 })]);
  });
});

describe('levels', () => {
  test('CAIRN_LOG_LEVEL=warn keeps info lines (the invocation line among them) out', async () => {
    const obs = createObservability('graphql', { logLevel: logLevelFromEnv({ CAIRN_LOG_LEVEL: 'warn' }) });
    const handler = observe(
      middy(async () => {
        obs.logger.info('chatty');
        obs.logger.error('broken', { err: new Error('disk full') });
        return { statusCode: 200, body: '' };
      }),
      obs,
    );
    const { lines } = await stdoutOf(() => handler(httpEvent(), lambdaContext()));
    expect(lines.filter((l) => l.msg !== undefined).map((l) => l.msg)).toEqual(['broken']);
    expect(lines.find((l) => l.msg === 'broken')!.err).toMatchObject({ name: 'Error', message: 'disk full' });
  });

  test('an unset or unknown CAIRN_LOG_LEVEL is info', () => {
    expect(logLevelFromEnv({})).toBe('info');
    expect(logLevelFromEnv({ CAIRN_LOG_LEVEL: 'loud' })).toBe('info');
    expect(logLevelFromEnv({ CAIRN_LOG_LEVEL: 'DEBUG' })).toBe('debug');
  });

  test('observe() refuses a plain function', () => {
    const obs = createObservability('graphql', { logLevel: 'info' });
    expect(() => observe(async () => 1, obs)).toThrow(/middy/);
  });
});

describe('tracing', () => {
  /**
   * A process that builds the observability stack and runs one invocation
   * through it, counting the async hooks enabled meanwhile (in a process of
   * its own: this suite's imports have loaded the module already).
   */
  const probe = async (env: Record<string, string>) => {
    const script = `
      import asyncHooks from 'node:async_hooks';
      let hooks = 0;
      const createHook = asyncHooks.createHook;
      asyncHooks.createHook = (...args) => (hooks++, createHook(...args));
      const { default: middy } = await import('@middy/core');
      const { createObservability, observe } = await import(${JSON.stringify(join(ROOT, 'functions/core/observability.ts'))});
      const obs = createObservability('probe', { logLevel: 'error' });
      const handler = observe(middy(async () => 'answered'), obs);
      const context = { awsRequestId: 'req-1', functionName: 'probe', functionVersion: '1', memoryLimitInMB: '128',
        invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:probe', getRemainingTimeInMillis: () => 1000 };
      const answer = await handler({ source: 'probe' }, context);
      process.stdout.write('\\n' + JSON.stringify({ hooks, answer }) + '\\n');
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as { hooks: number; answer: string };
  };

  test('outside Lambda the tracer is never loaded: no async hook is enabled (aws-xray-sdk-core enables one at import)', async () => {
    expect(await probe({})).toEqual({ hooks: 0, answer: 'answered' });
  });

  test('in Lambda it is loaded at the first invocation and traces it; POWERTOOLS_TRACE_ENABLED=false keeps it out', async () => {
    const lambda = { AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x', AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR' };
    const traced = await probe(lambda);
    expect(traced.answer).toBe('answered');
    expect(traced.hooks).toBeGreaterThan(0);
    expect(await probe({ ...lambda, POWERTOOLS_TRACE_ENABLED: 'false' })).toEqual({ hooks: 0, answer: 'answered' });
  });

  test('tracingWanted decides as Powertools does', () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x' })).toBe(true);
    expect(tracingWanted({ AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x', POWERTOOLS_TRACE_ENABLED: 'FALSE' })).toBe(false);
    expect(tracingWanted({ AWS_EXECUTION_ENV: 'AWS_Lambda_amplify-mock' })).toBe(false);
    expect(tracingWanted({ AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x', AWS_SAM_LOCAL: 'true' })).toBe(false);
  });
});
