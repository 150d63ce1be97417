/**
 * The GraphQL fast path of the local door (functions/graphql/node-door.ts):
 * a POST to /graphql answered from the IncomingMessage, beside the general
 * handler every other request of the API port takes. The same requests go
 * to the service's API port (fast path) and to a server that has only the
 * general handler over the same services; each must answer alike, with the
 * same limits, and the fast path's answers go out whole with their length.
 */
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { createNodeServer, listen } from '../../functions/core/http/node.js';
import { createLogger } from '../../functions/core/logger.js';
import { headerMapOf } from '../../functions/graphql/node-door.js';
import { createGraphqlHandler, MAX_BODY_BYTES } from '../../functions/graphql/server.js';
import { BOOT, startTestService, type TestService } from '../support/service.js';

let service: TestService;
let general: Server;
/** The service's API port (with the fast path) and the general handler's own. */
let fastPort: number;
let generalPort: number;

beforeAll(async () => {
  service = await startTestService();
  fastPort = Number(new URL(service.endpoints.graphql).port);
  general = createNodeServer(createGraphqlHandler(service.services), createLogger('error'));
  generalPort = await listen(general, 0, '127.0.0.1');
});

afterAll(async () => {
  general?.closeAllConnections();
  await new Promise((resolve) => general?.close(resolve));
  await service?.close();
});

const TEAM = JSON.stringify({ query: '{ getCurrentTeam { id } }' });

interface Exchange {
  status: number;
  headers: Map<string, string>;
  body: string;
  /** Whether the server closed the connection after its answer. */
  closed: boolean;
}

/**
 * Writes `head` and then `body` (or keeps the body back: `bodyParts` are
 * written one by one, each after the last was taken) on a fresh
 * connection, reads one answer (length-delimited or chunked) and whether
 * the server then closes. The raw bytes, so framing is seen as sent.
 */
function exchange(
  port: number,
  head: string,
  bodyParts: Array<string | Buffer> = [],
  hangUpAfterHead = false,
): Promise<Exchange | 'no answer'> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let raw = Buffer.alloc(0);
    let parsed: Exchange | undefined;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(parsed ?? 'no answer');
    }, 3000);
    const tryParse = () => {
      const text = raw.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      let rest = text.slice(end + 4);
      let body: string | undefined;
      if (headers.has('content-length')) {
        const length = Number(headers.get('content-length'));
        if (Buffer.byteLength(rest, 'latin1') >= length) body = rest.slice(0, length);
      } else if (headers.get('transfer-encoding') === 'chunked') {
        let out = '';
        for (;;) {
          const line = rest.indexOf('\r\n');
          if (line < 0) return;
          const size = parseInt(rest.slice(0, line), 16);
          if (rest.length < line + 2 + size + 2) return;
          if (size === 0) {
            body = out;
            break;
          }
          out += rest.slice(line + 2, line + 2 + size);
          rest = rest.slice(line + 2 + size + 2);
        }
      }
      if (body !== undefined)
        parsed = { status: Number(statusLine!.split(' ')[1]), headers, body: Buffer.from(body, 'latin1').toString(), closed: false };
    };
    socket.on('data', (chunk: Buffer) => {
      raw = Buffer.concat([raw, chunk]);
      if (!parsed) tryParse();
      // A kept connection: the answer is all there is to read.
      if (parsed && parsed.headers.get('connection') !== 'close') {
        clearTimeout(timer);
        resolve(parsed);
        socket.removeAllListeners('close');
        socket.destroy();
      }
    });
    socket.on('error', (err) => (parsed ? undefined : reject(err)));
    socket.on('close', () => {
      clearTimeout(timer);
      if (parsed) parsed.closed = true;
      resolve(parsed ?? 'no answer');
    });
    socket.write(head, () => {
      if (hangUpAfterHead) return void socket.destroy();
      const next = (i: number) => {
        if (i < bodyParts.length && !socket.destroyed) socket.write(bodyParts[i]!, () => next(i + 1));
      };
      next(0);
    });
  });
}

