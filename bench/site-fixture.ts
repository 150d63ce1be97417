/**
 * What bench:deploy and bench:sites share: the seeded static site of 2,000
 * files (the same bytes for the same seed and sizes, run after run) and the
 * GraphQL calls that create a site and deploy it, with the bootstrap
 * account's token. Loads nothing of the service (see
 * test/support/service-env.ts): the benchmarks' client stays lean.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { BOOT } from '../test/support/service-env.js';

/** sfc32: a small seeded PRNG for sizes, names and words (Math.random cannot be seeded). */
export function prng(seed: number): () => number {
  let a = 0x9e3779b9 ^ seed;
  let b = 0x243f6a88 ^ (seed * 31);
  let c = 0xb7e15162;
  let d = seed | 1;
  const next = () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (a + b + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  for (let i = 0; i < 20; i++) next();
  return next;
}

/** `n` seeded random bytes (AES-256-CTR over zeros, keyed by the seed and a label): incompressible, like an image. */
export function seededBytes(seed: number, label: string, n: number): Buffer {
  const key = createHash('sha256').update(`${seed}/${label}`).digest();
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(n));
}

/** A fixed vocabulary of 2,000 words for the seed. */
export function siteWords(seed: number): string[] {
  const rand = prng(seed + 1);
  const letters = 'etaoinshrdlucmfwypvbgkjqxz';
  return Array.from({ length: 2000 }, () => {
    let w = '';
    const len = 2 + Math.floor(rand() * rand() * 10);
    for (let i = 0; i < len; i++) w += letters[Math.floor(rand() * rand() * letters.length)];
    return w;
  });
}

/** About `size` bytes of text shaped like `ext` (words from `words`: compresses about as real pages do), cut to exactly `size`. */
export function textFile(rand: () => number, words: string[], ext: string, size: number): Buffer {
  const word = () => words[Math.floor(rand() * words.length)]!;
  const parts: string[] = [];
  let length = 0;
  const push = (s: string) => {
    parts.push(s);
    length += s.length;
  };
  if (ext === 'html')
    push(
      '<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><link rel="stylesheet" href="/assets/css/site.css"></head>\n<body>\n',
    );
  while (length < size) {
    if (ext === 'html') {
      let p = `<p class="${word()}">`;
      for (let i = 0, n = 8 + Math.floor(rand() * 40); i < n; i++)
        p += (rand() < 0.05 ? `<a href="/${word()}/${word()}.html">${word()}</a>` : word()) + ' ';
      push(p + '</p>\n');
    } else if (ext === 'css') {
      push(
        `.${word()}-${word()} { margin: ${Math.floor(rand() * 40)}px; color: #${Math.floor(rand() * 0xffffff)
          .toString(16)
          .padStart(6, '0')}; }\n`,
      );
    } else {
      push(
        `function ${word()}_${word()}(${word()}, ${word()}) { return ${word()}.${word()}(${Math.floor(rand() * 1000)}) + "${word()} ${word()}"; }\n`,
      );
    }
  }
  return Buffer.from(parts.join('')).subarray(0, size);
}

export interface SiteShape {
  seed: number;
  /** Bytes under public/, about. */
  bytes: number;
  /** Files under public/, of which a twentieth are images. */
  files: number;
}

/**
 * The site's files (path in the repository -> bytes): `README.md` and, under
 * `public/`, `files` files of about `bytes` in all: HTML, CSS and JS of
 * 1-30 KB in nested directories, and a twentieth of them incompressible
 * "images" of 100-600 KB. The same tree for the same shape.
 */
