/**
 * A deploy's `_redirects` and `_headers`, parsed once. A root CID names one
 * immutable directory, so its parsed rules (or the error that stops them)
 * are kept by CID for as long as the process has room, and never need
 * invalidating. The same parsers check the publish directory at deploy time,
 * so a bad file is a warning in the deploy log before anyone requests a page.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Blockstore } from 'interface-blockstore';
import { LRUCache } from 'lru-cache';
import type { CID } from 'multiformats/cid';
import { openFile } from '../ipfs/read.js';
import { resolvePath } from '../ipfs/paths.js';
import { parseHeaders, type HeaderRule } from './headers.js';
import { checkSize, parseRedirectsInSlices, SiteFileError, type RedirectRule } from './redirects.js';

/** Each file's rules, or what stops them: a bad `_redirects` matters only to missing paths, a bad `_headers` to every path. */
export interface SiteRules {
  redirects: RedirectRule[] | SiteFileError;
  headers: HeaderRule[] | SiteFileError;
}

const NO_RULES: SiteRules = { redirects: [], headers: [] };
const parsed = new LRUCache<string, Promise<SiteRules>>({ max: 1000 });

async function readRootFile(blockstore: Blockstore, root: CID, name: SiteFileError['file']): Promise<string | undefined> {
  const found = await resolvePath(blockstore, root, [name]);
  if (!found || (found.entry.type !== 'file' && found.entry.type !== 'raw' && found.entry.type !== 'identity')) return undefined;
  const file = await openFile(blockstore, found.entry.cid);
  checkSize(name, file.size);
  return new Response(file.stream()).text();
}

async function attempt<T>(parse: () => T | Promise<T>): Promise<T | SiteFileError> {
  try {
    return await parse();
  } catch (err) {
    if (err instanceof SiteFileError) return err;
    throw err;
  }
}

async function load(blockstore: Blockstore, root: CID): Promise<SiteRules> {
  const read = (name: SiteFileError['file']) =>
    readRootFile(blockstore, root, name).catch((err: unknown) => (err instanceof SiteFileError ? err : Promise.reject(err)));
  const [redirects, headers] = await Promise.all([read('_redirects'), read('_headers')]);
  if (redirects === undefined && headers === undefined) return NO_RULES;
  return {
    // A 10,000-rule `_redirects` is parsed in slices: the gateway serves others meanwhile.
    redirects:
      redirects === undefined
        ? []
        : redirects instanceof SiteFileError
          ? redirects
          : await attempt(() => parseRedirectsInSlices(redirects)),
    headers: headers === undefined ? [] : headers instanceof SiteFileError ? headers : await attempt(() => parseHeaders(headers).rules),
  };
}

/** The rules of the directory `root`, read and parsed on first use. */
export async function siteRules(blockstore: Blockstore, root: CID): Promise<SiteRules> {
  const key = root.toString();
  let pending = parsed.get(key);
  if (!pending) {
    pending = load(blockstore, root);
    parsed.set(key, pending);
    // A failed read (a missing block) is not the directory's last word: read it again next time.
    pending.catch(() => parsed.delete(key));
  }
  return pending;
}

/**
 * What a deploy log should say about the publish directory's `_redirects`
 * and `_headers` (on disk, before import): one line per problem, none when
 * both are fine or absent.
 */
export async function checkSiteFiles(dir: string): Promise<string[]> {
  const warnings: string[] = [];
  for (const name of ['_redirects', '_headers'] as const) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) continue;
    try {
      checkSize(name, info.size);
      const text = await readFile(path, 'utf8');
      if (name === '_redirects') await parseRedirectsInSlices(text);
      else warnings.push(...parseHeaders(text, { publish: true }).warnings); // a bad line fails the deploy (UnsafeHeaderLine)
    } catch (err) {
      if (!(err instanceof SiteFileError)) throw err;
      warnings.push(`${err.message}; the site answers 500 where the file is needed until it is fixed`);
    }
  }
  return warnings;
}
