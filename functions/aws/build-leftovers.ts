/**
 * What a build was given and nobody removed: a deploy's secret of build
 * variables (build-secrets.ts) and its build files (codebuild-runner.ts)
 * are removed on every path a build ends by, but a worker that dies between
 * CreateSecret and StartBuild's answer, a build end event that never
 * reaches the worker (lost, or the rule that sends it disabled), or a
 * removal that failed leaves them behind. The worker's minute tick sweeps
 * them.
 *
 * A secret goes as soon as no one can need it, since it holds a site's
 * secrets in the clear (for whoever may read it):
 *
 * - when its deploy has ended: its deploy is not among the running ones
 *   (read before the listing, and complete), and it was made more than
 *   SETTLE_MS before. A deploy is claimed (running) before its secret is
 *   written, and never runs again once ended, so a secret older than the
 *   read whose deploy was not running then belongs to a deploy that ended,
 *   or that is unknown (deleted with its site, or never recorded). The
 *   margin covers the running index, a global secondary index, which may
 *   lag a claim by a moment ("eventually consistent",
 *   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Reads),
 *   and the clocks of Lambda and Secrets Manager. A deploy whose build's
 *   end never came is ended by the same tick, before the sweep
 *   (deploy-worker/worker.ts endStuckDeploys), so its secret goes then;
 * - whatever its deploy, when it is older than the longest a build can
 *   still read it (buildSecretAgeMs: the worker turn that writes it just
 *   before StartBuild, CodeBuild's queued timeout and the build's timeout,
 *   which the stack sets from the same limits): a deploy still marked
 *   running by then waits for an event, never for its build's secrets.
 *
 * Build files wait longer: the worker reads a build's output after the
 * build, so they go only past buildLeftoverAgeMs (past any build's life and
 * a worker turn after it) and only when their deploy is not running.
 *
 * Bounded work per tick: ListSecrets lists by creation date
 * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_ListSecrets.html),
 * ascending here, filtered by a case-sensitive prefix match on the name
 * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_Filter.html),
 * at most SECRET_PAGES pages of 100 and SECRET_DELETIONS DeleteSecret calls
 * a tick (DeleteSecret is allowed 50 a second,
 * https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html):
 * secrets that stay (running builds', or one whose removal fails each time)
 * do not hide those behind them, and a backlog of thousands is gone within
 * the hour. The listing is eventually consistent ("might not reflect
 * changes from the last five minutes", same page): a secret listed after
 * its removal is removed again, which is no error (build-secrets.ts). S3
 * lists keys in order (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html),
 * not by age: one page a tick, and a page full of a running build's files
 * puts the sweep of files off until that build ends; the bucket's
 * lifecycle rule (build files expire after 7 days, lib/data.ts) is the
 * backstop.
 *
 * Nothing here needs the key naming builds: the deploy id is read back from
 * the name, whatever key made it. Every failure is logged and the sweep
 * goes on with the next thing (a secret that could not be removed is
 * reported in the sweep's `failed`); the tick never fails for it.
 *
 * ListSecrets takes no resource in IAM ("*",
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssecretsmanager.html),
 * so the worker may list the names (never the values) of every secret of
 * the account; it may delete only under its project's prefix
 * (lib/deploy-pipeline.ts). The CodeBuild project's role may list neither.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Config } from '../core/config.js';
import type { DeployStore } from '../core/data/deploys.js';
import type { Logger } from '../core/logger.js';
import { onceUntilFailure } from '../core/once-until-failure.js';
import {
  BUILD_QUEUED_TIMEOUT_MINUTES,
  buildLeftoverAgeMs,
  codeBuildTimeoutMinutes,
  DEPLOY_BUILDS_PREFIX,
  WORKER_TIMEOUT_MINUTES,
} from '../deploy-worker/limits.js';
import { buildSecretsPrefix } from './build-secrets.js';
import { deployIdOfBuildName } from './build-names.js';

/** What one sweep removed: the secrets by name, the build files by key; and the secrets it could not remove. */
export interface LeftoverSweep {
  secrets: string[];
  files: string[];
  failed: string[];
}

/** Secrets read a page at a time (ListSecrets takes at most 100). */
const SECRETS_PAGE = 100;
/** Pages of secrets read in one sweep. */
export const SECRET_PAGES = 5;
/** DeleteSecret calls in one sweep (a second or two of the tick). */
export const SECRET_DELETIONS = 50;
/** How much older than the read of the running deploys a secret must be for its deploy's absence there to mean it ended. */
export const SETTLE_MS = 5 * 60_000;

/**
 * Past this age no build can read its secret any more: it is written in a
 * worker turn just before StartBuild, and the build may then wait in
 * CodeBuild's queue and run for their timeouts (lib/deploy-pipeline.ts sets
 * both from the same limits).
 */
export const buildSecretAgeMs = (buildTimeoutMs: number) =>
  (WORKER_TIMEOUT_MINUTES + BUILD_QUEUED_TIMEOUT_MINUTES + codeBuildTimeoutMinutes(buildTimeoutMs)) * 60_000;
/** Keys read a page at a time: one ListObjectsV2 page, and one DeleteObjects call (at most 1,000 keys each). */
const FILES_PAGE = 1000;

type SweepClients = { secretsManager: SecretsManagerClient; s3: S3Client };

