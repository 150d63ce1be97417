/**
 * Working trees from a repository's objects: a commit's tree written as
 * files, by Cairn from isomorphic-git's objects (writeTree: each blob
 * inflated and written with its mode; what a reused tree has at the same
 * path with the same id linked from it) or by git's command line
 * (writeTreeWithGit, after the same checks of every path), with the
 * manifest of blob and tree ids at each path; and folders copied or
 * hard-linked whole (copyTree, linkTree) into a checkout. Kept trees and
 * repositories between deploys are mirrors.ts's.
 */
import fs from 'node:fs';
import { copyFile, link, mkdir, readdir, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { commandOutput } from '../../../core/run-command.js';
import { taskLimit } from '../../../core/task-limit.js';
import { checkoutTree, listTree } from '../clone/git-cli.js';

/** Files written, copied or linked at once. */
const FILES_IN_FLIGHT = 16;

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
export const isBlob = (id: string) => {
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
  // Loaded here, not at start-up: isomorphic-git and pako are some 3 MB of
  // the server's heap that only a deploy on a machine without git uses.
  const git = await import('isomorphic-git');

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
  (cp ??= commandOutput('cp', ['--version']).then(
    ({ stdout }) => stdout.toString().includes('GNU'),
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
    await commandOutput('cp', ['-a', '--no-target-directory', from, to], { signal });
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
    await commandOutput('cp', ['-al', '--no-target-directory', from, to], { signal });
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
