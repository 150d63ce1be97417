/**
 * The per-repository mirror that lets a deploy reuse what the last one
 * fetched and wrote.
 *
 * A mirror (one per repository URL and branch, under the deploy worker's
 * sources directory; one per site too for a repository cloned with a
 * site's access token, see clone/index.ts) keeps the git objects between
 * deploys, so a deploy fetches only what is new, and a snapshot of the
 * last tree written, with a manifest of the blob and tree ids at each path.
 *
 * A deploy's tree is written once, into the snapshot (trees.ts): with
 * git's command line where there is one (`read-tree -u`, which rewrites
 * only what changed since the snapshot's tree, from the index kept beside
 * it), else by Cairn from isomorphic-git's objects (unchanged files and
 * folders linked from the old snapshot). The checkout is then the
 * snapshot's files hard-linked into a new directory (and the repository as
 * `.git`, the same way): nothing is copied, and the same tree deployed
 * again costs a directory of links.
 *
 * A file of the snapshot is never written in place once written: git and
 * Cairn replace a changed file by a new one. The checkout's files being the
 * snapshot's, whoever lets a command write the checkout must keep it from
 * writing those files (BuildRunner's contract): the bubblewrap runner shows
 * the checkout to the build through an overlay, so that what the build
 * writes lands in a layer of its own, and copies the files first where it
 * cannot; a build elsewhere (CodeBuild) gets the checkout uploaded.
 */
import { mkdir, readdir, readFile, realpath, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { KnownFiles } from './known-files.js';
import { held } from './mirror-holds.js';
import { checkoutTree, GitCommandError } from '../clone/git-cli.js';
import { isBlob, linkTree, treeManifest, UnsafeTreeError, writeTree, type TreeManifest } from './trees.js';

/** A mirror whose git objects came in more packs than this is fetched anew (each fetch adds a pack). */
const MAX_PACKS = 24;

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

export { mirrorsIdle } from './mirror-holds.js';

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
