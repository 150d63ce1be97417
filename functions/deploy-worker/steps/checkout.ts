/**
 * Working trees from a repository's objects, and the per-repository mirror
 * that lets a deploy reuse what the last one fetched and wrote.
 *
 * isomorphic-git's own checkout writes every file and an index, and reads
 * every file back on the next checkout to compare; for a 2,000-file site it
 * took longer than the fetch. Cairn writes the tree itself instead: the
 * commit's tree is walked, each blob inflated from the pack and written
 * with its mode (executables stay executable, symlinks stay symlinks, a
 * submodule is an empty folder), several at a time.
 *
 * A mirror (one per repository URL and branch, under the deploy worker's
 * sources directory; one per site too for a repository cloned with a
 * site's access token, see clone.ts) keeps the git objects between deploys, so a deploy
 * fetches only what is new, and a snapshot of the last tree written, with a
 * manifest of the blob and tree ids at each path. A deploy of the same tree
 * copies the snapshot; a deploy of a changed tree copies every unchanged
 * folder and file from it and inflates only the rest, straight into the
 * checkout, and the snapshot is brought up to date afterwards, off the
 * deploy's path (the mirror stays held until it is). The build gets a copy,
 * never the snapshot itself, so nothing a build does reaches the next deploy.
 */
import * as git from 'isomorphic-git';
import fs from 'node:fs';
import { copyFile, mkdir, readdir, readFile, readlink, realpath, rename, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { taskLimit } from '../../core/task-limit.js';
import { KnownFiles } from './known-files.js';

const run = promisify(execFile);

/** Files written or copied at once. */
const FILES_IN_FLIGHT = 16;
/** A mirror whose git objects came in more packs than this is fetched anew (each fetch adds a pack). */
const MAX_PACKS = 24;

/** A commit's tree holds a path no checkout may have (a hostile or broken repository). */
export class UnsafeTreeError extends Error {
  override name = 'UnsafeTreeError';
}

/** Path → `<mode> <object id>` for every file, symlink and folder of a written tree. */
export type TreeManifest = Record<string, string>;

interface WriteTreeOptions {
  gitdir: string;
  /** The tree's object id (a commit's `tree`). */
  tree: string;
  into: string;
  signal: AbortSignal;
  /** A tree written before, and its manifest: whatever has the same id at the same path is copied from it. */
  reuse?: { dir: string; manifest: TreeManifest };
}

export interface WrittenTree {
  manifest: TreeManifest;
  /** Files and symlinks inflated from git objects. */
  written: number;
  /** Files and symlinks copied from the reused tree. */
  reused: number;
}

const MODES: Record<string, 'file' | 'executable' | 'symlink' | 'tree' | 'submodule'> = {
  '100644': 'file',
  '100755': 'executable',
  '100664': 'file', // written by some old gits
  '120000': 'symlink',
  '040000': 'tree',
  '40000': 'tree',
  '160000': 'submodule',
};

/** What git itself refuses to check out (it would write outside the tree, or over the repository). */
function checkName(name: string, parent: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\\') || name.includes('\0') || name.toLowerCase() === '.git') {
    throw new UnsafeTreeError(`the commit holds a path no checkout may have: "${(parent ? `${parent}/` : '') + name}"`);
  }
}

/** Writes the tree `tree` into the empty or missing directory `into`. */
export async function writeTree(options: WriteTreeOptions): Promise<WrittenTree> {
  const { gitdir, into, signal, reuse } = options;
  const cache = {};
  const limit = taskLimit(FILES_IN_FLIGHT, signal);
  const manifest: TreeManifest = {};
  const counts = { written: 0, reused: 0 };

  const blob = async (oid: string) => (await git.readBlob({ fs, gitdir, oid, cache })).blob;

  const copyReused = async (path: string, kind: string) => {
    const from = join(reuse!.dir, path);
    const to = join(into, path);
    if (kind === 'tree') {
      counts.reused += await copyTree(from, to, signal);
      const prefix = `${path}/`;
      for (const [p, v] of Object.entries(reuse!.manifest)) if (p.startsWith(prefix)) manifest[p] = v;
    } else {
      await limit(() => copyEntry(from, to));
      counts.reused++;
    }
  };

  const walk = async (oid: string, path: string): Promise<void> => {
    signal.throwIfAborted();
    const { tree } = await git.readTree({ fs, gitdir, oid, cache });
    await mkdir(join(into, path), { recursive: true });
    await Promise.all(
      tree.map(async (entry) => {
        checkName(entry.path, path);
        const kind = MODES[entry.mode];
        if (!kind) throw new UnsafeTreeError(`the commit holds "${path ? `${path}/` : ''}${entry.path}" with a mode git does not write (${entry.mode})`);
        const at = path ? `${path}/${entry.path}` : entry.path;
        const id = `${entry.mode} ${entry.oid}`;
        manifest[at] = id;
        if (reuse?.manifest[at] === id && kind !== 'submodule') return copyReused(at, kind);
        const target = join(into, at);
        if (kind === 'tree') return walk(entry.oid, at);
        if (kind === 'submodule') return void (await mkdir(target, { recursive: true }));
        await limit(async () => {
          const bytes = await blob(entry.oid);
          if (kind === 'symlink') await symlink(Buffer.from(bytes), target);
          else await writeFile(target, bytes, { mode: kind === 'executable' ? 0o755 : 0o644 });
        });
        counts.written++;
      }),
    );
  };

  await walk(options.tree, '');
  return { manifest, ...counts };
}

