/**
 * What a build was given and nobody removed: a deploy's secret of build
 * variables (build-secrets.ts) and its build files (codebuild-runner.ts)
 * are removed on every path a build ends by, but a worker that dies between
 * CreateSecret and StartBuild's answer, a build end event that never
 * reaches the worker, or a removal that failed leaves them behind. The
 * worker's minute tick sweeps them: what is older than buildLeftoverAgeMs
 * (past any build's life) and whose deploy is not running (ended, or
 * unknown: deleted with its site, or never recorded) is removed.
 *
 * Bounded work per tick: one page of each listing, the oldest first where
 * the listing can say so. ListSecrets lists by creation date
 * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_ListSecrets.html),
 * ascending here, filtered by a case-sensitive prefix match on the name
 * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_Filter.html);
 * it is eventually consistent ("might not reflect changes from the last
 * five minutes", same page), far within the age bound. S3 lists keys in
 * order (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html),
 * not by age: a page full of a running build's files puts the sweep of
 * files off until that build ends; the bucket's lifecycle rule (build files
 * expire after 7 days, lib/data.ts) is the backstop.
 *
 * Nothing here needs the key naming builds: the deploy id is read back from
 * the name, whatever key made it. Every failure is logged and the sweep
 * goes on with the next thing; the tick never fails for it.
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
import { buildLeftoverAgeMs, DEPLOY_BUILDS_PREFIX } from '../deploy-worker/limits.js';
import { buildSecretsPrefix } from './build-secrets.js';
import { deployIdOfBuildName } from './build-names.js';

/** What one sweep removed: the secrets by name, the build files by key. */
export interface LeftoverSweep {
  secrets: string[];
  files: string[];
}

/** Secrets read a page at a time (ListSecrets takes at most 100). */
const SECRETS_PAGE = 100;
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
  const swept: LeftoverSweep = { secrets: [], files: [] };
  const { config } = services;
  const project = config.build.codeBuildProject;
  if (!project) return swept;
  const log = logger.child({ sweep: 'build-leftovers' });
  const before = now.getTime() - buildLeftoverAgeMs(config.build.timeoutMs);
  let running: Set<string>;
  let made: SweepClients;
  try {
    // Read first: a deploy that starts after this writes things younger than the bound.
    running = new Set((await services.deploys.listRunning()).map((d) => d.id));
    made = await clientsFor(config.region);
  } catch (err) {
    log.warn('could not look for left-over build secrets and files; the next tick tries again', { err });
    return swept;
  }
  const isLeftOver = (name: string, created: Date | undefined) =>
    !!created && created.getTime() < before && !running.has(deployIdOfBuildName(name) ?? name);

  await sweepSecrets(made.secretsManager, buildSecretsPrefix(project), isLeftOver, swept, log).catch((err: unknown) =>
    log.warn('could not list the build secrets left over; the next tick tries again', { err }),
  );
  if (config.blockBucket) {
    await sweepFiles(made.s3, config.blockBucket, isLeftOver, swept, log).catch((err: unknown) =>
      log.warn('could not remove the build files left over; the next tick tries again', { err }),
    );
  }
  if (swept.secrets.length || swept.files.length)
    log.info('removed what ended builds left', { secrets: swept.secrets, files: swept.files.length });
  return swept;
}

async function sweepSecrets(
  client: SecretsManagerClient,
  prefix: string,
  isLeftOver: (name: string, created: Date | undefined) => boolean,
  swept: LeftoverSweep,
  log: Logger,
): Promise<void> {
  const { ListSecretsCommand, DeleteSecretCommand } = await import('@aws-sdk/client-secrets-manager');
  const page = await client.send(
    new ListSecretsCommand({ Filters: [{ Key: 'name', Values: [prefix] }], SortOrder: 'asc', MaxResults: SECRETS_PAGE }),
  );
  for (const secret of page.SecretList ?? []) {
    const name = secret.Name ?? '';
    if (!name.startsWith(prefix) || !isLeftOver(name.slice(prefix.length), secret.CreatedDate)) continue;
    // Force-deleted, as every other path removes them; a secret gone meanwhile is no error (build-secrets.ts).
    try {
      await client.send(new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }));
      swept.secrets.push(name);
    } catch (err) {
      log.warn('could not remove a left-over build secret', { secret: name, err });
    }
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
