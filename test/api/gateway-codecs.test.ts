/**
 * dag-json, dag-cbor, json and cbor content on `/ipfs/`, through both
 * doors, with the IPFS gateway conformance tests' own fixtures
 * (test/fixtures/gateway-conformance) imported through Cairn's CAR import
 * endpoint, and the answers those tests expect (tests/path_gateway_dag_test.go,
 * tests/trustless_gateway_car_test.go): blocks as they are with their
 * codec's type, ETag, Content-Disposition and caching; pathing through
 * links (501 for a path into a block's own data); the codec formats and
 * their 406s (no conversion, IPIP-0524); the HTML page for a browser;
 * UnixFS files of JSON as application/json; raw blocks and CARs of IPLD DAGs.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CarBlockIterator, CarReader } from '@ipld/car';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { lambdaFetch } from '../support/lambda-door.js';
import { hostFetch } from '../support/http.js';
import { blockKey, readBlock, walkDag } from '../../functions/core/storage/dag-walk.js';
import { doorsFor } from '../support/test-set.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/gateway-conformance');
const IMMUTABLE = 'public, max-age=29030400, immutable';

let target: ApiTarget;
const savedEnv = { ...process.env };
/** Each fixture's root, by file name (without .car). */
const roots: Record<string, CID> = {};
/** Every fixture block's bytes, by CID. */
const blocks = new Map<string, Uint8Array>();

const DAG_CBOR_ROOT = 'bafyreibs4utpgbn7uqegmd2goqz4bkyflre2ek2iwv743fhvylwi4zeeim';
const DAG_JSON_ROOT = 'baguqeeram5ujjqrwheyaty3w5gdsmoz6vittchvhk723jjqxk7hakxkd47xq';
/** gateway-json-cbor.car's ą/ę/t.json (a raw block of JSON) and ą/ę/file-źł.txt. */
const FILE_JSON = 'bafkreibrppizs3g7axs2jdlnjua6vgpmltv7k72l7v7sa6mmht6mne3qqe';
const FILE_TXT = 'bafkreialihlqnf5uwo4byh4n3cmwlntwqzxxs2fg5vanqdi3d7tb2l5xkm';
/** dir-with-dag-cbor-with-links.car: a directory whose `document` is dag-cbor linking to UnixFS files. */
const DOCUMENT = 'bafyreidy4q6mmetut5jzc54ambsfnatbyoujmwbfzyyolqw24majazwgha';
const SINGLE = 'bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4';

beforeAll(async () => {
  target = await apiTarget();
  for (const name of [
    'dag-cbor-traversal',
    'dag-json-traversal',
    'gateway-json-cbor',
    'plain-cbor',
    'plain-json',
    'dir-with-dag-cbor-with-links',
  ]) {
    const car = await readFile(join(FIXTURES, `${name}.car`));
    const reader = await CarReader.fromBytes(car);
    roots[name] = (await reader.getRoots())[0]!;
    for await (const block of reader.blocks()) blocks.set(block.cid.toString(), block.bytes);
    const res = await fetch(new URL('/imports/car', target.endpoints.graphql), {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.ipld.car', authorization: target.account.apiKey },
      body: car,
    });
    const answer = await res.json();
    expect([name, res.status, answer.complete]).toEqual([name, 200, true]);
  }
  expect(roots['dag-cbor-traversal']!.toString()).toBe(DAG_CBOR_ROOT);
  expect(roots['dag-json-traversal']!.toString()).toBe(DAG_JSON_ROOT);
}, 120_000);

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

const bytesOf = (cid: string | CID) => Buffer.from(blocks.get(cid.toString())!);

type Init = { method?: string; headers?: Record<string, string> };
type Fetch = (url: string, init?: Init) => Promise<Response>;
const doors: Array<{ name: string; fetch: Fetch }> = [
  { name: 'node:http door', fetch: (url, init) => hostFetch(url, init) },
  { name: 'Lambda door', fetch: (url, init) => lambdaFetch(target.gatewayLambda!)(url, init) },
];

