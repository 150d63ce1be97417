/**
 * Working trees from a repository's objects, and the per-repository mirror
 * that lets a deploy reuse what the last one fetched and wrote.
 *
 * A mirror (one per repository URL and branch, under the deploy worker's
 * sources directory; one per site too for a repository cloned with a
 * site's access token, see clone/index.ts) keeps the git objects between deploys,
 * so a deploy fetches only what is new, and a snapshot of the last tree
 * written, with a manifest of the blob and tree ids at each path.
 *
 * A deploy's tree is written once, into the snapshot: with git's command
 * line where there is one (`read-tree -u`, which rewrites only what changed
 * since the snapshot's tree, from the index kept beside it), else by Cairn
 * from isomorphic-git's objects (each blob inflated and written with its
 * mode; unchanged files and folders linked from the old snapshot). The
 * checkout is then the snapshot's files hard-linked into a new directory
 * (and the repository as `.git`, the same way): nothing is copied, and the
 * same tree deployed again costs a directory of links.
 *
 * A file of the snapshot is never written in place once written: git and
 * Cairn replace a changed file by a new one. The checkout's files being the
 * snapshot's, whoever lets a command write the checkout must keep it from
 * writing those files (BuildRunner's contract): the bubblewrap runner shows
 * the checkout to the build through an overlay, so that what the build
 * writes lands in a layer of its own, and copies the files first where it
 * cannot; a build elsewhere (CodeBuild) gets the checkout uploaded.
 */
import * as git from 'isomorphic-git';
import fs from 'node:fs';
import {
  copyFile,
  link,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { taskLimit } from '../../core/task-limit.js';
import { KnownFiles } from './known-files.js';
import { checkoutTree, GitCommandError, listTree } from './clone/git-cli.js';

const run = promisify(execFile);

/** Files written, copied or linked at once. */
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
  /** A tree written before that nothing writes into, and its manifest: whatever has the same id at the same path is linked from it. */
  reuse?: { dir: string; manifest: TreeManifest };
}

export interface WrittenTree {
  manifest: TreeManifest;
  /** Files and symlinks inflated from git objects. */
  written: number;
  /** Files and symlinks linked from the reused tree. */
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
  if (
    name === '' ||
    name === '.' ||
    name === '..' ||
    name.includes('/') ||
    name.includes('\\') ||
    name.includes('\0') ||
    name.toLowerCase() === '.git'
  ) {
    throw new UnsafeTreeError(`the commit holds a path no checkout may have: "${(parent ? `${parent}/` : '') + name}"`);
  }
}

const unknownMode = (path: string, mode: string) =>
  new UnsafeTreeError(`the commit holds "${path}" with a mode git does not write (${mode})`);

/** Files and symlinks of a manifest (what a checkout writes as files). */
const isBlob = (id: string) => {
  const kind = MODES[id.slice(0, id.indexOf(' '))];
  return kind === 'file' || kind === 'executable' || kind === 'symlink';
};