/** One file or symlink, as it is (a symlink is never followed). */
async function copyEntry(from: string, to: string): Promise<void> {
  const st = await fs.promises.lstat(from);
  if (st.isSymbolicLink()) await symlink(await readlink(from, { encoding: 'buffer' }), to);
  else await copyFile(from, to); // with the source's mode
}

/**
 * A folder's contents, recursively, as they are (modes, symlinks); returns
 * how many files and symlinks were copied. GNU cp does it in one process
 * with plain system calls, two to three times faster than Node's thread
 * pool for thousands of small files (0.2 s against 0.5 s for a 2,000-file
 * site); where there is no cp (a Lambda image without coreutils), Node does.
 */
export async function copyTree(from: string, to: string, signal: AbortSignal): Promise<number> {
  signal.throwIfAborted();
  if (await hasCp()) {
    await mkdir(dirname(to), { recursive: true });
    await run('cp', ['-a', '--no-target-directory', from, to], { signal });
    return countEntries(to);
  }
  return copyTreeInNode(from, to, signal);
}

let cp: Promise<boolean> | undefined;
const hasCp = () =>
  (cp ??= run('cp', ['--version']).then(
    ({ stdout }) => stdout.includes('GNU'),
    () => false,
  ));

async function countEntries(dir: string): Promise<number> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => !e.isDirectory()).length;
}

/**
 * copyTree without cp: Node's copyFile (copy_file_range), several at a
 * time. Also what copies a mirror's few, large git files to a checkout:
 * copies, never links, so a build cannot reach the mirror's objects.
 */
export async function copyTreeInNode(from: string, to: string, signal: AbortSignal): Promise<number> {
  const limit = taskLimit(FILES_IN_FLIGHT, signal);
  let copied = 0;
  const walk = async (src: string, dst: string): Promise<void> => {
    signal.throwIfAborted();
    await mkdir(dst, { recursive: true });
    const entries = await readdir(src, { withFileTypes: true });
    await Promise.all(
      entries.map(async (e) => {
        if (e.isDirectory()) return walk(join(src, e.name), join(dst, e.name));
        await limit(() => copyEntry(join(src, e.name), join(dst, e.name)));
        copied++;
      }),
    );
  };
  await walk(from, to);
  return copied;
}

export interface SourceMirrors {
  /** Where mirrors live (kept across deploys and restarts). */
  dir: string;
  /** How many repositories (URL and branch) are kept; the least recently deployed go first. */
  keep: number;
  /** Told of a failure of the work a mirror does after a deploy got its files (the mirror is then reset). */
  onBackgroundError?: (err: unknown) => void;
}

/** One repository's mirror: its git objects and its last written tree. */
export class Mirror {
  readonly gitdir: string;
  private readonly snapshot: string;
  private readonly manifestFile: string;

  private constructor(readonly dir: string) {
    this.gitdir = join(dir, 'git');
    this.snapshot = join(dir, 'tree');
    this.manifestFile = join(dir, 'tree.json');
  }

  /** Whether its objects are there to fetch into (else a clone starts them). */
  async hasObjects(): Promise<boolean> {
    const packs = await readdir(join(this.gitdir, 'objects', 'pack')).catch(() => undefined);
    if (!packs) return false;
    if (packs.filter((n) => n.endsWith('.pack')).length > MAX_PACKS) {
      await this.dropObjects();
      return false;
    }
    return true;
  }

  /** Forgets the git objects: the next fetch clones anew (the snapshot stays). */
  async dropObjects(): Promise<void> {
    await rm(this.gitdir, { recursive: true, force: true });
  }

  /** Forgets everything kept (something of it is damaged). */
  async reset(): Promise<void> {
    await rm(this.manifestFile, { force: true });
    await Promise.all([this.dropObjects(), rm(this.snapshot, { recursive: true, force: true }), rm(`${this.snapshot}.next`, { recursive: true, force: true })]);
  }

