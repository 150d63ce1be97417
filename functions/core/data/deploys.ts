/**
 * Deploys, in the deploys table, under their site with time-sortable ids:
 *   SITE#<siteId> / DEPLOY#<id>   gsi1: QUEUE / <id> while waiting for a worker, RUNNING / <id> while one runs it
 * so a site's deploys are one partition, newest last: a page of them, newest
 * first, is one reverse Query from a key, however deep the page.
 *
 * A deploy is one record the pipeline moves along (functions/deploy-worker):
 * `phase` says where it is (the API reports IN_PROGRESS for all of them),
 * and each move is a conditional update, so a deploy is claimed by one
 * worker, finishes once, and a cancel between two steps is never lost. What
 * the deploy builds (its source and build settings) is copied from the site
 * when it is triggered: a change to the site affects later deploys only.
 * A DEPLOYED deploy references its root CID (an item in the objects table,
 * written in the same transaction), so collection keeps its blocks until
 * the deploy is deleted with its site. Its preview image, taken after it
 * ended, is referenced the same way under a holder of its own.
 */
import { BatchWriteCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { newSortableId } from '../ids.js';
import type { Database } from './dynamo.js';
import { candidateItem, cidReference } from './object-references.js';
import { queryAll, queryPage, type Page } from './pages.js';
import { stripUndefined, withoutKeys, writtenIf } from './tables.js';
import { untilNoneLeft, type RetryPolicy } from '../retry.js';
import { RECENT_READS_MS, RecentReads } from './recent-reads.js';
import type { SiteWrites } from './sites.js';
import { CID } from 'multiformats/cid';

/**
 * DynamoDB hands back unprocessed batch items under load: they are sent
 * again after a short, growing pause (50 ms doubling to 1 s), ten rounds in
 * all (about 5.5 s of pauses), then the write fails rather than spin.
 */
const UNPROCESSED_RETRY: RetryPolicy = { attempts: 10, baseMs: 50, maxMs: 1000 };

export type DeployStatus = 'IN_PROGRESS' | 'DEPLOYED' | 'FAILED' | 'CANCELLED';

/** Where an IN_PROGRESS deploy is. */
export type DeployPhase = 'queued' | 'cloning' | 'building' | 'uploading' | 'publishing';

export interface DeployRepository {
  commit?: string | null;
  branch?: string | null;
  owner?: string | null;
  name?: string | null;
  message?: string | null;
}

/** What a deploy builds: a commit of a git repository, or content already on IPFS. */
export type DeploySource = { kind: 'git'; url: string; branch: string; commit?: string | null } | { kind: 'ipfs'; cid: string };

/** The site's build settings as they were when the deploy was triggered. */
export interface DeployBuild {
  command?: string | null;
  baseDirectory?: string | null;
  publishDirectory?: string | null;
  image?: string | null;
  /** The plain variables the deploy's scope gets (hosting/deploys.ts buildOf). */
  env: Record<string, string>;
  /**
   * Its secret variables, name → the site's sealed value as it was (sealed
   * under the site and the name, so only the pipeline opens them, with the
   * site's sealer, wherever and whenever it runs). Never in clear here.
   */
  secretEnv?: Record<string, string> | null;
}

export interface Deploy {
  id: string;
  siteId: string;
  status: DeployStatus;
  createdAt: string;
  startedAt?: string | null;
  completedAt?: string | null;
  ipfsHash?: string | null;
  /** The gateway URL of a picture of the site's index page, set after the deploy ended DEPLOYED (none when it could not be taken). */
  previewImage?: string | null;
  /** The CIDv0 of previewImage: the deploy references it (see setPreview). */
  previewCid?: string | null;
  totalTime?: number | null;
  /** Only in records written before logs moved to the log store; the API reads the log store. */
  log?: string | null;
  published: boolean;
  autoPublish: boolean;
  repository: DeployRepository;
  phase?: DeployPhase | null;
  source?: DeploySource | null;
  build?: DeployBuild | null;
  /** A pull-request preview (or a deploy of a branch other than the site's): never published. */
  preview?: boolean | null;
  /** The pull request (GitLab: merge request) a preview builds. */
  pullRequest?: DeployPullRequest | null;
  /** The deploy this one retries. */
  retryOf?: string | null;
  /** Set while running: the worker stops at its next step (and kills the build). */
  cancelRequested?: boolean | null;
  /** Why it failed or was cancelled (also the log's last line). */
  reason?: string | null;
  /** The build running elsewhere (CodeBuild) while the deploy waits for it in the building phase. */
  remoteBuild?: RemoteBuild | null;
}

/** A build handed to another machine: its id there (what StopBuild takes) and when it was handed over. */
export interface RemoteBuild {
  id: string;
  startedAt: string;
  /** Where its own log is (CodeBuild's CloudWatch Logs console link), once known. */
  logUrl?: string | null;
  /** When its end was taken up (one event of several for the same end wins). */
  endedAt?: string | null;
}

/** The pull request a preview deploy builds, as its git host's webhook told it. */
export interface DeployPullRequest {
  number: number;
  title?: string | null;
  url?: string | null;
  /** The head branch is in another repository (a fork): built from there, without the site's access token. */
  fork: boolean;
}

export interface NewDeploy {
  siteId: string;
  autoPublish: boolean;
  repository: DeployRepository;
  source?: DeploySource;
  build?: DeployBuild;
  preview?: boolean;
  pullRequest?: DeployPullRequest;
  retryOf?: string;
}

export interface DeployEnd {
  status: Exclude<DeployStatus, 'IN_PROGRESS'>;
  reason?: string;
  ipfsHash?: string;
  /** The CIDv0 of ipfsHash: the deploy references it from now on (DEPLOYED only). */
  referenceCid?: string;
  repository?: DeployRepository;
}

/** Thrown by finish() with `publishOver` when that deploy is no longer the published one; the deploy is still IN_PROGRESS. */
export class PublishedMeanwhile extends Error {
  override name = 'PublishedMeanwhile';
  constructor(readonly over: string) {
    super(`deploy ${over} is no longer the published one`);
  }
}

const key = (siteId: string, deployId: string) => ({ pk: `SITE#${siteId}`, sk: `DEPLOY#${deployId}` });
/** A deploy's name among the recent reads. */
const recentKey = (siteId: string, deployId: string) => `${siteId}/${deployId}`;
/** Finished deploys remembered for reads that show them (recent-reads.ts). */
const RECENT_DEPLOYS = 5_000;

/** The holder name of a deploy's CID reference (data/objects.ts): holders that are not objects start with '#'. */
export const deployHolder = (siteId: string, deployId: string) => `#DEPLOY#${siteId}#${deployId}`;

/** The holder of a deploy's preview image reference: apart from the root's, as the image is a DAG of its own. */
export const previewHolder = (siteId: string, deployId: string) => `#PREVIEW#${siteId}#${deployId}`;

export class DeployStore {
  /**
   * Finished deploys (DEPLOYED, FAILED, CANCELLED) as recently read, for
   * the reads that show them (getManyRecent). A finished deploy changes
   * only by its preview image (setPreview) and by deletion with its site;
   * one still in progress is never kept.
   */
  private readonly recent: RecentReads<Deploy>;

  /** `sites`: the site store, told of the site writes a deploy's end makes (its publication); `recentMs`: as SiteStore's. */
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
    private readonly sites?: SiteWrites,
    recentMs = RECENT_READS_MS,
  ) {
    this.recent = new RecentReads<Deploy>(RECENT_DEPLOYS, undefined, recentMs);
  }

  private get table() {
    return this.db.tables.deploys;
  }

  /** Runs a write of the deploy, then forgets it (recent-reads.ts). */
  private writing<T>(siteId: string, deployId: string, write: () => Promise<T>): Promise<T> {
    return this.recent.writing([recentKey(siteId, deployId)], write);
  }

  /** A conditional update of a deploy: false when its condition no longer holds. */
  private async updateIf(
    input: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName'> & { Key: ReturnType<typeof key> },
  ): Promise<boolean> {
    const { pk, sk } = input.Key;
    return this.writing(pk.slice('SITE#'.length), sk.slice('DEPLOY#'.length), () =>
      writtenIf(this.db.doc.send(new UpdateCommand({ TableName: this.table, ...input }))),
    );
  }

  /** Records a new deploy waiting for a worker. */
  async enqueue(init: NewDeploy): Promise<Deploy> {
    const now = this.now();
    const deploy: Deploy = {
      id: newSortableId(now.getTime()),
      status: 'IN_PROGRESS',
      phase: 'queued',
      createdAt: now.toISOString(),
      published: false,
      ...init,
    };
    await this.writing(deploy.siteId, deploy.id, () =>
      this.db.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...key(deploy.siteId, deploy.id), gsi1pk: 'QUEUE', gsi1sk: deploy.id, ...stripUndefined(deploy) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    return deploy;
  }

  /**
   * Takes a queued deploy for this worker: it leaves the queue and starts
   * cloning. Undefined when it is no longer queued (another worker took it,
   * or it was cancelled).
   */
  async claim(siteId: string, deployId: string): Promise<Deploy | undefined> {
    try {
      const out = await this.writing(siteId, deployId, () =>
        this.db.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key: key(siteId, deployId),
            UpdateExpression: 'SET phase = :cloning, startedAt = :now, gsi1pk = :running',
            ConditionExpression: 'phase = :queued AND #status = :inProgress',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: {
              ':cloning': 'cloning',
              ':now': this.now().toISOString(),
              ':running': 'RUNNING',
              ':queued': 'queued',
              ':inProgress': 'IN_PROGRESS',
            },
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      return fromItem(out.Attributes!);
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
      throw err;
    }
  }

  /** Moves a running deploy to its next phase (with what the phase learned); false once it was cancelled or ended. */
  async advance(siteId: string, deployId: string, phase: DeployPhase, set: Partial<Pick<Deploy, 'repository'>> = {}): Promise<boolean> {
    const names: Record<string, string> = { '#status': 'status' };
    const values: Record<string, unknown> = { ':phase': phase, ':inProgress': 'IN_PROGRESS' };
    let update = 'SET phase = :phase';
    if (set.repository) {
      update += ', repository = :repository';
      values[':repository'] = set.repository;
    }
    return this.updateIf({
      Key: key(siteId, deployId),
      UpdateExpression: update,
      ConditionExpression: '#status = :inProgress AND attribute_not_exists(cancelRequested)',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
  }

  /**
   * Records the build a running deploy handed to another machine; false
   * when the deploy was cancelled or ended meanwhile (the caller stops it).
   */
  async recordRemoteBuild(siteId: string, deployId: string, build: RemoteBuild): Promise<boolean> {
    return this.updateIf({
      Key: key(siteId, deployId),
      UpdateExpression: 'SET remoteBuild = :build',
      ConditionExpression: '#status = :inProgress AND phase = :building AND attribute_not_exists(cancelRequested)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':build': stripUndefined(build), ':inProgress': 'IN_PROGRESS', ':building': 'building' },
    });
  }

  /**
   * Takes up the end of a deploy's remote build, once: false when the
   * deploy has no such build running (an event repeated, or about an older
   * build, or the deploy ended meanwhile).
   */
  async endRemoteBuild(siteId: string, deployId: string, buildId: string): Promise<boolean> {
    return this.updateIf({
      Key: key(siteId, deployId),
      UpdateExpression: 'SET remoteBuild.endedAt = :now',
      ConditionExpression: '#status = :inProgress AND remoteBuild.id = :id AND attribute_not_exists(remoteBuild.endedAt)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':now': this.now().toISOString(), ':id': buildId, ':inProgress': 'IN_PROGRESS' },
    });
  }

  /**
   * Ends an IN_PROGRESS deploy, once: it leaves the queue and the running
   * list. A DEPLOYED end writes the deploy's CID reference in the same
   * transaction. Undefined when it had already ended.
   */
  async finish(
    siteId: string,
    deployId: string,
    end: DeployEnd & { publish?: boolean; publishOver?: string },
  ): Promise<(Deploy & { publishedNow?: boolean }) | undefined> {
    const current = await this.get(siteId, deployId);
    if (!current || current.status !== 'IN_PROGRESS') return undefined;
    const now = this.now();
    const started = current.startedAt ?? current.createdAt;
    const finished: Deploy = {
      ...current,
      status: end.status,
      phase: null,
      completedAt: now.toISOString(),
      startedAt: started,
      totalTime: Math.max(0, now.getTime() - Date.parse(started)),
      reason: end.reason ?? null,
      ipfsHash: end.ipfsHash ?? current.ipfsHash ?? null,
      repository: end.repository ?? current.repository,
      cancelRequested: null,
    };
    const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
      {
        Put: {
          TableName: this.table,
          Item: { ...key(siteId, deployId), ...stripUndefined(finished) },
          ConditionExpression: '#status = :inProgress',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':inProgress': 'IN_PROGRESS' },
        },
      },
    ];
    if (end.status === 'DEPLOYED' && end.referenceCid) {
      items.push({ Put: { TableName: this.db.tables.objects, Item: cidReference(end.referenceCid, deployHolder(siteId, deployId)) } });
    }
    // Published in the same transaction that ends it DEPLOYED, so whoever
    // sees DEPLOYED sees the site's publication settled too; not over a
    // newer deploy already published (ids sort by creation). With
    // `publishOver`, the caller found this deploy's commit newer than that
    // published deploy's (deploy-worker/steps/ancestry.ts): over it, and
    // only over it, whatever the order the two were created in.
    const publishing = end.status === 'DEPLOYED' && end.publish === true;
    const over = publishing ? end.publishOver : undefined;
    if (publishing) {
      items.push({
        Update: {
          TableName: this.db.tables.sites,
          Key: { pk: `SITE#${siteId}`, sk: 'SITE' },
          UpdateExpression: 'SET publishedDeployId = :id, version = if_not_exists(version, :zero) + :one',
          ...(over !== undefined
            ? {
                ConditionExpression: 'publishedDeployId = :over',
                ExpressionAttributeValues: { ':id': deployId, ':zero': 0, ':one': 1, ':over': over },
              }
            : {
                ConditionExpression:
                  'attribute_exists(pk) AND (attribute_not_exists(publishedDeployId) OR attribute_type(publishedDeployId, :nullType) OR publishedDeployId <= :id)',
                ExpressionAttributeValues: { ':id': deployId, ':zero': 0, ':one': 1, ':nullType': 'NULL' },
              }),
        },
      });
    }
    try {
      const send = () => this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
      await this.writing(siteId, deployId, publishing && this.sites ? () => this.sites!.writing(siteId, send) : send);
      return publishing ? { ...finished, publishedNow: true } : finished;
    } catch (err) {
      if ((err as Error).name !== 'TransactionCanceledException') throw err;
      const reasons = (err as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? [];
      if (publishing && reasons[0]?.Code !== 'ConditionalCheckFailed' && reasons[items.length - 1]?.Code === 'ConditionalCheckFailed') {
        // Another deploy was published since the caller compared: it compares again, with that one.
        if (over !== undefined) throw new PublishedMeanwhile(over);
        // A newer deploy is published (or the site is gone): end it DEPLOYED, unpublished.
        const ended = await this.finish(siteId, deployId, { ...end, publish: false });
        return ended && { ...ended, publishedNow: false };
      }
      return undefined;
    }
  }

  /**
   * Records a DEPLOYED deploy's preview image and references its CID (in
   * one transaction), once. False when the deploy is gone (its site was
   * deleted meanwhile) or already has one: the caller makes the CID a
   * collection candidate.
   */
  async setPreview(siteId: string, deployId: string, previewImage: string, previewCid: string): Promise<boolean> {
    return this.writing(siteId, deployId, () =>
      writtenIf(
        this.db.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Update: {
                  TableName: this.table,
                  Key: key(siteId, deployId),
                  UpdateExpression: 'SET previewImage = :image, previewCid = :cid',
                  ConditionExpression: '#status = :deployed AND attribute_not_exists(previewCid)',
                  ExpressionAttributeNames: { '#status': 'status' },
                  ExpressionAttributeValues: { ':image': previewImage, ':cid': previewCid, ':deployed': 'DEPLOYED' },
                },
              },
              { Put: { TableName: this.db.tables.objects, Item: cidReference(previewCid, previewHolder(siteId, deployId)) } },
            ],
          }),
        ),
      ),
    );
  }

  /**
   * Asks for a deploy to stop. A queued one ends CANCELLED at once; a
   * running one is marked, and its worker stops (and kills the build).
   * Returns the deploy as it now is, or undefined if it had already ended.
   */
  async requestCancel(siteId: string, deployId: string, reason: string): Promise<Deploy | undefined> {
    const current = await this.get(siteId, deployId);
    if (!current || current.status !== 'IN_PROGRESS') return undefined;
    if (current.phase === 'queued') {
      const ended = await this.finish(siteId, deployId, { status: 'CANCELLED', reason });
      if (ended) return ended;
      return this.requestCancel(siteId, deployId, reason); // claimed meanwhile: mark it instead
    }
    try {
      await this.updateOrFail({
        Key: key(siteId, deployId),
        UpdateExpression: 'SET cancelRequested = :yes, reason = :reason',
        ConditionExpression: '#status = :inProgress',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':yes': true, ':reason': reason, ':inProgress': 'IN_PROGRESS' },
      });
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
      throw err;
    }
    return { ...current, cancelRequested: true, reason };
  }

  /** An update of a deploy whose failed condition throws (ConditionalCheckFailedException). */
  private async updateOrFail(input: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName'> & { Key: ReturnType<typeof key> }) {
    const { pk, sk } = input.Key;
    return this.writing(pk.slice('SITE#'.length), sk.slice('DEPLOY#'.length), () =>
      this.db.doc.send(new UpdateCommand({ TableName: this.table, ...input })),
    );
  }

  async get(siteId: string, deployId: string): Promise<Deploy | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: key(siteId, deployId), ConsistentRead: true }));
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /** A page of the site's deploys, newest first, starting after the deploy `afterId` (exclusive). */
  async listBySite(siteId: string, limit: number, afterId?: string): Promise<Page<Deploy>> {
    const page = await queryPage(
      this.db,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :deploy)',
        ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':deploy': 'DEPLOY#' },
        ScanIndexForward: false,
      },
      limit,
      afterId === undefined ? undefined : { pk: `SITE#${siteId}`, sk: `DEPLOY#${afterId}` },
    );
    return { items: page.items.map(fromItem), more: page.more };
  }

  /**
   * A deploy of the site by its id lowercased (a host name's label carries it
   * so). Ids begin with 10 lowercase base-36 digits of their creation time:
   * only the site's deploys of that millisecond are read.
   */
  async findByLowercaseId(siteId: string, lowered: string): Promise<Deploy | undefined> {
    if (!/^[0-9a-z]{22}$/.test(lowered)) return undefined;
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':prefix': `DEPLOY#${lowered.slice(0, 10)}` },
      ConsistentRead: true,
    });
    const found = items.map(fromItem).filter((d) => d.id.toLowerCase() === lowered);
    return found.length === 1 ? found[0] : undefined;
  }

  /**
   * Several deploys by key, in key order; missing ones are absent. The
   * database's batch reader coalesces them into BatchGetItem calls of 100
   * keys (and retries what DynamoDB leaves unprocessed, within bounds).
   */
  async getMany(keys: ReadonlyArray<{ siteId: string; deployId: string }>): Promise<Deploy[]> {
    const items = await Promise.all(
      keys.map((k) => this.db.reader.get(this.table, { pk: `SITE#${k.siteId}`, sk: `DEPLOY#${k.deployId}` })),
    );
    return items.filter((item) => item !== undefined).map(fromItem);
  }

  /** A finished deploy remembered by getManyRecent, if it still is; no read (the answer's fields take it without waiting). */
  recentOne(siteId: string, deployId: string): Deploy | undefined {
    return this.recent.get(recentKey(siteId, deployId));
  }

  /**
   * getMany for reads that show the deploys: a finished deploy as read at
   * most RECENT_READS_MS ago, or since this process's last write of it
   * (recent-reads.ts); the others read as getMany reads them. In key order.
   */
  async getManyRecent(keys: ReadonlyArray<{ siteId: string; deployId: string }>): Promise<Deploy[]> {
    const byKey = new Map(keys.map((k) => [recentKey(k.siteId, k.deployId), k]));
    // Through the shared path: concurrent reads of a deploy share one read, and one read all the time is re-read ahead of its end.
    const found = await this.recent.throughMany(
      [...byKey.keys()],
      async (wanted) => {
        const read = await this.getMany(wanted.map((key) => byKey.get(key)!));
        return new Map(read.map((deploy) => [recentKey(deploy.siteId, deploy.id), deploy]));
      },
      (deploy) => deploy.status !== 'IN_PROGRESS',
    );
    const inOrder: Deploy[] = [];
    for (const k of keys) {
      const deploy = found.get(recentKey(k.siteId, k.deployId));
      if (deploy) inOrder.push(deploy);
    }
    return inOrder;
  }

  /**
   * Writes finished or historical deploys as they are, 25 to a request
   * (imports, fixtures and the benchmark's seed). Not for new deploys:
   * those go through enqueue, which never overwrites.
   */
  async putMany(deploys: readonly Deploy[]): Promise<void> {
    await this.recent.writing(
      deploys.map((d) => recentKey(d.siteId, d.id)),
      () =>
        this.batchWrite(
          deploys.map((deploy) => ({ PutRequest: { Item: { pk: `SITE#${deploy.siteId}`, sk: `DEPLOY#${deploy.id}`, ...deploy } } })),
        ),
    );
  }

  /**
   * Deletes every deploy of a site (after the site itself is gone), 25 to a
   * request, then releases their CIDs to garbage collection (a reference
   * left by a crash in between only keeps blocks longer).
   */
  async deleteAllOfSite(siteId: string): Promise<number> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :deploy)',
      ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':deploy': 'DEPLOY#' },
      ProjectionExpression: 'pk, sk, ipfsHash, previewCid, #status',
      ExpressionAttributeNames: { '#status': 'status' },
    });
    await this.recent.writing(
      items.map((item) => recentKey(siteId, (item.sk as string).slice('DEPLOY#'.length))),
      () => this.batchWrite(items.map((item) => ({ DeleteRequest: { Key: { pk: item.pk, sk: item.sk } } }))),
    );
    for (const item of items) {
      const deployId = (item.sk as string).slice('DEPLOY#'.length);
      if (item.status === 'DEPLOYED' && typeof item.ipfsHash === 'string')
        await this.release(referenceCidOf(item.ipfsHash), deployHolder(siteId, deployId));
      if (typeof item.previewCid === 'string') await this.release(item.previewCid, previewHolder(siteId, deployId));
    }
    return items.length;
  }

  /** Drops a reference and makes its CID a collection candidate, together. */
  private async release(cid: string, holder: string): Promise<void> {
    await this.db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: this.db.tables.objects, Item: candidateItem(cid) } },
          { Delete: { TableName: this.db.tables.objects, Key: cidReference(cid, holder) } },
        ],
      }),
    );
  }

  private async batchWrite(requests: Array<Record<string, unknown>>): Promise<void> {
    for (let i = 0; i < requests.length; i += 25) {
      await untilNoneLeft(
        { [this.table]: requests.slice(i, i + 25) } as Record<string, unknown[]>,
        async (pending) => {
          const out = await this.db.doc.send(new BatchWriteCommand({ RequestItems: pending as never }));
          const left = out.UnprocessedItems ?? {};
          return Object.keys(left).length ? (left as typeof pending) : undefined;
        },
        { ...UNPROCESSED_RETRY, what: `writing ${Math.min(25, requests.length - i)} deploys` },
      );
    }
  }

  /** Deploys waiting for a worker, oldest first. */
  async listQueued(limit: number): Promise<Deploy[]> {
    return this.listIndex('QUEUE', limit);
  }

  /** Deploys a worker is running (or was, when its process died). */
  async listRunning(limit = 100): Promise<Deploy[]> {
    return this.listIndex('RUNNING', limit);
  }

  private async listIndex(pk: string, limit: number): Promise<Deploy[]> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :q',
        ExpressionAttributeValues: { ':q': pk },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map(fromItem);
  }

  /** The site's queued deploys, newest first (at most `limit`). */
  async listQueuedOfSite(siteId: string, limit = 100): Promise<Deploy[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :deploy)',
      FilterExpression: 'phase = :queued',
      ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':deploy': 'DEPLOY#', ':queued': 'queued' },
      ScanIndexForward: false,
      ConsistentRead: true,
    });
    return items.slice(0, limit).map(fromItem);
  }
}

/** The CID form references and collection candidates use: CIDv0 for dag-pb (what objects reference too). */
export function referenceCidOf(cid: string): string {
  const parsed = CID.parse(cid);
  return parsed.code === 0x70 && parsed.version === 1 ? parsed.toV0().toString() : parsed.toString();
}

function fromItem(item: Record<string, unknown>): Deploy {
  return withoutKeys<Deploy>(item);
}
