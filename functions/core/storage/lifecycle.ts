/**
 * The lifecycle expiry run: what each bucket's rules (data/lifecycle.ts)
 * say is due is done, in the same scheduled work as garbage collection
 * (the local service's timer, the deploy worker's minute tick in AWS), and
 * before it, so the blocks of what expired are collected in the same tick.
 *
 * Each call is bounded (`maxItems` versions and uploads read, `maxMs`): it
 * works through the buckets waited on longest first, each from where its
 * pass last stopped (a cursor kept per bucket), so a bucket of a million
 * objects takes many ticks and never holds one long. A bucket's pass reads
 * its versions in ListObjectVersions' order, then its multipart uploads;
 * when it ends, the next starts on a later UTC day (S3 counts in days), or
 * at once when the rules are put again.
 *
 * Everything is deleted through the stores' own operations, as a client's
 * request would be, so references, pins and collection stay right
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html#intro-lifecycle-rules-actions):
 *  - Expiration (Days, Date) of a current version: in a bucket never
 *    versioned, DeleteObject; versioned, a delete marker; suspended, the
 *    null delete marker (ObjectStore.delete in the bucket's mode);
 *  - NoncurrentVersionExpiration: the version is deleted (deleteVersion)
 *    once NoncurrentDays have passed since it became noncurrent (its
 *    successor's creation), keeping the NewerNoncurrentVersions newest;
 *  - ExpiredObjectDeleteMarker: a delete marker that is its key's only
 *    version is deleted; so is one under an Expiration with Days (or
 *    Date) once it is that old (lifecycle-rules.ts: loneMarkerDue);
 *  - AbortIncompleteMultipartUpload: the upload ends as
 *    AbortMultipartUpload ends it, its parts removed.
 * An object changed since it was read is left alone (the delete is
 * conditioned on the version read). One record that fails is logged and
 * passed over; a call that throws leaves the cursor where it was saved
 * last, and the next tick goes on from there.
 */
import type { LifecycleServices } from '../services.js';
import type { Bucket } from '../data/buckets.js';
import { LifecycleRuns, type LifecycleCursor, type LifecycleRule, type LifecycleRun } from '../data/lifecycle.js';
import type { ObjectRecord } from '../data/objects.js';
import { versionIdOf } from '../data/object-versions.js';
import type { StoredVersion } from '../data/object-versions-store.js';
import { NoSuchUploadError } from '../data/uploads.js';
import { abortDate, currentExpiry, DAY_MS, loneMarkerDue, noncurrentExpired, utcDay } from './lifecycle-rules.js';

export interface LifecycleOptions {
  /** The clock the rules are measured against (tests move it forward). */
  now?: Date;
  /** Versions and uploads read in one call, over every bucket. */
  maxItems?: number;
  /** Time one call may take (checked between pages and deletes). */
  maxMs?: number;
  /** Versions or uploads read per query. */
  pageSize?: number;
  /** A lifecycle day in milliseconds (CAIRN_LIFECYCLE_DAY_SECONDS; a day by default): also how often a bucket's pass starts again. */
  dayMs?: number;
}

export interface LifecycleResult {
  /** Buckets worked on. */
  buckets: number;
  /** Buckets whose pass ended in this call. */
  passesDone: number;
  /** Versions and uploads read. */
  examined: number;
  /** Current versions expired (deleted, or hidden behind a delete marker). */
  expired: number;
  /** Noncurrent versions deleted. */
  noncurrentDeleted: number;
  /** Lone delete markers removed. */
  markersRemoved: number;
  /** Multipart uploads aborted. */
  uploadsAborted: number;
  /** Records that failed (logged and passed over). */
  failed: number;
}

export const LIFECYCLE_DEFAULTS = { maxItems: 2000, maxMs: 10_000, pageSize: 200 };

/** The object changed between its reading and the delete: left alone. */
class Changed extends Error {}

