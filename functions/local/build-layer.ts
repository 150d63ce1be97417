/**
 * What a build writes, kept apart from the files of its checkout.
 *
 * A checkout's files are hard links to the kept snapshot of its repository
 * (checkout.ts): a build writing into one would change the snapshot, and
 * with it every later deploy of the branch. So a build on this machine sees
 * its checkout through an overlay (Linux overlayfs): the checkout is the
 * read-only lower layer, and everything the build writes (a new file, a
 * changed one, copied up whole on its first write; a deletion, marked by a
 * whiteout) lands in an upper layer of its own. When the build has ended,
 * the upper layer is applied to the checkout: new and changed files are
 * moved in (a rename replaces the link, never writes through it), deleted
 * ones unlinked. Files the build did not touch stay the snapshot's, inode
 * and all, which is what lets the import take them as imported before
 * (known-files.ts).
 *
 * bubblewrap 0.8 (Debian 12) has no overlay options, so the overlay is
 * mounted by the build's own user namespace: `unshare --user
 * --map-root-user --mount` runs `mount -t overlay` (allowed to an
 * unprivileged user in a user namespace since Linux 5.11, with
 * `userxattr`) and then bubblewrap, whose sandbox binds the merged view at
 * the checkout's path. What overlayfs leaves in the upper layer is read the
 * way its documentation describes it: a whiteout is a character device
 * 0/0, and a directory that replaced the lower one (removed and made again)
 * is "opaque", marked by the `user.overlay.opaque` attribute, which GNU tar
 * reads (Node cannot read extended attributes).
 *
 * Where any of that is missing (no unshare, a kernel or a security module
 * that refuses the mount, no GNU tar, a path overlayfs options cannot
 * carry), the bubblewrap runner copies the shared files first
 * (separateFiles) and the build writes the checkout itself, as before.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { chmod, copyFile, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { runCommand } from '../core/run-command.js';
import { taskLimit } from '../core/task-limit.js';

/** A build's upper layer and overlayfs's work directory, beside the checkout (the same file system: applying it is renames). */
export interface BuildLayer {
  dir: string;
  upper: string;
  work: string;
}

/** Characters overlayfs's mount options cannot carry in a path (they separate options and layers). */
const UNSAFE_IN_OPTIONS = /[,:\\\s"']/;

export async function makeLayer(checkout: string): Promise<BuildLayer> {
  const dir = await mkdtemp(join(dirname(checkout), `${basename(checkout)}.layer-`));
  const layer = { dir, upper: join(dir, 'upper'), work: join(dir, 'work') };
  await Promise.all([mkdir(layer.upper), mkdir(layer.work)]);
  return layer;
}

/**
 * Removes a layer: overlayfs's own work directory, which it leaves with no
 * permissions, and whatever folders the build left unreadable included.
 */
export async function removeLayer(layer: BuildLayer): Promise<void> {
  await removeTree(layer.dir);
}

/** Removes a tree a build wrote, folders it left unreadable or unwritable included (a layer, a workspace left by a stopped deploy). */
export async function removeTree(dir: string): Promise<void> {
  await openUp(dir);
  await rm(dir, { recursive: true, force: true });
}

/** Makes every folder under `dir` (its own included) readable and writable by its owner, so that it can be walked and emptied. */
async function openUp(dir: string): Promise<void> {
  const st = await lstat(dir).catch(() => undefined);
  if (!st?.isDirectory()) return;
  if ((st.mode & 0o700) !== 0o700) await chmod(dir, (st.mode & 0o7777) | 0o700).catch(() => undefined);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => openUp(join(dir, e.name))));
}

/**
 * `argv` run with the overlay of `layer` over `checkout` mounted at the
 * checkout's own path, in a new user and mount namespace (the mount is
 * gone when its last process is), and a network namespace of its own too
 * with `net` (for the build's outside network, local/outside-network.ts).
 * Undefined when a path cannot go into overlayfs's options.
 */
export function overlayArgv(layer: BuildLayer, checkout: string, argv: string[], tools: OverlayTools, net = false): string[] | undefined {
  if ([checkout, layer.upper, layer.work].some((p) => UNSAFE_IN_OPTIONS.test(p))) return undefined;
  const options = `lowerdir=${checkout},upperdir=${layer.upper},workdir=${layer.work},userxattr`;
  return [
    tools.unshare,
    '--user',
    '--map-root-user',
    ...(net ? ['--net'] : []),
    '--mount',
    '--propagation',
    'private',
    '--',
    '/bin/sh',
    '-c',
    '"$1" -t overlay cairn-build -o "$2" "$3" && shift 3 && exec "$@"',
    'cairn-overlay',
    tools.mount,
    options,
    checkout,
    ...argv,
  ];
}

/** bubblewrap's options that run its sandbox as this process's user: inside unshare's user namespace bubblewrap is root. */
export function asServiceUser(): string[] {
  return ['--uid', String(process.getuid?.() ?? 0), '--gid', String(process.getgid?.() ?? 0)];
}

