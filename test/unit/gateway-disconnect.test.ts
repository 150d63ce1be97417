/**
 * The gateway's handler when a client hangs up mid-answer (the node door
 * aborts the request's signal, core/http/node.ts): a block read that fails
 * because of it is logged at debug, not as a failure; the same failure
 * without a hang-up is still an error and a 500, a missing block a 404.
 */
import type { Blockstore } from 'interface-blockstore';
import { createGatewayHandler } from '../../functions/gateway/app.js';
import type { HttpRequest } from '../../functions/core/http/types.js';
import type { Logger } from '../../functions/core/logger.js';
import type { Services } from '../../functions/core/services.js';

const CID_TEXT = 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o';

function setup(get: (signal?: AbortSignal) => never) {
  const lines: Array<{ level: string; msg: string }> = [];
  const logger: Logger = {
    debug: (msg) => lines.push({ level: 'debug', msg }),
    info: (msg) => lines.push({ level: 'info', msg }),
    warn: (msg) => lines.push({ level: 'warn', msg }),
    error: (msg) => lines.push({ level: 'error', msg }),
    child: () => logger,
  };
  const blockstore = {
    // eslint-disable-next-line require-yield
    async *get(_cid: unknown, options?: { signal?: AbortSignal }) {
      get(options?.signal);
    },
  } as unknown as Blockstore;
  const services = {
    config: {
      urls: { storagePublicDomain: 'storage.localhost', bucketEndpointDomain: 's3.localhost' },
      sites: { domain: 'sites.localhost' },
      domains: { gatewayDnsLink: false },
    },
    ipfs: async () => ({ blockstore }),
    logger,
  } as unknown as Services;
  return { handler: createGatewayHandler(services, logger), lines };
}

function request(signal: AbortSignal): HttpRequest {
  return {
    method: 'GET',
    rawPath: `/ipfs/${CID_TEXT}/index.html`,
    rawQuery: '',
    headers: new Headers({ host: 'localhost' }),
    body: null,
    signal,
  };
}

test('a read that fails because the client hung up is logged at debug only', async () => {
  const { handler, lines } = setup((signal) => {
    signal!.throwIfAborted();
    throw new Error('not reached');
  });
  const gone = new AbortController();
  gone.abort(new Error('client disconnected'));
  const res = await handler(request(gone.signal));
  expect(res.status).toBe(499);
  expect(lines.filter((l) => l.level !== 'debug')).toEqual([]);
  expect(lines.map((l) => l.msg)).toContain('gateway request abandoned: the client disconnected');
});

test('the same failure with the client still there is an error and a 500; a missing block a 404', async () => {
  const failing = setup(() => {
    throw new Error('disk on fire');
  });
  const res = await failing.handler(request(new AbortController().signal));
  expect(res.status).toBe(500);
  expect(failing.lines).toContainEqual({ level: 'error', msg: 'gateway request failed' });

  const missing = setup(() => {
    throw Object.assign(new Error('Not Found'), { name: 'NotFoundError' });
  });
  const notFound = await missing.handler(request(new AbortController().signal));
  expect(notFound.status).toBe(404);
  expect(missing.lines.filter((l) => l.level === 'error')).toEqual([]);
});