/** dag-json and dag-cbor as the conformance tests' TestNativeDag table has them. */
const NATIVE = [
  { codec: 'dag-json', plain: 'json', root: DAG_JSON_ROOT, disposition: 'inline' },
  { codec: 'dag-cbor', plain: 'cbor', root: DAG_CBOR_ROOT, disposition: 'attachment' },
] as const;

localDescribe.each(doorsFor(doors))('dag-json, dag-cbor, json and cbor on /ipfs/ through the $name', ({ fetch }) => {
  const get = (path: string, init: Init = {}) => fetch(`${target.endpoints.gateway}${path}`, init);
  const body = async (res: Response) => Buffer.from(await res.arrayBuffer());

  test.each(NATIVE)(
    'a $codec block is sent as it is, "exactly the same as raw" with its own Content-Type, ETag, disposition and immutable caching',
    async ({ codec, plain, root, disposition }) => {
      const raw = bytesOf(root);
      const type = `application/vnd.ipld.${codec}`;
      // No format: the codec's type. format=<codec> and Accept: the same block; Accept names its ?format= URL.
      for (const [path, init, location] of [
        [`/ipfs/${root}`, {}, null],
        [`/ipfs/${root}?format=${codec}`, {}, null],
        [`/ipfs/${root}`, { headers: { accept: type } }, `/ipfs/${root}?format=${codec}`],
      ] as const) {
        const res = await get(path, init);
        expect([path, res.status, res.headers.get('content-type')]).toEqual([path, 200, type]);
        expect((await body(res)).equals(raw)).toBe(true);
        expect(res.headers.get('content-length')).toBe(String(raw.length));
        // "Etag: "bafy…foo.raw"": the format is named in the ETag (path gateway spec, Etag response header).
        expect(res.headers.get('etag')).toBe(`"${root}.${codec}"`);
        expect(res.headers.get('cache-control')).toBe(IMMUTABLE);
        expect(res.headers.get('x-ipfs-path')).toBe(path.split('?')[0]);
        expect(res.headers.get('x-ipfs-roots')).toBe(root);
        expect(res.headers.get('content-disposition')).toBe(`${disposition}; filename="${root}.${plain}"`);
        expect(res.headers.get('content-location')).toBe(location);
      }
      // format=<plain> and Accept: application/<plain>: the same bytes under the plain type, for interop.
      for (const init of [{ query: `?format=${plain}` }, { query: '', headers: { accept: `application/${plain}` } }]) {
        const res = await get(`/ipfs/${root}${init.query}`, { headers: init.headers });
        expect([res.status, res.headers.get('content-type')]).toEqual([200, `application/${plain}`]);
        expect(res.headers.get('etag')).toBe(`"${root}.${plain}"`);
        expect((await body(res)).equals(raw)).toBe(true);
      }
      // ?filename= names it; ?download=true makes it an attachment.
      const named = await get(`/ipfs/${root}?filename=foobar.${plain}`, { headers: { accept: type } });
      expect(named.headers.get('content-disposition')).toBe(`${disposition}; filename="foobar.${plain}"`);
      const download = await get(`/ipfs/${root}?filename=foobar.${plain}&download=true`, { headers: { accept: type } });
      expect(download.headers.get('content-disposition')).toBe(`attachment; filename="foobar.${plain}"`);
      // HEAD, a range, a 304.
      const head = await get(`/ipfs/${root}?format=${codec}`, { method: 'HEAD' });
      expect([head.status, head.headers.get('content-type'), head.headers.get('content-length')]).toEqual([200, type, String(raw.length)]);
      expect((await body(head)).length).toBe(0);
      const range = await get(`/ipfs/${root}`, { headers: { range: 'bytes=2-9' } });
      expect([range.status, range.headers.get('content-range')]).toEqual([206, `bytes 2-9/${raw.length}`]);
      expect((await body(range)).equals(raw.subarray(2, 10))).toBe(true);
      const cached = await get(`/ipfs/${root}`, { headers: { 'if-none-match': `"${root}.${codec}"` } });
      expect(cached.status).toBe(304);
    },
  );

  test('a codec that does not match the block is a 406: no conversion between codecs, a dag-pb node included (IPIP-0524)', async () => {
    // "application/vnd.ipld.dag-json – Returns the block when CID codec is dag-json ... SHOULD produce 406 Not Acceptable when the CID codec does not match."
    for (const [path, init] of [
      [`/ipfs/${DAG_JSON_ROOT}?format=dag-cbor`, {}],
      [`/ipfs/${DAG_CBOR_ROOT}?format=dag-json`, {}],
      [`/ipfs/${DAG_CBOR_ROOT}`, { headers: { accept: 'application/vnd.ipld.dag-json' } }],
      [`/ipfs/${DAG_CBOR_ROOT}?format=json`, {}],
      [`/ipfs/${DAG_JSON_ROOT}?format=cbor`, {}],
      [`/ipfs/${FILE_TXT}?format=dag-json`, {}],
      [`/ipfs/${FILE_TXT}?format=dag-cbor`, {}],
      [`/ipfs/${FILE_TXT}`, { headers: { accept: 'application/vnd.ipld.dag-json' } }],
      [`/ipfs/${roots['gateway-json-cbor']}/?format=dag-json`, {}],
      [`/ipfs/${roots['gateway-json-cbor']}/?format=cbor`, {}],
      // application/json: "SHOULD produce 406 Not Acceptable in all other cases" than JSON content.
      [`/ipfs/${FILE_TXT}?format=json`, {}],
      [`/ipfs/${roots['plain-json']}?format=dag-json`, {}],
    ] as const) {
      const res = await get(path, init);
      expect([path, res.status]).toEqual([path, 406]);
      expect(await res.text()).toMatch(/converts no codec into another/);
    }
    // An Accept that takes the content itself too gets it.
    const either = await get(`/ipfs/${FILE_TXT}`, { headers: { accept: 'application/json, */*;q=0.8' } });
    expect([either.status, either.headers.get('content-type')]).toEqual([200, 'text/plain; charset=utf-8']);
  });

  test.each(NATIVE)(
    'a path through $codec follows links: 200 at a link, 501 inside a block, 404 for no such name',
    async ({ codec, root }) => {
      // "pathing into IPLD Kind other than Link (CID) is not supported at the moment. Implementations should return HTTP 501 Not Implemented when fully resolved content path has any remainder left."
      const inside = await get(`/ipfs/${root}/foo?format=${codec}`);
      expect(inside.status).toBe(501);
      expect(await inside.text()).toMatch(/not a link/);
      expect((await get(`/ipfs/${root}/foo/object/banana`)).status).toBe(501);
      const far = await get(`/ipfs/${root}/foo/link/bar?format=${codec}`);
      expect(far.status).toBe(200);
      const value = await body(far);
      if (codec === 'dag-json') expect(JSON.parse(value.toString())).toEqual({ hello: 'this is not a link' });
      else
        expect([...value]).toEqual([
          0xa1, 0x65, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x72, 0x74, 0x68, 0x69, 0x73, 0x20, 0x69, 0x73, 0x20, 0x6e, 0x6f, 0x74, 0x20, 0x61,
          0x20, 0x6c, 0x69, 0x6e, 0x6b,
        ]);
      // X-Ipfs-Roots names the blocks the path went through, in order.
      expect(far.headers.get('x-ipfs-roots')!.split(',')).toHaveLength(3);
      expect(far.headers.get('x-ipfs-roots')!.split(',')[0]).toBe(root);
      expect((await get(`/ipfs/${root}/foo/i-do-not-exist`)).status).toBe(404);
      expect((await get(`/ipfs/${root}/foo/link/bar/hello/more`)).status).toBe(404);
      // The raw block the path reaches, and a 501 for a path ending inside a block, as a raw block or a CAR too.
      const middle = await get(`/ipfs/${root}/foo/link?format=raw`);
      expect(middle.status).toBe(200);
      const middleBytes = await body(middle);
      expect(
        Buffer.from((await sha256.digest(middleBytes)).bytes).equals(
          Buffer.from(CID.parse(far.headers.get('x-ipfs-roots')!.split(',')[1]!).multihash.bytes),
        ),
      ).toBe(true);
      expect((await get(`/ipfs/${root}/foo?format=raw`)).status).toBe(501);
      expect((await get(`/ipfs/${root}/foo?format=car`)).status).toBe(501);
    },
  );

  test('a browser gets an HTML page for dag-json and dag-cbor, with its own ETag and no Content-Disposition', async () => {
    for (const { root, codec } of NATIVE) {
      const page = await get(`/ipfs/${root}/`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(page.headers.get('etag')).toMatch(new RegExp(`^"DagIndex-[0-9a-f]+_CID-${root}"$`));
      expect(page.headers.get('content-disposition')).toBeNull();
      // Conformance: no Cache-Control, or exactly this (a generated page is never immutable).
      expect(page.headers.get('cache-control')).toBe('public, max-age=604800, stale-while-revalidate=2678400');
      const html = await page.text();
      expect(html).toContain('</html>');
      expect(html).toContain(`href="?format=${codec}&amp;download=true"`);
      // The link the block holds is a link on the page.
      const link =
        codec === 'dag-json'
          ? 'baguqeeraxpdqyfizawpb7zl5gnpg7jw3myuynb42ngzmeo7xn5kmm5pabt6q'
          : 'bafyreig5alecq2l2akgajxywgnv22kuxh6xcagsnelepylqovt4t5jxt6u';
      expect(html).toContain(`<a href="/ipfs/${link}/">`);
      expect(html).toContain('&#34;banana&#34;: 10');
      // Without its trailing slash: a 301 to the slash form. With ?download=true: the block.
      const bare = await get(`/ipfs/${root}?x=1`, { headers: { accept: 'text/html' } });
      expect([bare.status, bare.headers.get('location')]).toEqual([301, `/ipfs/${root}/?x=1`]);
      const asIs = await get(`/ipfs/${root}/?download=true`, { headers: { accept: 'text/html' } });
      expect([asIs.status, asIs.headers.get('content-type')]).toEqual([200, `application/vnd.ipld.${codec}`]);
      expect((await get(`/ipfs/${root}/`, { headers: { accept: 'text/html', 'if-none-match': page.headers.get('etag')! } })).status).toBe(
        304,
      );
    }
  });

  test('plain json and cbor blocks "work exactly the same as raw", with application/json and application/cbor', async () => {
    for (const [name, format, disposition] of [
      ['plain-json', 'json', 'inline'],
      ['plain-cbor', 'cbor', 'attachment'],
    ] as const) {
      const root = roots[name]!;
      for (const init of [{ query: '' }, { query: `?format=${format}` }, { query: '', headers: { accept: `application/${format}` } }]) {
        const res = await get(`/ipfs/${root}${init.query}`, { headers: init.headers });
        expect([name, init.query, res.status, res.headers.get('content-type')]).toEqual([name, init.query, 200, `application/${format}`]);
        expect(res.headers.get('content-disposition')).toBe(`${disposition}; filename="${root}.${format}"`);
        expect((await body(res)).equals(bytesOf(root))).toBe(true);
      }
      // A browser gets the block too: the page is for dag-json and dag-cbor.
      const browser = await get(`/ipfs/${root}`, { headers: { accept: 'text/html' } });
      expect(browser.headers.get('content-type')).toBe(`application/${format}`);
      const range = await get(`/ipfs/${root}`, { headers: { range: 'bytes=0-3' } });
      expect([range.status, (await body(range)).equals(bytesOf(root).subarray(0, 4))]).toEqual([206, true]);
    }
  });

  test('a UnixFS file of JSON is application/json, by bare CID, by Accept, and by format=json over Accept', async () => {
    for (const [path, init] of [
      [`/ipfs/${FILE_JSON}`, {}],
      [`/ipfs/${FILE_JSON}`, { headers: { accept: 'application/json' } }],
      // format= is preferred over Accept (IPIP-0523).
      [`/ipfs/${FILE_JSON}?format=json`, { headers: { accept: 'application/vnd.ipld.raw' } }],
      [`/ipfs/${roots['gateway-json-cbor']}/%C4%85/%C4%99/t.json?format=json`, {}],
    ] as const) {
      const res = await get(path, init);
      expect([path, res.status, res.headers.get('content-type')]).toEqual([path, 200, 'application/json']);
      expect((await body(res)).equals(bytesOf(FILE_JSON))).toBe(true);
    }
    // As a codec format, its ETag names the format.
    expect((await get(`/ipfs/${FILE_JSON}?format=json`)).headers.get('etag')).toBe(`"${FILE_JSON}.json"`);
    // A text file is still text.
    expect((await get(`/ipfs/${FILE_TXT}`)).headers.get('content-type')).toBe('text/plain; charset=utf-8');
  });

  test('CARs of IPLD DAGs: the path through dag-cbor, dag-scope=entity is the document alone, dag-scope=all follows its links', async () => {
    const carOf = async (path: string) => {
      const res = await get(path);
      expect([path, res.status]).toEqual([path, 200]);
      const cids: string[] = [];
      for await (const block of await CarBlockIterator.fromBytes(new Uint8Array(await res.arrayBuffer()))) {
        // Every block is what its CID says.
        expect(Buffer.from((await sha256.digest(block.bytes)).digest).equals(Buffer.from(block.cid.multihash.digest))).toBe(true);
        cids.push(block.cid.toString());
      }
      return cids;
    };
    const dir = roots['dir-with-dag-cbor-with-links']!;
    // "GET default CAR response of UnixFS file on a path with DAG-CBOR as root CID": exactly these, in this order.
    expect(await carOf(`/ipfs/${DOCUMENT}/files/single?format=car`)).toEqual([DOCUMENT, SINGLE]);
    // "GET CAR with dag-scope=entity of DAG-CBOR with Links": the path, the document, not what it links to.
    expect(await carOf(`/ipfs/${dir}/document?format=car&dag-scope=entity`)).toEqual([dir.toString(), DOCUMENT]);
    // dag-scope=all: the whole DAG under the document, as pinning walks it.
    const store = (await target.local!.services.ipfs()).blockstore;
    const dag: string[] = [];
    for await (const cid of walkDag(store, CID.parse(DOCUMENT))) dag.push(cid.toString());
    expect(dag.length).toBeGreaterThan(3);
    expect((await carOf(`/ipfs/${DOCUMENT}?format=car`)).map((c) => blockKey(CID.parse(c)))).toEqual(
      dag.map((c) => blockKey(CID.parse(c))),
    );
    expect(await carOf(`/ipfs/${DAG_JSON_ROOT}?format=car`)).toHaveLength(3);
    // From UnixFS into dag-cbor and out again: the directory's `document`, its `files` map, the link `single`, a file.
    const file = await get(`/ipfs/${dir}/document/files/single`);
    expect([file.status, await file.text()]).toEqual([200, 'hello world\n']);
    expect(file.headers.get('x-ipfs-roots')).toBe(`${dir},${DOCUMENT},${SINGLE}`);
    // A raw block of dag-cbor is its bytes.
    const raw = await get(`/ipfs/${DOCUMENT}?format=raw`);
    expect(Buffer.from(await raw.arrayBuffer()).equals(Buffer.from(await readBlock(store, CID.parse(DOCUMENT))))).toBe(true);
  });
});
