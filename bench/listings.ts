/**
 * `npm run bench:listings`: what a folder listing costs beside a plain
 * page, through the S3 API of the local service (`npm start`'s, in this
 * process), at several bucket sizes. The figures of issue 35: a
 * `ListObjectsV2` with `Delimiter=/` over 50 "folders" (what
 * `aws s3 ls s3://bucket/` sends) against a page of 1,000 keys of the same
 * bucket without a delimiter, the goal being at most 2x the page at any
 * size; the same folders listed by `ListObjectVersions` (its own reads:
 * the current records and the versioned keys' anchors side by side); and
 * per listing the items DynamoDB reads (each Query's ScannedCount) and the
 * read units it would charge (each Query asked ReturnConsumedCapacity,
 * answered by the embedded database as DynamoDB computes them: the items'
 * sizes summed and rounded up to 4 KB, one unit per 4 KB for a strongly
 * consistent read; a query that reads nothing counts 0 here).
 *
 * Each bucket holds BENCH_SIZES objects (default 2000,20000,60000), in 50
 * folders of equal size; they are written straight into the object store
 * (one transaction each, as a PUT's record is; the listing reads only the
 * records). Then BENCH_ROUNDS rounds (default 9), each a plain page, a
 * folder listing and a folder listing of versions in turn, so load on the
 * machine falls on all; medians.
 */
import { ListObjectsV2Command, ListObjectVersionsCommand, S3Client } from '@aws-sdk/client-s3';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../functions/core/config.js';
import type { ObjectRecord } from '../functions/core/data/objects.js';
import { startLocalService } from '../functions/local/service.js';

const SIZES = (process.env.BENCH_SIZES ?? '2000,20000,60000').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const FOLDERS = 50;
const ACCESS_KEY = 'CAIRNBENCHKEY0000002';
const SECRET_KEY = 'bench-secret-0123456789abcdefghijklmnopqr';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

type Send = (
  command: { constructor: { name: string }; input: Record<string, unknown> },
  ...rest: unknown[]
) => Promise<Record<string, unknown>>;

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cairn-bench-listings-'));
  const config = loadConfig({
    CAIRN_DATA_DIR: dataDir,
    CAIRN_API_PORT: String(await freePort()),
    CAIRN_S3_PORT: String(await freePort()),
    CAIRN_GATEWAY_PORT: String(await freePort()),
    CAIRN_BOOTSTRAP_ACCESS_KEY: ACCESS_KEY,
    CAIRN_BOOTSTRAP_SECRET_KEY: SECRET_KEY,
    CAIRN_LOG_LEVEL: 'error',
  });
  const service = await startLocalService(config);
  try {
    const { services } = service;
    const account = (await services.accounts.getAccountByName('default'))!;
    // Every Query on the objects table is counted while `counting` is set.
    const read = { counting: false, queries: 0, items: 0, units: 0 };
    const doc = services.db.doc as unknown as { send: Send };
    const send = doc.send.bind(doc);
    doc.send = async (command, ...rest) => {
      if (!read.counting || command.constructor.name !== 'QueryCommand' || command.input.TableName !== config.tables.objects)
        return send(command, ...rest);
      command.input.ReturnConsumedCapacity = 'TOTAL';
      const out = await send(command, ...rest);
      read.queries += 1;
      read.items += (out.ScannedCount as number | undefined) ?? (out.Items as unknown[] | undefined)?.length ?? 0;
      read.units += (out.ConsumedCapacity as { CapacityUnits?: number } | undefined)?.CapacityUnits ?? 0;
      return out;
    };
    const s3 = new S3Client({
      endpoint: service.endpoints.s3,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    });
    console.log(
      `node ${process.version}, ${ROUNDS} rounds, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    const rows: Record<string, string | number>[] = [];
    for (const size of SIZES) {
      const bucket = `listings-${size}`;
      await services.buckets.create(bucket, account.id, new Date().toISOString());
      const t0 = performance.now();
      const perFolder = Math.ceil(size / FOLDERS);
      const keys: string[] = [];
      for (let f = 0; f < FOLDERS; f++)
        for (let i = 0; i < perFolder && keys.length < size; i++)
          keys.push(`folder-${String(f).padStart(2, '0')}/file-${String(i).padStart(6, '0')}.txt`);
      for (let i = 0; i < keys.length; i += 32)
        await Promise.all(keys.slice(i, i + 32).map((key) => services.objects.put(record(bucket, key, account.id))));
      console.log(`${bucket}: ${keys.length} objects written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

      const kinds = ['plain', 'folders', 'versions'] as const;
      const times = { plain: [] as number[], folders: [] as number[], versions: [] as number[] };
      const cost = Object.fromEntries(kinds.map((k) => [k, { items: 0, units: 0, queries: 0 }])) as Record<
        (typeof kinds)[number],
        { items: number; units: number; queries: number }
      >;
      for (let round = 0; round < ROUNDS; round++) {
        for (const kind of kinds) {
          read.queries = read.items = read.units = 0;
          read.counting = true;
          const started = performance.now();
          const out =
            kind === 'versions'
              ? await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, MaxKeys: 1000, Delimiter: '/' }))
              : await s3.send(
                  new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1000, ...(kind === 'folders' ? { Delimiter: '/' } : {}) }),
                );
          times[kind].push(performance.now() - started);
          read.counting = false;
          const got = 'Contents' in out && kind === 'plain' ? (out.Contents?.length ?? 0) : (out.CommonPrefixes?.length ?? 0);
          const expected = kind === 'plain' ? Math.min(1000, size) : FOLDERS;
          if (got !== expected) throw new Error(`${bucket} ${kind}: ${got} entries, expected ${expected}`);
          cost[kind] = { items: read.items, units: read.units, queries: read.queries };
        }
      }
      const p = median(times.plain);
      const f = median(times.folders);
      const v = median(times.versions);
      const spell = (c: { items: number; units: number; queries: number }) => `${c.items} / ${c.units} / ${c.queries}`;
      rows.push({
        objects: size,
        'page of 1,000 ms': Number(p.toFixed(1)),
        '50 folders ms': Number(f.toFixed(1)),
        ratio: Number((f / p).toFixed(2)),
        'versions, 50 folders ms': Number(v.toFixed(1)),
        'versions ratio': Number((v / p).toFixed(2)),
        goal: '<= 2',
        'page items / units / queries': spell(cost.plain),
        'folders items / units / queries': spell(cost.folders),
        'versions items / units / queries': spell(cost.versions),
      });
    }
    console.table(rows);
    console.log(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    s3.destroy();
  } finally {
    await service.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function record(bucket: string, key: string, ownerId: string): ObjectRecord {
  return {
    bucket,
    key,
    cid: 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH',
    size: 0,
    etag: 'd41d8cd98f00b204e9800998ecf8427e',
    lastModified: '2026-11-29T00:00:00.000Z',
    contentType: 'text/plain',
    acl: 'private',
    ownerId,
    metadata: {},
  };
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