/** The clients, one per container and region, made with the first sweep (again after a failed attempt). */
const clients = new Map<string, () => Promise<SweepClients>>();
function clientsFor(region: string): Promise<SweepClients> {
  let made = clients.get(region);
  if (!made) {
    made = onceUntilFailure(async () => {
      const [{ SecretsManagerClient }, { S3Client }] = await Promise.all([
        import('@aws-sdk/client-secrets-manager'),
        import('@aws-sdk/client-s3'),
      ]);
      return { secretsManager: new SecretsManagerClient({ region }), s3: new S3Client({ region }) };
    });
    clients.set(region, made);
  }
  return made();
}

/**
 * Removes one page of left-over build secrets and one of build files, of
 * the stack whose CodeBuild project the configuration names (nothing
 * without one). Never throws.
 */
export async function sweepBuildLeftovers(
  services: { config: Config; deploys: Pick<DeployStore, 'listRunning'> },
  logger: Logger,
  now = new Date(),
): Promise<LeftoverSweep> {
  const swept: LeftoverSweep = { secrets: [], files: [], failed: [] };
  const { config } = services;
  const project = config.build.codeBuildProject;
  if (!project) return swept;
  const log = logger.child({ sweep: 'build-leftovers' });
  let running: Set<string>;
  let complete: boolean;
  let made: SweepClients;
  try {
    // Read first: a deploy that starts after this writes things younger than the read.
    const listed = await services.deploys.listRunning(RUNNING_PAGE);
    running = new Set(listed.map((d) => d.id));
    // A full page may leave running deploys out: then their absence says nothing, and only age counts.
    complete = listed.length < RUNNING_PAGE;
    made = await clientsFor(config.region);
  } catch (err) {
    log.warn('could not look for left-over build secrets and files; the next tick tries again', { err });
    return swept;
  }
  const deployOf = (name: string) => deployIdOfBuildName(name) ?? name;
  const ended = now.getTime() - SETTLE_MS;
  const unreadable = now.getTime() - buildSecretAgeMs(config.build.timeoutMs);
  const secretLeftOver = (name: string, created: Date | undefined) =>
    !!created && (created.getTime() < unreadable || (complete && created.getTime() < ended && !running.has(deployOf(name))));
  const filesBefore = now.getTime() - buildLeftoverAgeMs(config.build.timeoutMs);
  const filesLeftOver = (name: string, created: Date | undefined) =>
    !!created && created.getTime() < filesBefore && !running.has(deployOf(name));

  await sweepSecrets(made.secretsManager, buildSecretsPrefix(project), secretLeftOver, swept, log).catch((err: unknown) =>
    log.warn('could not list the build secrets left over; the next tick tries again', { err }),
  );
  if (config.blockBucket) {
    await sweepFiles(made.s3, config.blockBucket, filesLeftOver, swept, log).catch((err: unknown) =>
      log.warn('could not remove the build files left over; the next tick tries again', { err }),
    );
  }
  if (swept.secrets.length || swept.files.length || swept.failed.length)
    log.info('removed what ended builds left', { secrets: swept.secrets, files: swept.files.length, failed: swept.failed });
  return swept;
}

/** Running deploys read at once: far more than run at a time (the worker's concurrency). */
const RUNNING_PAGE = 100;

async function sweepSecrets(
  client: SecretsManagerClient,
  prefix: string,
  isLeftOver: (name: string, created: Date | undefined) => boolean,
  swept: LeftoverSweep,
  log: Logger,
): Promise<void> {
  const { ListSecretsCommand, DeleteSecretCommand } = await import('@aws-sdk/client-secrets-manager');
  let next: string | undefined;
  let deletions = 0;
  for (let pages = 0; pages < SECRET_PAGES && deletions < SECRET_DELETIONS; pages++) {
    const page = await client.send(
      new ListSecretsCommand({
        Filters: [{ Key: 'name', Values: [prefix] }],
        SortOrder: 'asc',
        MaxResults: SECRETS_PAGE,
        ...(next ? { NextToken: next } : {}),
      }),
    );
    for (const secret of page.SecretList ?? []) {
      const name = secret.Name ?? '';
      if (!name.startsWith(prefix) || !isLeftOver(name.slice(prefix.length), secret.CreatedDate)) continue;
      if (deletions++ >= SECRET_DELETIONS) break;
      // Force-deleted, as every other path removes them; a secret gone meanwhile is no error (build-secrets.ts).
      try {
        await client.send(new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }));
        swept.secrets.push(name);
      } catch (err) {
        swept.failed.push(name);
        log.warn('could not remove a left-over build secret; the next tick tries again', { secret: name, err });
      }
    }
    next = page.NextToken;
    if (!next) break;
  }
}

async function sweepFiles(
  client: S3Client,
  bucket: string,
  isLeftOver: (name: string, created: Date | undefined) => boolean,
  swept: LeftoverSweep,
  log: Logger,
): Promise<void> {
  const { ListObjectsV2Command, DeleteObjectsCommand } = await import('@aws-sdk/client-s3');
  const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: DEPLOY_BUILDS_PREFIX, MaxKeys: FILES_PAGE }));
  const keys = (page.Contents ?? [])
    .filter((o) => {
      // deploy-builds/<site>/<build name>/...
      const name = o.Key!.slice(DEPLOY_BUILDS_PREFIX.length).split('/')[1];
      return !!name && isLeftOver(name, o.LastModified);
    })
    .map((o) => o.Key!);
  if (!keys.length) return;
  const out = await client.send(
    new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }),
  );
  const failed = new Set((out.Errors ?? []).map((e) => e.Key));
  if (failed.size) log.warn('could not remove some left-over build files', { failed: failed.size, first: out.Errors![0] });
  swept.files.push(...keys.filter((k) => !failed.has(k)));
}
