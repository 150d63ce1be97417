/**
 * A build on this machine against a checkout whose files are hard links
 * to a kept snapshot (steps/checkout/), with the real bubblewrap runner:
 * through the overlay (steps/build-layer.ts), through copies where there is
 * none (overlay off, and sandbox=none). Whatever the build does, the
 * snapshot keeps its bytes and modes, the checkout ends exactly as the same
 * build leaves a plain copy, and the files the build did not touch are
 * still the snapshot's (what the import takes as imported before).
 */
import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { ROOT } from '../support/child-service.js';
import { BwrapRunner, type BwrapRunnerOptions } from '../../functions/local/bwrap-runner.js';
import type { BuildResult } from '../../functions/core/ports/build-runner.js';
import { copyTree, linkTree } from '../../functions/deploy-worker/steps/checkout/trees.js';
import { KnownFiles } from '../../functions/deploy-worker/steps/checkout/known-files.js';
import { PackedBlockstore } from '../../functions/core/ipfs/local-blockstore.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';

let work: string;
beforeAll(async () => {
  // Outside /tmp, which the sandbox hides (a checkout under it is shown again; its layer beside it is not).
  await mkdir(join(ROOT, '.tmp'), { recursive: true });
  work = await realpath(await mkdtemp(join(ROOT, '.tmp', 'cairn-layer-')));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const never = new AbortController().signal;
let runs = 0;

/** A snapshot: files of several kinds, nested folders, an executable, a symlink. */
async function snapshot(): Promise<string> {
  const dir = join(work, `snapshot-${++runs}`);
  const files: Record<string, string | Buffer> = {
    'index.html': '<h1>home</h1>',
    'same-size.txt': 'abcd',
    'append.txt': 'start',
    'chmod.sh': 'echo hi',
    'gone.txt': 'gone',
    'public/a.html': 'a',
    'public/b.html': 'b',
    'public/deep/c.html': 'c',
    'dist/old.js': 'old',
    'dist/keep/old2.js': 'old2',
    'filething/inner.txt': 'inner',
    dirthing: 'a file that becomes a folder',
    'moved/m.txt': 'moved',
    'big.bin': randomBytes(300 * 1024),
  };
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  await symlink('public/a.html', join(dir, 'link'));
  return dir;
}

/** Everything a build can do to a tree, each once (mv of a folder of the repository included: rename(2) refuses it through an overlay, mv copies). */
const EDITS = [
  'printf wxyz > same-size.txt', // in place, same size
  'echo more >> append.txt', // in place, appended
  'chmod +x chmod.sh',
  'rm gone.txt',
  'rm -r dist && mkdir -p dist && echo new > dist/new.js', // emptied and made again: opaque
  'rm public/deep/c.html && echo d > public/deep/d.html', // one file deleted and one added in a folder kept
  'rm -r filething && echo now-a-file > filething',
  'rm dirthing && mkdir dirthing && echo x > dirthing/x',
  'mkdir -p out/nested && echo o > out/nested/o.txt', // a new folder
  'ln -s ../index.html out/home',
  'mv moved moved2',
  'rm link && ln -s public/b.html link',
].join(' && ');

/** A tree as text: each path with its kind, mode and bytes (or target). */
async function treeOf(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(dir, { recursive: true })).sort()) {
    const path = join(dir, name);
    const st = await lstat(path);
    if (st.isSymbolicLink()) out.push(`${name} -> ${await readlink(path)}`);
    else if (st.isDirectory()) out.push(`${name}/ ${(st.mode & 0o777).toString(8)}`);
    else out.push(`${name} ${(st.mode & 0o777).toString(8)} ${(await readFile(path)).toString('base64').slice(0, 60)} ${st.size}`);
  }
  return out;
}

async function run(
  runner: BwrapRunner,
  checkout: string,
  command: string,
  signal = never,
): Promise<{ result: BuildResult; output: string }> {
  let output = '';
  const result = await runner.run({
    deployId: 'd',
    checkout,
    directory: '',
    command,
    env: {},
    timeoutMs: 30_000,
    signal,
    onOutput: (t) => (output += t),
  });
  return { result, output };
}