export async function expireByLifecycle(services: LifecycleServices, options: LifecycleOptions = {}): Promise<LifecycleResult> {
  const now = (options.now ?? new Date()).getTime();
  const maxItems = options.maxItems ?? LIFECYCLE_DEFAULTS.maxItems;
  const maxMs = options.maxMs ?? LIFECYCLE_DEFAULTS.maxMs;
  const pageSize = options.pageSize ?? LIFECYCLE_DEFAULTS.pageSize;
  const dayMs = options.dayMs ?? DAY_MS;
  const started = Date.now();
  const result: LifecycleResult = {
    buckets: 0,
    passesDone: 0,
    examined: 0,
    expired: 0,
    noncurrentDeleted: 0,
    markersRemoved: 0,
    uploadsAborted: 0,
    failed: 0,
  };
  const runs = new LifecycleRuns(services.db);
  const today = utcDay(now, dayMs);
  const due: LifecycleRun[] = [];
  for await (const run of runs.all()) if (run.cursor || run.doneDay === undefined || run.doneDay < today) due.push(run);
  due.sort((a, b) => (a.touchedAt ?? 0) - (b.touchedAt ?? 0));
  const budget = {
    left: () => result.examined < maxItems && Date.now() - started < maxMs,
    room: () => Math.max(1, Math.min(pageSize, maxItems - result.examined)),
  };
  for (const run of due) {
    if (!budget.left()) break;
    const bucket = await services.buckets.get(run.bucket);
    const rules = bucket?.lifecycle?.rules.filter((r) => r.status === 'Enabled');
    if (!bucket?.lifecycle) {
      await runs.drop(run);
      continue;
    }
    result.buckets++;
    const pass = new BucketPass(services, bucket, rules ?? [], now, result, budget, dayMs);
    try {
      const cursor = await pass.run(run.cursor);
      if (cursor === undefined) result.passesDone++;
      await runs.save({ ...run, ...(cursor ? { cursor } : { cursor: undefined, doneDay: today }), touchedAt: Date.now() });
    } catch (err) {
      // Where it stopped is not known: it goes on from its last saved cursor, after the other buckets.
      result.failed++;
      services.logger.error('the lifecycle pass of a bucket failed; it goes on at a later tick', { bucket: run.bucket, err });
      await runs.save({ ...run, touchedAt: Date.now() }).catch((saveErr: unknown) => {
        services.logger.warn('could not move the bucket back in the lifecycle run', { bucket: run.bucket, err: saveErr });
      });
    }
  }
  if (result.examined || result.buckets) services.logger.info('lifecycle rules applied', { ...result });
  return result;
}

interface Budget {
  left(): boolean;
  room(): number;
}

/** One bucket's share of a call: from a cursor to the next (undefined: the pass is done). */
class BucketPass {
  constructor(
    private readonly services: LifecycleServices,
    private readonly bucket: Bucket,
    private readonly rules: LifecycleRule[],
    private readonly now: number,
    private readonly result: LifecycleResult,
    private readonly budget: Budget,
    private readonly dayMs: number,
  ) {}

  private get name() {
    return this.bucket.name;
  }

  async run(from: LifecycleCursor | undefined): Promise<LifecycleCursor | undefined> {
    let cursor = from;
    if (!cursor || cursor.phase === 'versions') {
      const needsVersions = this.rules.some((r) => r.expiration || r.noncurrentExpiration);
      cursor = needsVersions ? await this.versions(cursor) : undefined;
      if (cursor) return cursor;
      cursor = { phase: 'uploads', key: '', uploadId: '' };
    }
    if (!this.rules.some((r) => r.abortAfterDays !== undefined)) return undefined;
    return this.uploads(cursor);
  }

  /** Reads versions from the cursor while the budget lasts; the cursor to go on from, or undefined at the end. */
  private async versions(from: Extract<LifecycleCursor, { phase: 'versions' }> | undefined): Promise<LifecycleCursor | undefined> {
    let cursor = from;
    while (this.budget.left()) {
      const page = await this.services.objects.listVersions(this.name, {
        maxKeys: this.budget.room(),
        // A key is never empty: '' is the cursor of a pass that has not read anything yet.
        ...(cursor && cursor.key !== '' ? { after: cursor.key, afterVersion: cursor.versionId } : {}),
      });
      for (const entry of page.entries) {
        if (entry.kind !== 'version') continue;
        this.result.examined++;
        const { version, isLatest } = entry;
        const key = version.kind === 'object' ? version.record.key : version.marker.key;
        const versionId = version.kind === 'object' ? versionIdOf(version.record) : version.marker.versionId;
        const modified = version.kind === 'object' ? version.record.lastModified : version.marker.lastModified;
        const sameKey = cursor?.key === key && !isLatest;
        const noncurrent = sameKey ? cursor!.noncurrent : 0;
        try {
          if (isLatest) await this.current(version);
          else if (sameKey) await this.noncurrent(version, cursor!.newerModified, noncurrent);
        } catch (err) {
          this.result.failed++;
          this.services.logger.warn('a lifecycle rule could not be applied; passed over', { bucket: this.name, key, versionId, err });
        }
        cursor = { phase: 'versions', key, versionId, newerModified: modified, noncurrent: isLatest ? 0 : noncurrent + 1 };
      }
      if (!page.truncated) return undefined;
    }
    return cursor ?? { phase: 'versions', key: '', versionId: '', newerModified: new Date(this.now).toISOString(), noncurrent: 0 };
  }

