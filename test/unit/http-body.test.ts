/**
 * The capped body reader of the /auth/ side routes (functions/graphql/http-body.ts):
 * the type checked before anything is read, a declared or streamed size past
 * the limit read no further, and one sentence for each refusal.
 */
import { httpRequest } from '../../functions/core/http/types.js';
import { readBodyFields } from '../../functions/graphql/http-body.js';

const LIMIT = 64;
const post = (type: string | undefined, body: string | ReadableStream<Uint8Array> | null, headers: Record<string, string> = {}) =>
  httpRequest('POST', '/auth/x', { headers: { ...(type ? { 'content-type': type } : {}), ...headers }, body });

/** A body of `chunks` chunks of `size` bytes, counting how many were pulled and whether it was cancelled. */
function watchedBody(chunks: number, size: number) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (seen.pulled === chunks) return controller.close();
        seen.pulled++;
        controller.enqueue(new Uint8Array(size).fill(0x61));
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, seen };
}

const WRONG_JSON = { status: 415, problem: 'send the body as JSON, with Content-Type: application/json', headers: {} };
const WRONG_FORM = { status: 415, problem: 'send the body form-encoded (application/x-www-form-urlencoded) or as JSON', headers: {} };
const TOO_LARGE = { status: 413, problem: 'the body is larger than 64 bytes', headers: { connection: 'close' } };
const NOT_OBJECT = { status: 400, problem: 'the body must be a JSON object', headers: {} };

test('JSON objects and (where taken) forms give their fields; an empty body has none', async () => {
  expect(await readBodyFields(post('application/json', '{"a": 1, "b": [true]}'), 'json', LIMIT)).toEqual({ fields: { a: 1, b: [true] } });
  expect(await readBodyFields(post('Application/JSON; charset=utf-8', '{"a": "é"}'), 'json', LIMIT)).toEqual({ fields: { a: 'é' } });
  expect(await readBodyFields(post('application/json', ''), 'json', LIMIT)).toEqual({ fields: {} });
  expect(await readBodyFields(post('application/json', null), 'form-or-json', LIMIT)).toEqual({ fields: {} });
  expect(await readBodyFields(post('application/x-www-form-urlencoded', 'a=1&b=x+y&a=2'), 'form-or-json', LIMIT)).toEqual({
    fields: { a: '2', b: 'x y' },
  });
  expect(await readBodyFields(post('application/json', '{"a": 2}'), 'form-or-json', LIMIT)).toEqual({ fields: { a: 2 } });
});

test('another type is refused before the body is read, saying what to send', async () => {
  for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/json-patch+json']) {
    const { stream, seen } = watchedBody(1, 8);
    expect([type, await readBodyFields(post(type, stream), 'json', LIMIT)]).toEqual([type, WRONG_JSON]);
    expect([type, seen]).toEqual([type, { pulled: 0, cancelled: true }]);
  }
  for (const type of [undefined, 'text/plain', 'multipart/form-data'])
    expect([type, await readBodyFields(post(type, 'a=1'), 'form-or-json', LIMIT)]).toEqual([type, WRONG_FORM]);
});

test('a body declared larger than the limit is not read; one that streams past it is read no further', async () => {
  const declared = watchedBody(1, 8);
  expect(await readBodyFields(post('application/json', declared.stream, { 'content-length': '65' }), 'json', LIMIT)).toEqual(TOO_LARGE);
  expect(declared.seen).toEqual({ pulled: 0, cancelled: true });

  // No length said (chunked): 16-byte chunks, the fifth passes 64 bytes; none after it is asked for.
  const streamed = watchedBody(100, 16);
  expect(await readBodyFields(post('application/x-www-form-urlencoded', streamed.stream), 'form-or-json', LIMIT)).toEqual(TOO_LARGE);
  expect(streamed.seen.pulled).toBe(5);

  // The limit itself is allowed.
  const exact = `{"a": "${'x'.repeat(LIMIT - 9)}"}`;
  expect(exact).toHaveLength(LIMIT);
  expect(await readBodyFields(post('application/json', exact), 'json', LIMIT)).toEqual({ fields: { a: 'x'.repeat(LIMIT - 9) } });
  expect(await readBodyFields(post('application/json', `${exact} `), 'json', LIMIT)).toEqual(TOO_LARGE);
});

test('JSON that is malformed or not an object is refused as one', async () => {
  for (const body of ['{"a": 1', 'a=1', '[1, 2]', 'null', '42', '"text"', '{"a": 1} {"b": 2}'])
    expect([body, await readBodyFields(post('application/json', body), 'json', LIMIT)]).toEqual([body, NOT_OBJECT]);
});