export function siteFiles({ seed, bytes, files: count }: SiteShape): Record<string, Buffer> {
  const words = siteWords(seed);
  const images = Math.max(1, Math.round(count / 20));
  const rand = prng(seed);
  const smallCount = count - images;
  // Many small files, few larger ones: 1 KB + 29 KB * u^2 (mean about 10.7 KB).
  const smallSizes = Array.from({ length: smallCount }, () => Math.round(1000 + 29_000 * rand() ** 2));
  const smallTotal = smallSizes.reduce((s, n) => s + n, 0);
  // The images take the rest of the total, in sizes of 100-600 KB.
  const raw = Array.from({ length: images }, () => 100_000 + 500_000 * rand());
  const budget = Math.max(images * 100_000, bytes - smallTotal);
  const scale = budget / raw.reduce((s, n) => s + n, 0);
  const imageSizes = raw.map((n) => Math.min(600_000, Math.max(100_000, Math.round(n * scale))));
  const sections = Array.from({ length: 12 }, (_, i) => `${words[i * 7]!}-${i}`);
  const dirOf = () => {
    const depth = Math.floor(rand() * 4); // 0-3 levels below the section
    let dir = sections[Math.floor(rand() * sections.length)]!;
    for (let i = 0; i < depth; i++) dir += `/${words[Math.floor(rand() * 40)]!}`;
    return dir;
  };
  const files: Record<string, Buffer> = { 'README.md': Buffer.from('A benchmark site: `public/` is what gets published.\n') };
  smallSizes.forEach((size, i) => {
    const r = rand();
    const ext = r < 0.6 ? 'html' : r < 0.75 ? 'css' : 'js';
    const dir = ext === 'html' ? dirOf() : `assets/${ext}/${words[Math.floor(rand() * 30)]!}`;
    files[`public/${dir}/${words[i % words.length]!}-${i}.${ext}`] = textFile(rand, words, ext, size);
  });
  imageSizes.forEach((size, i) => {
    files[`public/images/${2015 + (i % 10)}/${words[(i * 13) % words.length]!}-${i}.${rand() < 0.7 ? 'jpg' : 'png'}`] = seededBytes(
      seed,
      `image-${i}`,
      size,
    );
  });
  return files;
}

/** A GraphQL call with the bootstrap account's token; throws on errors. */
export async function gql(endpoint: string, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: BOOT.apiToken },
    body: JSON.stringify({ query, variables }),
  });
  const json = (await res.json()) as { data?: any; errors?: unknown[] };
  if (res.status !== 200 || json.errors?.length || !json.data)
    throw new Error(`GraphQL ${res.status}: ${JSON.stringify(json.errors ?? json).slice(0, 500)}`);
  return json.data;
}

export interface Api {
  /** A site deployed from `main` of `repoUrl`: its id and slug (`<slug>.<sites domain>` serves it once published). */
  createSite(repoUrl: string, build: Record<string, unknown>): Promise<{ id: string; slug: string }>;
  trigger(siteId: string): Promise<{ id: string; status: string }>;
  deploy(siteId: string, deployId: string, fields?: string): Promise<any>;
  cancel(siteId: string, deployId: string): Promise<void>;
  /** Polls until `done` (default: the deploy ended); returns the deploy and when the poll saw it (ms since epoch). */
  waitFor(
    siteId: string,
    deployId: string,
    done?: (d: any) => boolean,
    ms?: number,
    fields?: string,
  ): Promise<{ deploy: any; seenAt: number }>;
}

export function api(endpoint: string, pollMs = 50): Api {
  const self: Api = {
    async createSite(repoUrl, build) {
      const input = {
        buildSettings: build,
        deploySettings: { source: { repository: { type: 'GIT_HOST', url: repoUrl, branch: 'main' } } },
      };
      return (await gql(endpoint, 'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite;
    },
    async trigger(siteId) {
      return (await gql(endpoint, 'mutation ($s: ID!) { triggerDeploy(siteId: $s) { id status } }', { s: siteId })).triggerDeploy;
    },
    async deploy(siteId, deployId, fields = 'id status log ipfsHash published') {
      return (
        await gql(endpoint, `query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${fields} } }`, {
          s: siteId,
          d: deployId,
        })
      ).getDeployById;
    },
    async cancel(siteId, deployId) {
      await gql(endpoint, 'mutation ($s: ID!, $d: ID!) { cancelDeploy(siteId: $s, deployId: $d) { id } }', { s: siteId, d: deployId });
    },
    async waitFor(siteId, deployId, done = (d) => d.status !== 'IN_PROGRESS', ms = 300_000, fields = 'id status') {
      const deadline = Date.now() + ms;
      for (;;) {
        const deploy = await self.deploy(siteId, deployId, fields);
        if (done(deploy)) return { deploy, seenAt: Date.now() };
        if (Date.now() > deadline)
          throw new Error(`deploy ${deployId} did not get there in ${ms} ms: ${JSON.stringify(deploy).slice(0, 1000)}`);
        await new Promise((r) => setTimeout(r, pollMs));
      }
    },
  };
  return self;
}

export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** Columns padded to their widest cell: the first left-aligned, the rest right-aligned. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')).join('\n');
}