/** Writes the tree `tree` into the empty or missing directory `into`, with isomorphic-git's objects. */
export async function writeTree(options: WriteTreeOptions): Promise<WrittenTree> {
  const { gitdir, into, signal, reuse } = options;
  const cache = {};
  const limit = taskLimit(FILES_IN_FLIGHT, signal);
  const manifest: TreeManifest = {};
  const counts = { written: 0, reused: 0 };

  const blob = async (oid: string) => (await git.readBlob({ fs, gitdir, oid, cache })).blob;

  const linkReused = async (path: string, kind: string) => {
    const from = join(reuse!.dir, path);
    const to = join(into, path);
    if (kind === 'tree') {
      counts.reused += await linkTree(from, to, signal);
      const prefix = `${path}/`;
      for (const [p, v] of Object.entries(reuse!.manifest)) if (p.startsWith(prefix)) manifest[p] = v;
    } else {
      await limit(() => link(from, to));
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
        const at = path ? `${path}/${entry.path}` : entry.path;
        if (!kind) throw unknownMode(at, entry.mode);
        const id = `${entry.mode} ${entry.oid}`;
        manifest[at] = id;
        if (reuse?.manifest[at] === id && kind !== 'submodule') return linkReused(at, kind);
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

/**
 * The manifest of `tree` from git's command line, refusing what a checkout
 * may not hold before anything is written: the same checks as writeTree's
 * walk (each name, each mode), plus what only a listing of whole paths can
 * show (a name with a slash in it, a path listed twice).
 */
export async function treeManifest(gitBin: string, gitdir: string, tree: string, signal: AbortSignal): Promise<TreeManifest> {
  const manifest: TreeManifest = {};
  for (const [mode, , oid, path] of await listTree(gitBin, gitdir, tree, signal)) {
    const slash = path.lastIndexOf('/');
    const parent = slash < 0 ? '' : path.slice(0, slash);
    checkName(path.slice(slash + 1), parent);
    if ((parent !== '' && MODES[(manifest[parent] ?? '').split(' ')[0]!] !== 'tree') || manifest[path] !== undefined) {
      throw new UnsafeTreeError(`the commit holds a path no checkout may have: "${path}"`);
    }
    if (!MODES[mode!]) throw unknownMode(path, mode!);
    manifest[path] = `${mode} ${oid}`;
  }
  return manifest;
}

/** The tree written by git's command line into `workTree` (whole: it is empty or missing), after its manifest's checks. */
export async function writeTreeWithGit(
  gitBin: string,
  options: { gitdir: string; workTree: string; index: string; tree: string; signal: AbortSignal },
): Promise<TreeManifest> {
  const manifest = await treeManifest(gitBin, options.gitdir, options.tree, options.signal);
  await checkoutTree(gitBin, options);
  return manifest;
}

/** One file or symlink, as it is (a symlink is never followed). */
async function copyEntry(from: string, to: string): Promise<void> {
  const st = await fs.promises.lstat(from);
  if (st.isSymbolicLink()) await symlink(await readlink(from, { encoding: 'buffer' }), to);
  else await copyFile(from, to); // with the source's mode
}

let cp: Promise<boolean> | undefined;
const hasGnuCp = () =>
  (cp ??= run('cp', ['--version']).then(
    ({ stdout }) => stdout.includes('GNU'),
    () => false,
  ));

async function countEntries(dir: string): Promise<number> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => !e.isDirectory()).length;
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
  if (await hasGnuCp()) {
    await mkdir(dirname(to), { recursive: true });
    await run('cp', ['-a', '--no-target-directory', from, to], { signal });
    return countEntries(to);
  }
  return copyTreeInNode(from, to, signal);
}

/** copyTree without cp: Node's copyFile (copy_file_range), several at a time. */
export async function copyTreeInNode(from: string, to: string, signal: AbortSignal): Promise<number> {
  return walkInto(from, to, signal, copyEntry);
}

/**
 * A folder's folders made anew, its files and symlinks hard-linked (the
 * same inodes); returns how many were linked. With GNU cp (`cp -al`, one
 * process) where there is one, else with Node. Across file systems (a
 * workspace and a sources folder on different disks), where no link can
 * be made, copied instead.
 */
export async function linkTree(from: string, to: string, signal: AbortSignal, options: { count?: boolean } = {}): Promise<number> {
  signal.throwIfAborted();
  await mkdir(dirname(to), { recursive: true });
  if ((await stat(from)).dev !== (await stat(dirname(to))).dev) return copyTree(from, to, signal);
  if (await hasGnuCp()) {
    await run('cp', ['-al', '--no-target-directory', from, to], { signal });
    return options.count === false ? 0 : countEntries(to);
  }
  return linkTreeInNode(from, to, signal);
}

/** linkTree without cp. */
export function linkTreeInNode(from: string, to: string, signal: AbortSignal): Promise<number> {
  return walkInto(from, to, signal, (src, dst) => link(src, dst));
}

async function walkInto(from: string, to: string, signal: AbortSignal, each: (src: string, dst: string) => Promise<void>): Promise<number> {
  const limit = taskLimit(FILES_IN_FLIGHT, signal);
  let done = 0;
  const walk = async (src: string, dst: string): Promise<void> => {
    signal.throwIfAborted();
    await mkdir(dst, { recursive: true, mode: (await stat(src)).mode & 0o7777 });
    const entries = await readdir(src, { withFileTypes: true });
    await Promise.all(
      entries.map(async (e) => {
        if (e.isDirectory()) return walk(join(src, e.name), join(dst, e.name));
        await limit(() => each(join(src, e.name), join(dst, e.name)));
        done++;
      }),
    );
  };
  await walk(from, to);
  return done;
}

export interface SourceMirrors {
  /** Where mirrors live (kept across deploys and restarts). */
  dir: string;
  /** How many repositories (URL and branch) are kept; the least recently deployed go first. */
  keep: number;
  /** Told of a failure of work a mirror does after a deploy got its files (none is left: kept for the callers' wiring). */
  onBackgroundError?: (err: unknown) => void;
}

export interface CheckedOut {
  /** Files and symlinks written anew into the snapshot for this deploy. */
  written: number;
  /** Files and symlinks the snapshot already had, as they were. */
  reused: number;
  /** The snapshot was already this tree. */
  unchanged: boolean;
  known: KnownFiles;
}

/** One repository's mirror: its git objects and its last written tree. */
export class Mirror {
  readonly gitdir: string;
  private readonly snapshot: string;
  private readonly manifestFile: string;
  /** git's index of the snapshot (written by the command line): what lets the next tree be written as a difference. */
  private readonly indexFile: string;

  private constructor(readonly dir: string) {
    this.gitdir = join(dir, 'git');
    this.snapshot = join(dir, 'tree');
    this.manifestFile = join(dir, 'tree.json');
    this.indexFile = join(dir, 'tree.index');
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
    await Promise.all([this.dropObjects(), this.dropSnapshot()]);
  }

  private async dropSnapshot(): Promise<void> {
    await Promise.all([
      rm(this.snapshot, { recursive: true, force: true }),
      rm(`${this.snapshot}.next`, { recursive: true, force: true }),
      rm(this.indexFile, { force: true }),
    ]);
  }

  /**
   * Makes the snapshot the tree `tree` (with git's command line `gitBin`,
   * else isomorphic-git) and links it into `into`; stamps the checkout's
   * files for the import (known-files.ts).
   */
  async checkout(tree: string, into: string, signal: AbortSignal, gitBin?: string): Promise<CheckedOut> {
    const last = await this.lastTree();
    let manifest: TreeManifest;
    if (last?.tree === tree) {
      manifest = last.manifest;
    } else {
      // From here until the manifest is back, the snapshot is not to be trusted (a deploy cut short leaves it half written).
      await rm(this.manifestFile, { force: true });
      manifest = gitBin ? await this.writeWithGit(gitBin, tree, last, signal) : await this.writeWithNode(tree, last, signal);
      await writeFile(`${this.manifestFile}.next`, JSON.stringify({ tree, manifest }));
      await rename(`${this.manifestFile}.next`, this.manifestFile);
    }
    await linkTree(this.snapshot, into, signal, { count: false });
    // Stamped before anything else touches the checkout: what the import may take as imported before.
    const known = await KnownFiles.stamp(await realpath(into), manifest, join(this.dir, 'dags.json'));
    let written = 0;
    let reused = 0;
    for (const [path, id] of Object.entries(manifest)) {
      if (!isBlob(id)) continue;
      if (last?.manifest[path] === id) reused++;
      else written++;
    }
    return { written, reused, unchanged: last?.tree === tree, known };
  }

  /**
   * The tree written by git: only what differs from the last one when git's
   * index of it is there, else all of it. Its listing (the manifest, and the
   * checks of every path) is made meanwhile: what git writes stays in the
   * snapshot (git itself refuses `..` and `.git`), which a refused tree
   * leaves to be dropped, its manifest gone.
   */
  private async writeWithGit(gitBin: string, tree: string, last: { tree: string } | undefined, signal: AbortSignal): Promise<TreeManifest> {
    const listing = treeManifest(gitBin, this.gitdir, tree, signal);
    listing.catch(() => undefined); // awaited below, whichever way the writing goes
    const refused = async (err: unknown) => {
      await listing.catch((listed: unknown) => {
        if (listed instanceof UnsafeTreeError) err = listed;
      });
      if (err instanceof UnsafeTreeError) await this.dropSnapshot();
      return err;
    };
    const options = { gitdir: this.gitdir, workTree: this.snapshot, index: this.indexFile, tree, signal };
    try {
      if (last && (await exists(this.indexFile))) {
        try {
          await checkoutTree(gitBin, { ...options, from: last.tree });
          return await listing;
        } catch (err) {
          if (signal.aborted || err instanceof UnsafeTreeError || (err instanceof GitCommandError && err.stderr.includes('invalid path')))
            throw err;
          // The index or the files do not match what it says (a snapshot written without git, or damaged): written whole below.
        }
      }
      await this.dropSnapshot();
      await checkoutTree(gitBin, options);
      return await listing;
    } catch (err) {
      throw await refused(err);
    }
  }

  /** The tree written by Cairn beside the last one, linking what is unchanged from it; then it takes the last one's place. */
  private async writeWithNode(
    tree: string,
    last: { tree: string; manifest: TreeManifest } | undefined,
    signal: AbortSignal,
  ): Promise<TreeManifest> {
    const next = `${this.snapshot}.next`;
    await Promise.all([rm(next, { recursive: true, force: true }), rm(this.indexFile, { force: true })]);
    const reuse = last && (await exists(this.snapshot)) ? { dir: this.snapshot, manifest: last.manifest } : undefined;
    const made = await writeTree({ gitdir: this.gitdir, tree, into: next, signal, reuse });
    await rm(this.snapshot, { recursive: true, force: true });
    await rename(next, this.snapshot);
    return made.manifest;
  }

  private async lastTree(): Promise<{ tree: string; manifest: TreeManifest } | undefined> {
    try {
      const parsed = JSON.parse(await readFile(this.manifestFile, 'utf8')) as { tree?: unknown; manifest?: unknown };
      if (typeof parsed.tree === 'string' && parsed.manifest && typeof parsed.manifest === 'object')
        return parsed as { tree: string; manifest: TreeManifest };
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

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

const held = new Map<string, Promise<void>>();

/** Resolves once no mirror is held: for tests and shutdown. */
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
  try {
    await mirror.touch();
    return await work(mirror);
  } finally {
    release();
    if (held.get(mirror.dir) === chained) held.delete(mirror.dir);
    await evict(mirrors).catch(() => undefined);
  }
}

/** Keeps the `keep` most recently used mirrors; one in use is never removed. */
async function evict(mirrors: SourceMirrors): Promise<void> {
  const names = await readdir(mirrors.dir).catch(() => [] as string[]);
  if (names.length <= mirrors.keep) return;
  const dated = await Promise.all(
    names.map(async (name) => ({
      dir: join(mirrors.dir, name),
      used: (await stat(join(mirrors.dir, name)).catch(() => undefined))?.mtimeMs ?? 0,
    })),
  );
  dated.sort((a, b) => b.used - a.used);
  for (const { dir } of dated.slice(mirrors.keep)) {
    if (!held.has(dir)) await rm(dir, { recursive: true, force: true });
  }
}
