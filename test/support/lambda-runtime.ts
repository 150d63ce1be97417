/**
 * The parts of the Lambda Node.js runtime that handler modules touch at load
 * time: the `awslambda` global with `streamifyResponse` and
 * `HttpResponseStream.from`. Installed before every test file (jest
 * setupFiles). A streamified handler keeps the (event, context) signature
 * tests call, and answers with the structured result the Function URL
 * would send: the runtime's prelude (JSON, then 8 NUL bytes) is parsed off
 * the stream exactly as the service does, so a handler that writes a bad
 * prelude fails here too.
 */
import { PassThrough, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';

const DELIMITER = Buffer.alloc(8);
const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');

class ResponseCollector extends Writable {
  chunks: Buffer[] = [];
  /** Set when a response stream is piped in: resolves once everything has arrived. */
  drained?: Promise<void>;
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void) {
    this.chunks.push(Buffer.from(chunk));
    done();
  }
}

type StreamingHandler = (event: unknown, stream: Writable, context: unknown) => Promise<void>;

const awslambda = {
  streamifyResponse(handler: StreamingHandler) {
    const invoke = async (event: unknown, context: unknown) => {
      const collector = new ResponseCollector();
      await handler(event, collector, context);
      await collector.drained;
      const all = Buffer.concat(collector.chunks);
      const split = all.indexOf(DELIMITER);
      if (split < 0) return { statusCode: 200, body: all.toString('base64'), isBase64Encoded: true };
      const prelude = JSON.parse(all.subarray(0, split).toString('utf8')) as Record<string, unknown>;
      const body = all.subarray(split + DELIMITER.length);
      return { ...prelude, body: body.toString('base64'), isBase64Encoded: true };
    };
    Object.assign(invoke, { [STREAMING]: 'response' });
    return invoke;
  },
  HttpResponseStream: {
    from(stream: Writable, prelude: Record<string, unknown>): Writable {
      const out = new PassThrough();
      stream.write(Buffer.concat([Buffer.from(JSON.stringify(prelude)), DELIMITER]));
      if (stream instanceof ResponseCollector) stream.drained = finished(stream);
      out.pipe(stream);
      return out;
    },
  },
};

(globalThis as Record<string, unknown>).awslambda = awslambda;