  /**
   * Makes the snapshot the tree `tree`, reusing what it held, and copies it
   * to `into`. Returns what was written and reused.
   */
  async checkout(tree: string, into: string, signal: AbortSignal): Promise<{ written: number; reused: number; unchanged: boolean; known: KnownFiles }> {
    const last = await this.lastTree();
    const dags = join(this.dir, 'dags.json');
    if (last?.tree === tree) {
      const reused = await copyTree(this.snapshot, into, signal);
      // Stamped before anything else touches the copy: what the import may take as imported before.
      return { written: 0, reused, unchanged: true, known: await KnownFiles.stamp(await realpath(into), last.manifest, dags) };
    }
    // A new tree is written straight into the checkout (unchanged files copied from the
    // snapshot); the snapshot follows after the deploy has its files, off its path.
    const made = await writeTree({ gitdir: this.gitdir, tree, into, signal, reuse: last ? { dir: this.snapshot, manifest: last.manifest } : undefined });
    const known = await KnownFiles.stamp(await realpath(into), made.manifest, dags);
    this.pending = () => this.refreshSnapshot(tree, last);
    return { written: made.written, reused: made.reused, unchanged: false, known };
  }

  /** Work left for after the deploy got its checkout, run while the mirror is still held. */
  private pending?: () => Promise<void>;

  takePending(): (() => Promise<void>) | undefined {
    const pending = this.pending;
    this.pending = undefined;
    return pending;
  }

  /** Makes the snapshot the tree `tree`, from the old snapshot and the git objects. */
  private async refreshSnapshot(tree: string, last: { tree: string; manifest: TreeManifest } | undefined): Promise<void> {
    // The manifest goes first and comes back last: one on disk always describes the snapshot beside it.
    await rm(this.manifestFile, { force: true });
    const next = `${this.snapshot}.next`;
    await rm(next, { recursive: true, force: true });
    const made = await writeTree({ gitdir: this.gitdir, tree, into: next, signal: new AbortController().signal, reuse: last ? { dir: this.snapshot, manifest: last.manifest } : undefined });
    await rm(this.snapshot, { recursive: true, force: true });
    await rename(next, this.snapshot);
    await writeFile(`${this.manifestFile}.next`, JSON.stringify({ tree, manifest: made.manifest }));
    await rename(`${this.manifestFile}.next`, this.manifestFile);
  }

  private async lastTree(): Promise<{ tree: string; manifest: TreeManifest } | undefined> {
    try {
      const parsed = JSON.parse(await readFile(this.manifestFile, 'utf8')) as { tree?: unknown; manifest?: unknown };
      if (typeof parsed.tree === 'string' && parsed.manifest && typeof parsed.manifest === 'object') return parsed as { tree: string; manifest: TreeManifest };
    } catch {
      // none yet, or torn: written anew
    }
    return undefined;
  }

  /** Marks the mirror as just used (what eviction orders by). */
  async touch(): Promise<void> {
    const now = new Date();
    await utimes(this.dir, now, now).catch(() => undefined);
  }

  static async open(mirrors: SourceMirrors, url: string, branch: string): Promise<Mirror> {
    const name = createHash('sha256').update(`${url}\n${branch}`).digest('hex').slice(0, 24);
    const dir = join(mirrors.dir, name);
    await mkdir(dir, { recursive: true });
    return new Mirror(dir);
  }
}

const held = new Map<string, Promise<void>>();

/** Resolves once no mirror is held (the work after a deploy's checkout included): for tests and shutdown. */
export async function mirrorsIdle(): Promise<void> {
  while (held.size) await Promise.all([...held.values()]);
}

/** Runs `work` with the mirror of `url` (a URL, or a scope and a URL) and `branch` to itself (one deploy at a time per mirror in this process). */
export async function withMirror<T>(mirrors: SourceMirrors, url: string, branch: string, work: (mirror: Mirror) => Promise<T>): Promise<T> {
  const mirror = await Mirror.open(mirrors, url, branch);
  const before = held.get(mirror.dir) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => (release = r));
  const chained = before.then(() => mine);
  held.set(mirror.dir, chained);
  await before;
  const done = async () => {
    release();
    if (held.get(mirror.dir) === chained) held.delete(mirror.dir);
    await evict(mirrors).catch(() => undefined);
  };
  let result: T;
  try {
    await mirror.touch();
    result = await work(mirror);
  } catch (err) {
    await done();
    throw err;
  }
  const pending = mirror.takePending();
  if (!pending) {
    await done();
    return result;
  }
  // The deploy goes on; the next deploy of this repository waits for the snapshot.
  void pending()
    .catch(async (err: unknown) => {
      mirrors.onBackgroundError?.(err);
      await mirror.reset().catch(() => undefined);
    })
    .finally(() => done());
  return result;
}

/** Keeps the `keep` most recently used mirrors; one in use is never removed. */
async function evict(mirrors: SourceMirrors): Promise<void> {
  const names = await readdir(mirrors.dir).catch(() => [] as string[]);
  if (names.length <= mirrors.keep) return;
  const dated = await Promise.all(names.map(async (name) => ({ dir: join(mirrors.dir, name), used: (await stat(join(mirrors.dir, name)).catch(() => undefined))?.mtimeMs ?? 0 })));
  dated.sort((a, b) => b.used - a.used);
  for (const { dir } of dated.slice(mirrors.keep)) {
    if (!held.has(dir)) await rm(dir, { recursive: true, force: true });
  }
}
