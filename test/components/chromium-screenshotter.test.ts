/**
 * The local Screenshotter with Debian's Chromium, on publish directories
 * served as the deploy pipeline serves them: the picture has the asked size
 * and shows the page (its CSS loaded by absolute path); the page reaches
 * nothing but its own origin; a page that never loads, or never stops
 * running a script, is given up at the time limit and the next shot works.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, get, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ChromiumScreenshotter } from '../../functions/local/chromium-screenshotter.js';
import { PREVIEW_UID } from '../../functions/preview/chromium.js';
import { ScreenshotError } from '../../functions/core/ports/screenshotter.js';
import { serveDirectory, type ServedDirectory } from '../../functions/preview/serve-directory.js';
import { decodePng } from '../support/png.js';

const CHROMIUM = process.env.CAIRN_CHROMIUM ?? '/usr/bin/chromium';
const SIZE = { width: 1280, height: 800 };

let shooter: ChromiumScreenshotter;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(() => {
  // .ci/run installs Debian's chromium; without it this test fails and says so (it is never skipped).
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (or set CAIRN_CHROMIUM to a Chromium)`);
  shooter = new ChromiumScreenshotter(CHROMIUM);
});
afterAll(async () => {
  await shooter?.close();
  for (const c of cleanups.reverse()) await c();
});

async function site(files: Record<string, string>): Promise<ServedDirectory & { dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-shot-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  const served = await serveDirectory(dir);
  cleanups.push(() => served.close());
  return { ...served, dir };
}

/** A server on another loopback port that counts what reaches it (and answers, or never does). */
async function otherServer(answer: boolean): Promise<{ origin: string; hits: string[] }> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? '');
    if (answer) res.writeHead(200, { 'content-type': 'text/html' }).end('<p>elsewhere</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const address = server.address();
  return { origin: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, hits };
}

const near = ([r, g, b]: number[], [R, G, B]: number[]) => Math.abs(r! - R!) + Math.abs(g! - G!) + Math.abs(b! - B!) < 30;

test('a picture of the page at the asked size, with its stylesheet and image loaded by absolute path', async () => {
  const served = await site({
    'index.html':
      '<!doctype html><link rel="stylesheet" href="/css/site.css"><body><div id="box"></div><img id="pic" src="/img/dot.svg"></body>',
    'css/site.css':
      'html, body { margin: 0; background: rgb(255, 0, 0); } #box { position: absolute; left: 0; top: 0; width: 100px; height: 100px; background: rgb(0, 0, 255); } #pic { position: absolute; right: 0; bottom: 0; width: 100px; height: 100px; }',
    'img/dot.svg':
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="rgb(0,255,0)"/></svg>',
  });
  const png = await shooter.capture(`${served.origin}/`, { ...SIZE, timeoutMs: 20_000 });
  const picture = decodePng(png);
  expect([picture.width, picture.height]).toEqual([1280, 800]);
  expect(near(picture.pixel(640, 400), [255, 0, 0])).toBe(true); // the stylesheet's background
  expect(near(picture.pixel(50, 50), [0, 0, 255])).toBe(true); // the page's own element
  expect(near(picture.pixel(1230, 750), [0, 255, 0])).toBe(true); // the image, at the bottom right of the viewport
});

/** This test process's Chromium processes (descendants of it), with what /proc says of each. */
async function ourChromiumProcesses(): Promise<
  Array<{ pid: number; type: string; cmdline: string; uid: number; seccomp: number; pidNs: string; userNs: string }>
> {
  const parents = new Map<number, number>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (stat) parents.set(Number(name), ppid);
  }
  const ours = (pid: number) => {
    for (let p = parents.get(pid), hops = 0; p !== undefined && hops < 20; p = parents.get(p), hops++) if (p === process.pid) return true;
    return false;
  };
  const found = [];
  for (const pid of parents.keys()) {
    if (!ours(pid)) continue;
    // A zygote's children rewrite their command line as one space-separated string.
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replace(/\0/g, ' ');
    if (!/chrom/.test(cmdline.split(' ')[0] ?? '')) continue;
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const field = (name: string) => new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(status)?.[1];
    found.push({
      pid,
      type: /(?:^| )--type=(\S+)/.exec(cmdline)?.[1] ?? 'browser',
      cmdline,
      uid: Number(field('Uid')),
      seccomp: Number(field('Seccomp')),
      pidNs: await readlink(`/proc/${pid}/ns/pid`).catch(() => ''),
      userNs: await readlink(`/proc/${pid}/ns/user`).catch(() => ''),
    });
  }
  return found;
}