  private async current(version: StoredVersion): Promise<void> {
    if (version.kind === 'marker') {
      const { key, versionId } = version.marker;
      if (!loneMarkerDue(this.rules, version.marker, this.now, this.dayMs)) return;
      // Alone only if no other version of the key follows it in the listing.
      const next = await this.services.objects.listVersions(this.name, { maxKeys: 1, after: key, afterVersion: versionId });
      const follower = next.entries[0];
      const followerKey =
        follower?.kind === 'version'
          ? follower.version.kind === 'object'
            ? follower.version.record.key
            : follower.version.marker.key
          : undefined;
      if (followerKey === key) return;
      await this.services.objects.deleteVersion(this.name, key, versionId);
      this.result.markersRemoved++;
      return;
    }
    const record = version.record;
    const expiry = currentExpiry(this.rules, record, this.dayMs);
    if (!expiry || this.now < expiry.at) return;
    try {
      await this.services.objects.delete(this.name, record.key, sameVersion(record), this.bucket.versioning);
      this.result.expired++;
    } catch (err) {
      if (!(err instanceof Changed)) throw err;
    }
  }

  private async noncurrent(version: StoredVersion, since: string, index: number): Promise<void> {
    const target =
      version.kind === 'object'
        ? { key: version.record.key, size: version.record.size, ...(version.record.tags ? { tags: version.record.tags } : {}) }
        : { key: version.marker.key };
    if (!noncurrentExpired(this.rules, target, since, index, this.now, this.dayMs)) return;
    const versionId = version.kind === 'object' ? versionIdOf(version.record) : version.marker.versionId;
    await this.services.objects.deleteVersion(this.name, target.key, versionId);
    this.result.noncurrentDeleted++;
  }

  private async uploads(from: Extract<LifecycleCursor, { phase: 'uploads' }>): Promise<LifecycleCursor | undefined> {
    let cursor = from;
    while (this.budget.left()) {
      const page = await this.services.uploads.list(this.name, {
        maxUploads: this.budget.room(),
        ...(cursor.key || cursor.uploadId ? { keyMarker: cursor.key, uploadIdMarker: cursor.uploadId } : {}),
      });
      for (const entry of page.entries) {
        if (entry.kind !== 'upload') continue;
        this.result.examined++;
        const { upload } = entry;
        cursor = { phase: 'uploads', key: upload.key, uploadId: upload.uploadId };
        const due = abortDate(this.rules, upload, this.dayMs);
        if (!due || this.now < due.at) continue;
        try {
          await this.services.uploads.end(upload);
          this.result.uploadsAborted++;
        } catch (err) {
          if (err instanceof NoSuchUploadError) continue;
          this.result.failed++;
          this.services.logger.warn('an incomplete upload could not be aborted; passed over', {
            bucket: this.name,
            key: upload.key,
            uploadId: upload.uploadId,
            err,
          });
          continue;
        }
        // As AbortMultipartUpload: the upload has ended; a cleanup that fails is finished by garbage collection.
        await this.services.uploads.cleanup(upload.uploadId).catch((err: unknown) => {
          this.services.logger.warn('multipart cleanup failed; garbage collection will finish it', { err, uploadId: upload.uploadId });
        });
        await this.services.stagedParts?.removeAll(upload.uploadId).catch((err: unknown) => {
          this.services.logger.warn('removing staged parts failed; the staging lifecycle rule will', { err, uploadId: upload.uploadId });
        });
      }
      if (!page.truncated) return undefined;
    }
    return cursor;
  }
}

/** The delete's condition: the current version is still the one the run read. */
function sameVersion(read: ObjectRecord) {
  return (current: ObjectRecord | undefined) => {
    if (
      !current ||
      versionIdOf(current) !== versionIdOf(read) ||
      current.etag !== read.etag ||
      current.lastModified !== read.lastModified ||
      current.cid !== read.cid
    ) {
      throw new Changed();
    }
  };
}