/** What the same build leaves in a plain copy of the snapshot, with no sandbox: the expected checkout. */
async function expected(snap: string): Promise<string[]> {
  const plain = join(work, `plain-${++runs}`);
  await copyTree(snap, plain, never);
  const { result } = await run(new BwrapRunner({ sandbox: 'none', hide: [] }), plain, EDITS);
  expect(result.outcome).toBe('succeeded');
  return treeOf(plain);
}

const cases: Array<[string, BwrapRunnerOptions]> = [
  ['bubblewrap, through an overlay', { sandbox: 'bwrap', hide: [] }],
  ['bubblewrap, overlay off (copies)', { sandbox: 'bwrap', hide: [], overlay: false }],
  ['sandbox=none (copies)', { sandbox: 'none', hide: [] }],
];

describe.each(cases)('%s', (_, options) => {
  const runner = new BwrapRunner(options);

  test('the build changes its checkout as it would a copy, and the snapshot not at all', async () => {
    const snap = await snapshot();
    const before = await treeOf(snap);
    const checkout = join(work, `checkout-${++runs}`);
    await linkTree(snap, checkout, never);
    const { result, output } = await run(runner, checkout, EDITS);
    expect(output).toBe('');
    expect(result.outcome).toBe('succeeded');
    expect(await treeOf(checkout)).toEqual(await expected(snap));
    expect(await treeOf(snap)).toEqual(before);
    // Nothing of the build's layer is left beside the checkout.
    expect((await readdir(work)).filter((n) => n.includes('.layer-'))).toEqual([]);
  });

  test('a failed build keeps what it wrote; the snapshot is untouched', async () => {
    const snap = await snapshot();
    const before = await treeOf(snap);
    const checkout = join(work, `checkout-${++runs}`);
    await linkTree(snap, checkout, never);
    const { result } = await run(runner, checkout, 'echo broken > index.html && rm public/a.html && exit 3');
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 3 });
    expect(await readFile(join(checkout, 'index.html'), 'utf8')).toBe('broken\n');
    expect(await readdir(join(checkout, 'public'))).toEqual(['b.html', 'deep']);
    expect(await treeOf(snap)).toEqual(before);
  });

  test('a cancelled build leaves the snapshot untouched and no layer behind', async () => {
    const snap = await snapshot();
    const before = await treeOf(snap);
    const checkout = join(work, `checkout-${++runs}`);
    await linkTree(snap, checkout, never);
    const stop = new AbortController();
    let ready!: () => void;
    const written = new Promise<void>((r) => (ready = r));
    // Cancelled once the build has written (its output says so).
    const started = runner.run({
      deployId: 'd',
      checkout,
      directory: '',
      command: 'echo changed >> append.txt; echo ready; sleep 30',
      env: {},
      timeoutMs: 30_000,
      signal: stop.signal,
      onOutput: (t) => t.includes('ready') && ready(),
    });
    await written;
    stop.abort();
    expect((await started).outcome).toBe('cancelled');
    expect(await treeOf(snap)).toEqual(before);
    expect((await readdir(work)).filter((n) => n.includes('.layer-'))).toEqual([]);
  });
});

