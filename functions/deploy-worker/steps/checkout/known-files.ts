/**
 * Files a deploy need not read again. A checkout's files come from git
 * blobs; the mirror (mirrors.ts) remembers the UnixFS DAG each blob was
 * imported as. Right after the checkout is made (its files hard links to
 * the mirror's snapshot), before the build runs, every file of the tree is
 * stamped (inode, size, modification and change times, to the nanosecond).
 * At import, a file whose stamp is unchanged still holds its blob's bytes
 * (the change time moves with any write, rename or chmod, and nothing can
 * set it back), so its DAG is taken as imported before, if its root block
 * is still stored. Everything else is read and imported as usual, and what
 * is learnt is kept for the next deploy of the branch.
 *
 * A build that writes a file replaces it (through an overlay, or a copy
 * made first: build-layer.ts), so its stamp no longer matches. Linking or
 * unlinking a snapshot file moves its change time too: another deploy of
 * the same repository making or removing its checkout meanwhile makes this
 * one read those files again, which costs time, never correctness.
 *
 * A DAG whose root block is stored but whose other blocks were collected
 * (a collection cut short) is caught when the deploy pins its root, which
 * walks every block: the pipeline then imports again without this.
 */
import { lstat, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Blockstore } from 'interface-blockstore';
import { CID } from 'multiformats/cid';
import type { TreeManifest } from './trees.js';

export interface FileDag {
  cid: CID;
  /** The DAG's bytes (its link's Tsize). */
  tsize: number;
  /** The file's bytes. */
  size: number;
}

/** Git modes whose blobs are written as regular files. */
const FILE_MODES = new Set(['100644', '100755', '100664']);

type Stamp = string;

async function stampOf(path: string): Promise<Stamp | undefined> {
  const st = await lstat(path, { bigint: true }).catch(() => undefined);
  if (!st?.isFile()) return undefined;
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

type Remembered = [cid: string, tsize: number, size: number];

export class KnownFiles {
  /** Files taken as imported before by this deploy. */
  hits = 0;

  private constructor(
    /** Absolute path in the checkout → the blob it was written from, and its stamp then. */
    private readonly pristine: Map<string, { oid: string; stamp: Stamp }>,
    /** Blob id → the DAG it was imported as. */
    private readonly dags: Map<string, Remembered>,
    private readonly file: string,
  ) {}

  /**
   * Stamps the files of `checkout` (a real path) that git wrote as
   * `manifest` says, and reads what `file` remembers of their blobs.
   */
  static async stamp(checkout: string, manifest: TreeManifest, file: string): Promise<KnownFiles> {
    const pristine = new Map<string, { oid: string; stamp: Stamp }>();
    await Promise.all(
      Object.entries(manifest).map(async ([path, id]) => {
        const [mode, oid] = id.split(' ');
        if (!mode || !oid || !FILE_MODES.has(mode)) return;
        const abs = join(checkout, path);
        const stamp = await stampOf(abs);
        if (stamp) pristine.set(abs, { oid, stamp });
      }),
    );
    const dags = new Map<string, Remembered>();
    try {
      const saved = JSON.parse(await readFile(file, 'utf8')) as Record<string, Remembered>;
      for (const [oid, entry] of Object.entries(saved)) {
        if (Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'number' && typeof entry[2] === 'number')
          dags.set(oid, entry);
      }
    } catch {
      // nothing remembered yet (or a torn file): everything is read
    }
    return new KnownFiles(pristine, dags, file);
  }

  /** For importDirectory: the known DAG of the file at `path`, bound to the blockstore it must be in. */
  forImport(blockstore: Blockstore) {
    return {
      lookup: async (path: string): Promise<FileDag | undefined> => {
        const was = this.pristine.get(path);
        const dag = was && this.dags.get(was.oid);
        if (!was || !dag) return undefined;
        if ((await stampOf(path)) !== was.stamp) return undefined;
        let cid: CID;
        try {
          cid = CID.parse(dag[0]);
        } catch {
          return undefined;
        }
        if (!(await blockstore.has(cid))) return undefined;
        this.hits++;
        return { cid, tsize: dag[1], size: dag[2] };
      },
      learn: async (path: string, made: FileDag): Promise<void> => {
        const was = this.pristine.get(path);
        // Read while still as git wrote it: the bytes imported were the blob's.
        if (was && (await stampOf(path)) === was.stamp) this.dags.set(was.oid, [made.cid.toString(), made.tsize, made.size]);
      },
    };
  }

  /** Keeps what is known of this checkout's blobs (and only those) for the next deploy. */
  async save(): Promise<void> {
    const blobs = new Set([...this.pristine.values()].map((p) => p.oid));
    const kept: Record<string, Remembered> = {};
    for (const [oid, dag] of this.dags) if (blobs.has(oid)) kept[oid] = dag;
    const next = `${this.file}.${process.pid}.${Date.now()}.next`;
    await writeFile(next, JSON.stringify(kept));
    await rename(next, this.file);
  }

  /** Forgets everything remembered (its blocks were not all there). */
  async forget(): Promise<void> {
    this.dags.clear();
    this.hits = 0;
    await writeFile(this.file, '{}').catch(() => undefined);
  }
}