const post = (headers: Record<string, string>, body?: string) =>
  `POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}${body !== undefined ? `content-length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n`;

/** The same request to both servers: their answers, which must agree in status, code and data. */
async function both(head: string, body: string[] = []): Promise<[Exchange, Exchange]> {
  const fast = await exchange(fastPort, head, body);
  const slow = await exchange(generalPort, head, body);
  if (fast === 'no answer' || slow === 'no answer')
    throw new Error(`no answer: fast ${JSON.stringify(fast)}, general ${JSON.stringify(slow)}`);
  expect(fast.status).toBe(slow.status);
  expect(JSON.parse(fast.body)).toEqual(JSON.parse(slow.body));
  expect(fast.headers.get('content-type')).toBe(slow.headers.get('content-type'));
  return [fast, slow];
}

describe('the fast path answers as the general handler does', () => {
  test('a query: the same answer, sent whole with its length in one piece', async () => {
    const [fast, slow] = await both(post({ 'content-type': 'application/json', authorization: BOOT.apiToken }, TEAM), [TEAM]);
    expect(fast.status).toBe(200);
    expect(JSON.parse(fast.body).data.getCurrentTeam.id).toEqual(expect.any(String));
    // The general way frames chunked; the fast path gives the length, so this answer was the fast path's.
    expect(slow.headers.get('transfer-encoding')).toBe('chunked');
    expect(fast.headers.get('transfer-encoding')).toBeUndefined();
    expect(Number(fast.headers.get('content-length'))).toBe(Buffer.byteLength(fast.body));
    expect(fast.closed).toBe(false);
  });

  test('no key, an unknown key, and two Authorization headers are each refused (401 UNAUTHENTICATED), never taken as one key', async () => {
    for (const head of [
      post({ 'content-type': 'application/json' }, TEAM),
      post({ 'content-type': 'application/json', authorization: 'cairn_unknown_key_000000000000000000000000000' }, TEAM),
      // Joined as web Headers join them ("k, k"): no key.
      `POST /graphql HTTP/1.1\r\nhost: x\r\nauthorization: ${BOOT.apiToken}\r\nauthorization: ${BOOT.apiToken}\r\ncontent-length: ${TEAM.length}\r\n\r\n`,
    ]) {
      const [fast] = await both(head, [TEAM]);
      expect(fast.status).toBe(401);
      expect(JSON.parse(fast.body).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
  });

  test('a key with spaces around it and Bearer, JSON without a Content-Type, and text/plain all work', async () => {
    for (const headers of <Array<Record<string, string>>>[
      { authorization: `  Bearer ${BOOT.apiToken}  ` },
      { authorization: BOOT.apiToken, 'content-type': 'text/plain' },
      { authorization: BOOT.apiToken, 'content-type': 'application/x-www-form-urlencoded' },
    ]) {
      const [fast] = await both(post(headers, TEAM), [TEAM]);
      expect(fast.status).toBe(200);
    }
  });

  test('a body that is not JSON, an empty body, a parse error and a query over the limits are refused alike (400)', async () => {
    const deep = JSON.stringify({ query: `{ getCurrentTeam { ${'a: __typename '.repeat(30)} } }` });
    const cases: Array<[string, string]> = [
      ['{"query": ', 'BAD_REQUEST'],
      ['', 'BAD_REQUEST'],
      [JSON.stringify({ query: '{ getCurrentTeam { id ' }), 'GRAPHQL_PARSE_FAILED'],
      [deep, 'GRAPHQL_VALIDATION_FAILED'],
    ];
    for (const [body, code] of cases) {
      const [fast] = await both(post({ 'content-type': 'application/json', authorization: BOOT.apiToken }, body), [body]);
      expect(fast.status).toBe(400);
      expect(JSON.parse(fast.body).errors[0].extensions.code).toBe(code);
    }
  });
});

describe('the body limit on the fast path', () => {
  const refused = (answer: Exchange | 'no answer') => {
    if (answer === 'no answer') throw new Error('no answer');
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).errors[0].extensions.code).toBe('BAD_REQUEST');
    expect(answer.headers.get('connection')).toBe('close');
    expect(answer.closed).toBe(true);
  };

  test('a declared length over 1 MiB is refused before any of the body is sent', async () => {
    const head = `POST /graphql HTTP/1.1\r\nhost: x\r\nauthorization: ${BOOT.apiToken}\r\ncontent-type: application/json\r\ncontent-length: ${MAX_BODY_BYTES + 1}\r\n\r\n`;
    // Nothing of the body is ever written: the answer comes on the head alone.
    refused(await exchange(fastPort, head));
  });

  test('a chunked body that grows past 1 MiB is refused once it does, and reading stops', async () => {
    const head = `POST /graphql HTTP/1.1\r\nhost: x\r\nauthorization: ${BOOT.apiToken}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`;
    const piece = Buffer.alloc(256 * 1024, 0x20);
    const chunk = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
    // Five pieces (1.25 MiB) and no last chunk: only the limit can end this request.
    refused(await exchange(fastPort, head, [chunk, chunk, chunk, chunk, chunk]));
  });

  test('a body of exactly 1 MiB is read (and answered as JSON would be)', async () => {
    const pad = ' '.repeat(MAX_BODY_BYTES - TEAM.length);
    const body = TEAM + pad;
    const answer = await exchange(fastPort, post({ 'content-type': 'application/json', authorization: BOOT.apiToken }, body), [body]);
    if (answer === 'no answer') throw new Error('no answer');
    expect(answer.status).toBe(200);
  });

  test('a client that leaves mid-body gets nothing and costs nothing; the next request is answered', async () => {
    const head = `POST /graphql HTTP/1.1\r\nhost: x\r\nauthorization: ${BOOT.apiToken}\r\ncontent-length: 1000\r\n\r\n`;
    expect(await exchange(fastPort, head, [], true)).toBe('no answer');
    const after = await exchange(fastPort, post({ authorization: BOOT.apiToken }, TEAM), [TEAM]);
    expect(after !== 'no answer' && after.status).toBe(200);
  });
});

test('headers reach Apollo as web Headers would give them: lower-case names, trimmed values, repeats joined', () => {
  const map = headerMapOf(['Content-Type', ' application/json\t', 'X-A', '1', 'x-a', '2', 'Authorization', 'k']);
  expect([...map]).toEqual([
    ['content-type', 'application/json'],
    ['x-a', '1, 2'],
    ['authorization', 'k'],
  ]);
  const web = new Headers();
  web.append('X-A', '1');
  web.append('x-a', '2');
  expect(web.get('x-a')).toBe(map.get('x-a'));
});