describe('through the overlay', () => {
  const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [] });

  test('this machine mounts one, and the build sees its checkout as an overlay, its layer nowhere', async () => {
    const snap = await snapshot();
    const checkout = join(work, `checkout-${++runs}`);
    await linkTree(snap, checkout, never);
    const { result, output } = await run(
      runner,
      checkout,
      `awk '$5 == "${checkout}" { print $0 }' /proc/self/mountinfo; ls -d ../*.layer-* 2>/dev/null | wc -l`,
    );
    expect(await runner.overlayUnavailable()).toBeUndefined();
    expect(result.outcome).toBe('succeeded');
    const lines = output.trim().split('\n');
    // bubblewrap's bind of the overlay (the mount beneath it is in a root the sandbox does not show).
    expect(lines.slice(0, -1)).toEqual([expect.stringMatching(/ - overlay cairn-build .*lowerdir=/)]);
    expect(lines.at(-1)).toBe('0'); // its layer's folder is not there at all (the sandbox's root holds nothing but its checkout)
  });

  test("files the build did not touch are still the snapshot's, and the import takes them as imported before", async () => {
    const snap = await snapshot();
    const checkout = join(work, `checkout-${++runs}`);
    await linkTree(snap, checkout, never);
    const blockstore = new PackedBlockstore({ smallBlocks: join(work, `small-${runs}`), packs: join(work, `packs-${runs}`) });
    await blockstore.open();
    try {
      // As a deploy does: a manifest of the tree (made-up blob ids), the files stamped before the build, the memory of an earlier import.
      const manifest: Record<string, string> = {};
      for (const name of await readdir(snap, { recursive: true })) {
        if ((await lstat(join(snap, name))).isFile())
          manifest[name] = `100644 ${Buffer.from(name).toString('hex').padEnd(40, '0').slice(0, 40)}`;
      }
      const memory = join(work, `dags-${runs}.json`);
      const earlier = await KnownFiles.stamp(snap, manifest, memory);
      await importDirectory(blockstore, snap, { known: earlier.forImport(blockstore) });
      await earlier.save();

      const known = await KnownFiles.stamp(checkout, manifest, memory);
      const { result } = await run(runner, checkout, 'echo more >> append.txt && chmod +x chmod.sh && printf wxyz > same-size.txt');
      expect(result.outcome).toBe('succeeded');
      const got = await importDirectory(blockstore, checkout, { known: known.forImport(blockstore) });
      const files = Object.keys(manifest).length;
      expect(known.hits).toBe(files - 3);
      expect(got.cid.toString()).toBe((await importDirectory(blockstore, checkout)).cid.toString());
      for (const name of ['index.html', 'big.bin', 'public/deep/c.html']) {
        expect((await lstat(join(checkout, name))).ino).toBe((await lstat(join(snap, name))).ino);
      }
      expect((await lstat(join(checkout, 'append.txt'))).ino).not.toBe((await lstat(join(snap, 'append.txt'))).ino);
    } finally {
      await blockstore.close();
    }
  });

  test('with the workspace named, the runner finds out when a build is coming, before it, and leaves nothing there', async () => {
    const workspace = join(work, `workspace-${++runs}`);
    const early = new BwrapRunner({ sandbox: 'bwrap', hide: [], workspace });
    // Made, it checks nothing yet: a service that never builds never runs the checks.
    await early.settled();
    expect(existsSync(workspace)).toBe(false);
    early.prepare();
    early.prepare(); // once, however often told
    expect(await early.overlayUnavailable()).toBeUndefined();
    expect(await readdir(workspace)).toEqual([]);
  });

  test('where overlayfs options cannot carry the path, builds see copies, with the same result', async () => {
    const odd = join(work, `odd,path-${++runs}`);
    await mkdir(odd);
    const snap = await snapshot();
    const before = await treeOf(snap);
    const checkout = join(odd, 'checkout');
    await linkTree(snap, checkout, never);
    const fallback = new BwrapRunner({ sandbox: 'bwrap', hide: [] });
    const { result } = await run(fallback, checkout, EDITS);
    expect(result.outcome).toBe('succeeded');
    expect(await fallback.overlayUnavailable()).toMatch(/overlayfs options cannot carry/);
    expect(await treeOf(checkout)).toEqual(await expected(snap));
    expect(await treeOf(snap)).toEqual(before);
  });

  test('a build that makes its files unreadable to others still has them applied', async () => {
    const snap = await snapshot();
    const checkout = join(work, `checkout-${++runs}`);
    await linkTree(snap, checkout, never);
    const { result } = await run(
      runner,
      checkout,
      'mkdir -p private && echo s > private/secret && chmod 700 private && chmod 600 private/secret',
    );
    expect(result.outcome).toBe('succeeded');
    expect(await readFile(join(checkout, 'private', 'secret'), 'utf8')).toBe('s\n');
    await chmod(join(checkout, 'private'), 0o755);
  });
});