test("the page's renderer runs in Chromium's sandbox (its own namespaces, a seccomp filter), never as root", async () => {
  // A page whose image takes a moment: its renderer, past its start (it
  // parsed the page and asked for the image), is alive while /proc is read.
  let imageAsked!: () => void;
  const parsed = new Promise<void>((resolve) => (imageAsked = resolve));
  const slow = createServer((req, res) => {
    if (req.url === '/')
      return void res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><body style="background: rgb(0, 0, 255)"><img src="/slow.svg"></body>');
    imageAsked();
    setTimeout(
      () => res.writeHead(200, { 'content-type': 'image/svg+xml' }).end('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'),
      3000,
    );
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    slow.closeAllConnections();
    return new Promise((resolve) => slow.close(resolve));
  });
  const port = (slow.address() as { port: number }).port;
  const shot = shooter.capture(`http://127.0.0.1:${port}/`, { ...SIZE, timeoutMs: 20_000 });
  await parsed;
  const seen = await ourChromiumProcesses();
  const renderers = seen.filter((p) => p.type === 'renderer');
  expect(renderers.length).toBeGreaterThan(0);
  const ownPidNs = await readlink('/proc/self/ns/pid');
  const ownUserNs = await readlink('/proc/self/ns/user');
  for (const renderer of renderers) {
    expect(renderer.seccomp).toBe(2); // a seccomp-bpf filter
    expect(renderer.pidNs).not.toBe(ownPidNs);
    expect(renderer.userNs).not.toBe(ownUserNs);
    expect(renderer.uid).not.toBe(0);
  }
  // No Chromium process of ours runs as root, nor was told to go without its sandbox.
  for (const p of seen) expect(p.uid).toBe(process.getuid?.() === 0 ? PREVIEW_UID : process.getuid?.());
  for (const p of seen) expect(p.cmdline.split(' ')).not.toContain('--no-sandbox');
  // And the picture is taken all the same.
  const picture = decodePng(await shot);
  expect(near(picture.pixel(640, 400), [0, 0, 255])).toBe(true);
});

test('the page reaches nothing but its own origin', async () => {
  const elsewhere = await otherServer(true);
  const served = await site({
    'index.html': `<!doctype html><body style="background: rgb(255, 0, 0)"><img src="${elsewhere.origin}/beacon.png"><iframe src="${elsewhere.origin}/frame"></iframe><img src="http://example.com/x.png"><script>fetch("${elsewhere.origin}/fetch").catch(() => {})</script></body>`,
  });
  const picture = decodePng(await shooter.capture(`${served.origin}/`, { ...SIZE, timeoutMs: 20_000 }));
  expect(near(picture.pixel(640, 400), [255, 0, 0])).toBe(true);
  expect(elsewhere.hits).toEqual([]);
});

test('the directory server gives nothing outside the publish directory, through .. or a symlink', async () => {
  const secret = await mkdtemp(join(tmpdir(), 'cairn-secret-'));
  cleanups.push(() => rm(secret, { recursive: true, force: true }));
  await writeFile(join(secret, 'secret.txt'), 'not public');
  const served = await site({ 'index.html': 'home', 'sub/index.html': 'sub' });
  await symlink(join(secret, 'secret.txt'), join(served.dir, 'leak.txt'));
  expect(await (await fetch(`${served.origin}/sub/`)).text()).toBe('sub');
  expect((await fetch(`${served.origin}/leak.txt`)).status).toBe(404);
  // fetch() would resolve the .. itself: a raw request sends it as it is.
  const raw = (path: string) =>
    new Promise<number>((resolve, reject) =>
      get(`${served.origin}${path}`, (res) => resolve(res.resume().statusCode!)).on('error', reject),
    );
  const outside = `/../${basename(secret)}/secret.txt`;
  expect(join(served.dir, outside)).toBe(join(secret, 'secret.txt'));
  expect(await raw(outside)).toBe(404);
  expect(await raw(`/%2e%2e/${basename(secret)}/secret.txt`)).toBe(404);
});

test('a page that never loads is given up at the time limit, and the next shot works', async () => {
  const hanging = await otherServer(false);
  const started = Date.now();
  const error = await shooter.capture(`${hanging.origin}/`, { ...SIZE, timeoutMs: 1500 }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ScreenshotError);
  expect((error as Error).message).toMatch(/did not load and render within 1\.5 s/);
  expect(Date.now() - started).toBeLessThan(1500 + 5000);
  expect(hanging.hits).toEqual(['/']);
  const served = await site({ 'index.html': '<body style="background: rgb(0, 0, 255)">' });
  expect(near(decodePng(await shooter.capture(`${served.origin}/`, { ...SIZE, timeoutMs: 20_000 })).pixel(10, 10), [0, 0, 255])).toBe(true);
});

test('a page whose script never ends is given up at the time limit, and the next shot works', async () => {
  const stuck = await site({ 'index.html': '<body><script>for (;;) {}</script>' });
  const started = Date.now();
  const error = await shooter.capture(`${stuck.origin}/`, { ...SIZE, timeoutMs: 1500 }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ScreenshotError);
  expect((error as Error).message).toMatch(/did not load and render within 1\.5 s/);
  expect(Date.now() - started).toBeLessThan(1500 + 5000 + 3000);
  const served = await site({ 'index.html': '<body style="background: rgb(0, 255, 0)">' });
  expect(near(decodePng(await shooter.capture(`${served.origin}/`, { ...SIZE, timeoutMs: 20_000 })).pixel(10, 10), [0, 255, 0])).toBe(true);
});

test('an aborted signal stops the shot', async () => {
  const hanging = await otherServer(false);
  const controller = new AbortController();
  const shot = shooter.capture(`${hanging.origin}/`, { ...SIZE, timeoutMs: 60_000, signal: controller.signal });
  await waitUntil(() => hanging.hits.length > 0);
  controller.abort();
  await expect(shot).rejects.toThrow(/the deploy was stopped/);
});

test('without Chromium, and after close, a shot fails with a reason', async () => {
  const missing = new ChromiumScreenshotter('/nonexistent/chromium');
  await expect(missing.capture('http://127.0.0.1:9/', { ...SIZE, timeoutMs: 5000 })).rejects.toThrow(
    /no Chromium at \/nonexistent\/chromium/,
  );
  const closing = new ChromiumScreenshotter(CHROMIUM);
  await closing.close();
  await expect(closing.capture('http://127.0.0.1:9/', { ...SIZE, timeoutMs: 5000 })).rejects.toThrow(ScreenshotError);
});

async function waitUntil(ok: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}
