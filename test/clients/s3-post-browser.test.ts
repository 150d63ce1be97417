/**
 * Browser uploads in a real browser (Debian's Chromium through
 * playwright-core), as a web app hands them out: the server side makes a
 * form with the AWS SDK's createPresignedPost, and a page on another origin
 * sends it: once with fetch() and FormData (the bucket's CORS rule lets the
 * page read the 201 PostResponse and the ETag), once as a plain HTML form
 * with a file input whose success_action_redirect brings the browser back
 * to the page with bucket, key and etag. A form whose policy the file
 * breaks is refused, and stores nothing.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { CreateBucketCommand, GetObjectCommand, PutBucketCorsCommand, type S3Client } from '@aws-sdk/client-s3';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { chromium, type Browser } from 'playwright-core';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { absent } from '../support/s3-doors.js';

const CHROMIUM = process.env.CAIRN_CHROMIUM ?? '/usr/bin/chromium';
const RUN = Date.now().toString(36);

let target: ApiTarget;
let browser: Browser;
let page: { origin: string; close(): Promise<void> };
let s3: S3Client;
const bucket = `post-browser-${RUN}`;

async function listen(server: Server): Promise<{ origin: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return {
    origin: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (or set CAIRN_CHROMIUM to a Chromium)`);
  target = await apiTarget();
  // The page's origin: a blank app page, and /done, where the form's redirect lands.
  page = await listen(
    createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title><link rel="icon" href="data:,">');
    }),
  );
  s3 = target.s3(target.account);
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  await s3.send(
    new PutBucketCorsCommand({
      Bucket: bucket,
      CORSConfiguration: { CORSRules: [{ AllowedOrigins: [page.origin], AllowedMethods: ['POST'], ExposeHeaders: ['ETag'] }] },
    }),
  );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await page?.close();
  await target?.close();
});

test('fetch() with FormData from another origin: 201, the PostResponse and the ETag readable, the file stored', async () => {
  const { url, fields } = await createPresignedPost(s3, {
    Bucket: bucket,
    Key: 'uploads/${filename}',
    Conditions: [
      ['content-length-range', 1, 1024 * 1024],
      ['starts-with', '$Content-Type', 'text/'],
    ],
    Fields: { 'Content-Type': 'text/plain', success_action_status: '201' },
  });
  const tab = await browser.newPage();
  await tab.goto(page.origin);
  const out = await tab.evaluate(
    async ({ url, fields }) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      form.append('file', new Blob(['hello from chromium'], { type: 'text/plain' }), 'hello.txt');
      const res = await fetch(url, { method: 'POST', body: form });
      return { status: res.status, etag: res.headers.get('etag'), text: await res.text() };
    },
    { url, fields },
  );
  await tab.close();
  expect(out.status).toBe(201);
  expect(out.etag).toMatch(/^"[0-9a-f]{32}"$/);
  expect(out.text).toContain('<Key>uploads/hello.txt</Key>');
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'uploads/hello.txt' }));
  expect([await got.Body!.transformToString(), got.ContentType, got.ETag]).toEqual(['hello from chromium', 'text/plain', out.etag]);
});

test('an HTML form with a file input: the browser is redirected back with bucket, key and etag', async () => {
  const done = `${page.origin}/done`;
  const { url, fields } = await createPresignedPost(s3, {
    Bucket: bucket,
    Key: 'forms/${filename}',
    Conditions: [['content-length-range', 1, 1024]],
    Fields: { success_action_redirect: done },
  });
  const tab = await browser.newPage();
  await tab.goto(page.origin);
  await tab.evaluate(
    ({ url, fields }) => {
      const form = document.createElement('form');
      form.method = 'POST';
      form.action = url;
      form.enctype = 'multipart/form-data';
      for (const [name, value] of Object.entries(fields)) {
        const input = document.createElement('input');
        input.type = 'hidden';
        input.name = name;
        input.value = value;
        form.append(input);
      }
      const file = document.createElement('input');
      file.type = 'file';
      file.name = 'file';
      form.append(file);
      document.body.append(form);
    },
    { url, fields },
  );
  await tab.setInputFiles('input[type=file]', { name: 'report.txt', mimeType: 'text/plain', buffer: Buffer.from('sent by a form') });
  await Promise.all([tab.waitForURL(`${done}?**`), tab.evaluate(() => document.querySelector('form')!.submit())]);
  const landed = new URL(tab.url());
  await tab.close();
  expect([landed.searchParams.get('bucket'), landed.searchParams.get('key')]).toEqual([bucket, 'forms/report.txt']);
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'forms/report.txt' }));
  expect(await got.Body!.transformToString()).toBe('sent by a form');
  expect(landed.searchParams.get('etag')).toBe(got.ETag);
});

test('a file larger than the policy allows is refused with EntityTooLarge, readable by the page, and stores nothing', async () => {
  const { url, fields } = await createPresignedPost(s3, {
    Bucket: bucket,
    Key: 'small/only.txt',
    Conditions: [['content-length-range', 1, 10]],
  });
  const tab = await browser.newPage();
  await tab.goto(page.origin);
  const out = await tab.evaluate(
    async ({ url, fields }) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      form.append('file', new Blob(['x'.repeat(100)]), 'big.txt');
      const res = await fetch(url, { method: 'POST', body: form });
      return { status: res.status, text: await res.text() };
    },
    { url, fields },
  );
  await tab.close();
  expect(out.status).toBe(400);
  expect(out.text).toContain('<Code>EntityTooLarge</Code>');
  expect(await absent(s3, bucket, 'small/only.txt')).toBe(true);
});