/** util-linux's programs that make the namespace and mount the overlay, by absolute path (a build's PATH may be anything). */
export interface OverlayTools {
  unshare: string;
  mount: string;
}

/**
 * Applies the upper layer to the checkout (see the top of this file); the
 * overlay must no longer be mounted (its namespace's processes have ended).
 */
export async function applyLayer(layer: BuildLayer, checkout: string): Promise<void> {
  // Folders the build left without its owner's rights (chmod 500, 000) are opened for the move and closed again after it.
  const restricted = await openRestricted(layer.upper);
  // Which of the directories the build changed inside (rather than made anew) it emptied and made again first.
  const both: string[] = [];
  const findBoth = async (rel: string): Promise<void> => {
    for (const e of await readdir(join(layer.upper, rel), { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const path = rel ? `${rel}/${e.name}` : e.name;
      if ((await lstat(join(checkout, path)).catch(() => undefined))?.isDirectory()) {
        both.push(path);
        await findBoth(path);
      }
    }
  };
  await findBoth('');
  const opaque = await opaqueDirs(layer.upper, both);

  const apply = async (rel: string): Promise<void> => {
    const upper = join(layer.upper, rel);
    for (const e of await readdir(upper, { withFileTypes: true })) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      const from = join(upper, e.name);
      const to = join(checkout, path);
      if (e.isCharacterDevice() && (await lstat(from)).rdev === 0) {
        await rm(to, { recursive: true, force: true }); // a whiteout: deleted by the build
        continue;
      }
      const there = await lstat(to).catch(() => undefined);
      if (e.isDirectory() && there?.isDirectory() && !opaque.has(path)) {
        await apply(path);
        await chmod(to, (await lstat(from)).mode & 0o7777);
        continue;
      }
      // New, replaced, or a directory that hides the old one: moved in whole (a rename replaces a file, not a folder, nor a file by a folder).
      if (there && (there.isDirectory() || e.isDirectory())) await rm(to, { recursive: true, force: true });
      await rename(from, to);
    }
  };
  await apply('');
  for (const [path, mode] of [...restricted].reverse()) await chmod(join(checkout, path), mode);
}

/**
 * Folders under `dir` whose owner lacks read, write or search on them,
 * parents first, with their modes, each given those rights before find
 * looks inside it (GNU find: one process however many folders a build made).
 */
async function openRestricted(dir: string): Promise<Array<[string, number]>> {
  const { code, stdout, stderr } = await collect(
    'find',
    ['.', '-mindepth', '1', '-type', 'd', '!', '-perm', '-u=rwx', '-printf', '%m %P\\0', '-exec', 'chmod', 'u+rwx', '{}', ';'],
    '',
    dir,
  );
  if (code !== 0) throw new Error(`find could not list the build layer (${stderr.trim() || `exit ${code}`})`);
  return stdout
    .toString('utf8')
    .split('\0')
    .filter(Boolean)
    .map((line) => {
      const space = line.indexOf(' ');
      return [line.slice(space + 1), Number.parseInt(line.slice(0, space), 8)] as [string, number];
    });
}

/**
 * The directories among `dirs` (paths relative to `upper`) that overlayfs
 * marked opaque, read with GNU tar (`--xattrs`, POSIX format: each marked
 * directory's header is preceded by an extended header holding
 * `SCHILY.xattr.user.overlay.opaque=y`).
 */
export async function opaqueDirs(upper: string, dirs: string[]): Promise<Set<string>> {
  const opaque = new Set<string>();
  if (dirs.length === 0) return opaque;
  const args = [
    '--format=posix',
    '--xattrs',
    '--xattrs-include=user.overlay.opaque',
    '--xattrs-include=trusted.overlay.opaque',
    '--no-recursion',
    '-C',
    upper,
    '--null',
    '--verbatim-files-from',
    '-T',
    '-',
    '-cf',
    '-',
  ];
  const { code, stdout, stderr } = await collect('tar', args, dirs.map((d) => `./${d}\0`).join(''));
  if (code !== 0) throw new Error(`tar could not read the build layer's attributes (${stderr.trim() || `exit ${code}`})`);
  let extended: Record<string, string> = {};
  for (let at = 0; at + 512 <= stdout.length;) {
    const header = stdout.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const field = (from: number, length: number) => {
      const bytes = header.subarray(from, from + length);
      const end = bytes.indexOf(0);
      return bytes.subarray(0, end < 0 ? length : end).toString('utf8');
    };
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = String.fromCharCode(header[156]!);
    const data = stdout.subarray(at + 512, at + 512 + size);
    at += 512 + Math.ceil(size / 512) * 512;
    if (type === 'x') {
      extended = paxRecords(data);
      continue;
    }
    if (type === 'g') continue;
    const prefix = field(345, 155);
    const name = extended.path ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    if (extended['SCHILY.xattr.user.overlay.opaque'] === 'y' || extended['SCHILY.xattr.trusted.overlay.opaque'] === 'y') {
      opaque.add(name.replace(/^\.\//, '').replace(/\/$/, ''));
    }
    extended = {};
  }
  return opaque;
}

/** A pax extended header's records: `<length> <key>=<value>\n`, the length counting the whole record. */
function paxRecords(data: Buffer): Record<string, string> {
  const records: Record<string, string> = {};
  for (let at = 0; at < data.length;) {
    const space = data.indexOf(0x20, at);
    if (space < 0) break;
    const length = Number.parseInt(data.subarray(at, space).toString('latin1'), 10);
    if (!(length > 0)) break;
    const record = data.subarray(space + 1, at + length - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) records[record.slice(0, eq)] = record.slice(eq + 1);
    at += length;
  }
  return records;
}

async function collect(
  file: string,
  args: string[],
  input: string,
  cwd?: string,
): Promise<{ code: number | null; stdout: Buffer; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };
  return runCommand(file, args, { cwd, env, input }).done.then(
    ({ code, stdout, stderr }) => ({ code, stdout, stderr: stderr.toString() }),
    (err: Error) => ({ code: null, stdout: Buffer.alloc(0), stderr: err.message }),
  );
}

/**
 * Whether builds near `dir` can run through an overlay with this `bwrap`:
 * undefined when they can, else why not. Tries the whole way once (the
 * namespace, the mount, bubblewrap inside it, a file changed, one deleted,
 * a directory made again, the layer read back and applied) on scratch
 * files beside `dir`, so that a machine where any step fails builds with
 * copies instead of failing builds.
 */
export async function overlayUnavailable(dir: string, bwrap: string, tools: OverlayTools): Promise<string | undefined> {
  let scratch: string | undefined;
  let layer: BuildLayer | undefined;
  try {
    scratch = await mkdtemp(join(dir, '.cairn-overlay-check-'));
    const lower = join(scratch, 'lower');
    await mkdir(join(lower, 'again'), { recursive: true });
    await mkdir(join(lower, 'kept'));
    await Promise.all([
      writeFile(join(lower, 'gone'), 'gone'),
      writeFile(join(lower, 'again', 'old'), 'old'),
      writeFile(join(lower, 'kept', 'file'), 'before'),
    ]);
    layer = await makeLayer(lower);
    const sandbox = [
      bwrap,
      '--ro-bind',
      '/',
      '/',
      '--bind',
      lower,
      lower,
      '--unshare-all',
      ...asServiceUser(),
      '--die-with-parent',
      '--chdir',
      lower,
      '--',
      '/bin/sh',
      '-c',
      'rm gone && rm -r again && mkdir again && echo new > again/new && echo after > kept/file',
    ];
    const argv = overlayArgv(layer, lower, sandbox, tools);
    if (!argv) return `its path holds a character overlayfs options cannot carry (${dir})`;
    const { code, stderr } = await collect(argv[0]!, argv.slice(1), '');
    if (code !== 0) return (stderr.trim().split('\n').at(-1) ?? '') || `exit ${code}`;
    if ((await readFile(join(lower, 'kept', 'file'), 'utf8')) !== 'before') return 'a write reached the lower layer';
    await applyLayer(layer, lower);
    const again = (await readdir(join(lower, 'again'))).sort().join(',');
    const kept = await readFile(join(lower, 'kept', 'file'), 'utf8');
    const gone = await lstat(join(lower, 'gone')).then(
      () => true,
      () => false,
    );
    if (again !== 'new' || kept !== 'after\n' || gone)
      return `the build's layer did not read back as written (${again}; ${kept.trim()}; ${gone ? 'a deleted file remained' : ''})`;
    return undefined;
  } catch (err) {
    return (err as Error).message;
  } finally {
    if (layer) await removeLayer(layer).catch(() => undefined);
    if (scratch) await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * Gives every regular file of `dir` that shares its inode with another
 * name (a hard link to the kept snapshot) an inode of its own, copying its
 * bytes and mode: for a build that writes the checkout itself. Returns how
 * many were copied.
 */
export async function separateFiles(dir: string, signal: AbortSignal): Promise<number> {
  const limit = taskLimit(16, signal);
  let copied = 0;
  const walk = async (path: string): Promise<void> => {
    signal.throwIfAborted();
    const entries = await readdir(path, { withFileTypes: true });
    await Promise.all(
      entries.map(async (e) => {
        const at = join(path, e.name);
        if (e.isDirectory()) return walk(at);
        if (!e.isFile()) return;
        await limit(async () => {
          if ((await lstat(at)).nlink < 2) return;
          const copy = join(path, `.cairn-copy-${randomBytes(6).toString('hex')}`);
          await copyFile(at, copy, fsConstants.COPYFILE_EXCL);
          await rename(copy, at);
          copied++;
        });
      }),
    );
  };
  await walk(dir);
  return copied;
}
