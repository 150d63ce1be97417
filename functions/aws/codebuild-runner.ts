/**
 * Builds in AWS CodeBuild: Lambda has no sandbox for a user's command and
 * stops at 15 minutes. The worker has already cloned the commit (with the
 * clone step's shallow fetch, deepening and path checks), so the checkout
 * itself travels: zipped to the stack's bucket under the deploy's prefix
 * and given to CodeBuild as an S3 source. CodeBuild then builds exactly the
 * tree the worker checked, needs no access to the repository's host, and
 * its agent (not the site's image, which need not have any AWS tooling)
 * downloads the source and uploads the publish directory as the build's
 * artifacts, back under the same prefix:
 *
 *   deploy-builds/<site>/<deploy>-<32 characters>/source.zip     the checkout
 *   deploy-builds/<site>/<deploy>-<32 characters>/publish/...    the publish directory after the build
 *
 * The project's role reads and writes every deploy's files (a build needs
 * its own, and its grant cannot name one build), so the deploy's part of
 * the prefix is the name build-names.ts makes with the stack's key, as the
 * deploy's secret has: a build that knows another deploy's site and id
 * cannot make its prefix, and so neither reads its checkout nor writes
 * into its publish directory before the worker imports it. Every path that
 * writes, reads or removes the files (start, fetchOutput, discard) makes
 * the same name from the deploy id; a build's end event carries it in the
 * source location, from which buildEndOf reads the deploy id back.
 *
 * The project (one per stack, lib/) carries only defaults; every build
 * brings its image, environment, timeout, buildspec, source and artifacts.
 *
 * The site's secret variables never travel in StartBuild: they go into the
 * deploy's Secrets Manager secret just before it, and the build is given
 * references CodeBuild resolves inside the build (build-secrets.ts). The
 * secret goes when StartBuild fails, when the build is stopped here, and
 * with the build's files (discard) when the build's end is taken up.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { CodeBuildClient, EnvironmentVariable } from '@aws-sdk/client-codebuild';
import type {
  DeployOfBuild,
  DetachedBuildEnd,
  DetachedBuildRequest,
  DetachedBuildRunner,
  StartedBuild,
} from '../core/ports/build-runner.js';
import { zipDirectory, ZipTooLarge } from '../deploy-worker/zip.js';
import { codeBuildTimeoutMinutes, DEFAULT_BUILD_IMAGE, DEPLOY_BUILDS_PREFIX, ecrPublicImage } from '../deploy-worker/limits.js';
import { DeployFailure } from '../deploy-worker/pipeline.js';
import { BuildSecretsTooLarge, type BuildSecrets } from './build-secrets.js';
import { deployIdOfBuildName, type BuildNames } from './build-names.js';

/** Where a deploy's build files live in the bucket, given the deploy's build name (BuildNames.of). */
export const buildPrefix = (siteId: string, buildName: string) => `${DEPLOY_BUILDS_PREFIX}${siteId}/${buildName}/`;

/**
 * An image reference CodeBuild can pull: `[registry/]repository[:tag][@digest]`
 * (Docker Hub when there is no registry), with Docker Hub's official images
 * taken from ECR Public's mirror of them (ecrPublicImage: Docker Hub limits
 * CodeBuild's anonymous pulls). A site's setting in another form (a URL,
 * spaces) is refused with the deploy rather than by CodeBuild.
 */
export function registryImage(image: string | undefined): string {
  const ref = image?.trim() || DEFAULT_BUILD_IMAGE;
  if (
    !/^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/.test(
      ref,
    )
  ) {
    throw new DeployFailure(
      `the build image "${ref}" is not an image reference a registry serves (like "node:20-slim" or "public.ecr.aws/docker/library/node:20")`,
    );
  }
  return ecrPublicImage(ref);
}

/** A word for sh, quoted so nothing in it is expanded. */
const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The buildspec: the command runs as `sh -c` in the base directory; the
 * publish directory is the artifacts' base. JSON is YAML, so each value is
 * written as a JSON string and needs no YAML escaping of its own.
 */
export function buildspec(directory: string, command: string, publishDirectory: string): string {
  const cd = `cd "$CODEBUILD_SRC_DIR"${directory ? `/${shellQuote(directory)}` : ''}`;
  return JSON.stringify({
    version: '0.2',
    phases: { build: { commands: [`${cd} && sh -c ${shellQuote(command)}`] } },
    artifacts: { files: ['**/*'], ...(publishDirectory ? { 'base-directory': publishDirectory } : {}) },
  });
}

export class CodeBuildRunner implements DetachedBuildRunner {
  readonly name = 'AWS CodeBuild';
  readonly detached = true as const;

  constructor(
    private readonly codeBuild: CodeBuildClient,
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly project: string,
    private readonly names: BuildNames,
    private readonly secrets: BuildSecrets,
  ) {}

  /** Where the deploy's build files live (reads the key naming builds the first time). */
  private async prefixOf(of: DeployOfBuild): Promise<string> {
    return buildPrefix(of.siteId, await this.names.of(of.deployId));
  }

  async start(request: DetachedBuildRequest): Promise<StartedBuild> {
    const image = registryImage(request.image);
    // Before anything is written: without the key no build is started (build-names.ts).
    const prefix = await this.prefixOf(request);
    const zip = `${request.checkout}.zip`;
    try {
      await zipDirectory(request.checkout, zip).catch((err: unknown) => {
        throw err instanceof ZipTooLarge ? new DeployFailure(err.message) : err;
      });
      const { PutObjectCommand } = await import('@aws-sdk/client-s3');
      await this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: `${prefix}source.zip`,
          Body: createReadStream(zip),
          ContentLength: (await stat(zip)).size,
          ContentType: 'application/zip',
        }),
      );
    } finally {
      await rm(zip, { force: true });
    }
    const { StartBuildCommand } = await import('@aws-sdk/client-codebuild');
    // Written last, just before StartBuild: nothing between them can fail and leave the secret behind.
    const secretNames = new Set(request.secretNames);
    const secretValues = Object.fromEntries(Object.entries(request.env).filter(([name]) => secretNames.has(name)));
    const references = new Map<string, EnvironmentVariable>();
    if (Object.keys(secretValues).length) {
      const written = await this.secrets.write(request.deployId, secretValues).catch((err: unknown) => {
        throw err instanceof BuildSecretsTooLarge ? new DeployFailure(err.message) : err;
      });
      for (const v of written) references.set(v.name!, v);
    }
    let out;
    try {
      out = await this.codeBuild.send(
        new StartBuildCommand({
          projectName: this.project,
          // A repeated message for the same deploy starts no second build (the
          // secret's references are the same each time, as the token asks).
          idempotencyToken: request.deployId,
          sourceTypeOverride: 'S3',
          sourceLocationOverride: `${this.bucket}/${prefix}source.zip`,
          imageOverride: image,
          // Plain variables travel as PLAINTEXT, which CodeBuild shows in its
          // console and BatchGetBuilds; secret ones as SECRETS_MANAGER
          // references, resolved inside the build, so neither shows their
          // values (https://docs.aws.amazon.com/codebuild/latest/APIReference/API_EnvironmentVariable.html).
          // CodeBuild's own CloudWatch log holds what the build prints as
          // printed: the stack's operators' view. A site's team sees Cairn's
          // deploy log, which links to CodeBuild's log without copying it, and
          // masks the secrets in its own lines and in the failure's reason
          // (pipeline.ts, deploy-log.ts).
          environmentVariablesOverride: Object.entries(request.env).map(
            ([name, value]) => references.get(name) ?? { name, value, type: 'PLAINTEXT' },
          ),
          timeoutInMinutesOverride: codeBuildTimeoutMinutes(request.timeoutMs),
          buildspecOverride: buildspec(request.directory, request.command, request.publishDirectory),
          artifactsOverride: {
            type: 'S3',
            location: this.bucket,
            path: prefix.slice(0, -1),
            name: 'publish',
            packaging: 'NONE',
            namespaceType: 'NONE',
          },
        }),
      );
    } catch (err) {
      // No build will read the secret: it goes now, or the failure says where it was left.
      if (references.size) {
        await this.secrets.remove(request.deployId).catch((removal: unknown) => {
          throw new Error(
            `CodeBuild did not start the build (${(err as Error).message}), and its secret variables could not be removed from Secrets Manager: ${(removal as Error).message}`,
            { cause: removal },
          );
        });
      }
      // The account's limits and a refused image are the site's to hear about; anything else is ours.
      const name = (err as Error).name;
      if (name === 'AccountLimitExceededException' || name === 'InvalidInputException')
        throw new DeployFailure(`CodeBuild did not start the build: ${(err as Error).message}`);
      throw err;
    }
    const build = out.build!;
    return { id: build.id!, logUrl: build.logs?.deepLink };
  }

  async fetchOutput(of: DeployOfBuild, into: string, options: { withoutGit: boolean }): Promise<void> {
    const { ListObjectsV2Command, GetObjectCommand } = await import('@aws-sdk/client-s3');
    const prefix = `${await this.prefixOf(of)}publish/`;
    await mkdir(into, { recursive: true });
    const root = resolve(into);
    let token: string | undefined;
    do {
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const object of page.Contents ?? []) {
        const rel = object.Key!.slice(prefix.length);
        if (!rel || rel.endsWith('/')) continue;
        if (options.withoutGit && (rel === '.git' || rel.startsWith('.git/'))) continue;
        const path = resolve(root, rel);
        // The keys were written by the user's build: none may land outside the directory.
        if (!path.startsWith(root + sep))
          throw new DeployFailure(`the build left a file named "${rel}", which points out of the publish directory`);
        await mkdir(dirname(path), { recursive: true });
        const body = (await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: object.Key! }))).Body as Readable;
        await pipeline(body, createWriteStream(path));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Stops the build and removes the secret its variables refer to (a stopped build reads nothing more). */
  async stop(buildId: string): Promise<void> {
    const { StopBuildCommand } = await import('@aws-sdk/client-codebuild');
    const out = await this.codeBuild.send(new StopBuildCommand({ id: buildId }));
    await this.secrets.removeReferenced(out.build?.environment?.environmentVariables ?? []);
  }

  /**
   * Removes the deploy's secret and its build files: both are tried, whichever
   * fails. A build known to have had no secret variables has no secret.
   */
  async discard(of: DeployOfBuild): Promise<void> {
    await Promise.all([of.hadSecrets === false ? undefined : this.secrets.remove(of.deployId), this.removeFiles(of)]);
  }

  private async removeFiles(of: DeployOfBuild): Promise<void> {
    const { ListObjectsV2Command, DeleteObjectsCommand } = await import('@aws-sdk/client-s3');
    const prefix = await this.prefixOf(of);
    let token: string | undefined;
    do {
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
      if (keys.length) await this.s3.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}

/** The parts of a CodeBuild state-change event the worker reads. */
export interface CodeBuildStateChange {
  source: 'aws.codebuild';
  'detail-type': 'CodeBuild Build State Change';
  detail: {
    'build-status': string;
    'project-name': string;
    'build-id': string;
    'additional-information'?: {
      source?: { location?: string; type?: string };
      logs?: { 'deep-link'?: string };
      phases?: Array<{ 'phase-type'?: string; 'phase-status'?: string; 'phase-context'?: string[] }>;
    };
  };
}

export function isCodeBuildStateChange(event: unknown): event is CodeBuildStateChange {
  const e = event as Partial<CodeBuildStateChange> | null;
  return (
    !!e && e.source === 'aws.codebuild' && e['detail-type'] === 'CodeBuild Build State Change' && typeof e.detail?.['build-id'] === 'string'
  );
}

/**
 * The deploy an event is about (from the source location the runner gave
 * the build) and how the build ended; undefined for a build still running
 * or not one of ours.
 */
export function buildEndOf(event: CodeBuildStateChange): (DeployOfBuild & { end: DetachedBuildEnd }) | undefined {
  const { detail } = event;
  const info = detail['additional-information'] ?? {};
  // `<bucket>/deploy-builds/<site>/<build name>/source.zip`, as start() gave it.
  const where = new RegExp(`/${DEPLOY_BUILDS_PREFIX}([^/]+)/([^/]+)/source\\.zip$`).exec(info.source?.location ?? '');
  const deployId = where && deployIdOfBuildName(where[2]!);
  if (!deployId) return undefined;
  // Events name the build by ARN; StartBuild and StopBuild by `<project>:<uuid>`.
  const buildId = detail['build-id'].replace(/^arn:[^:]+:codebuild:[^:]*:[^:]*:build\//, '');
  const phases = info.phases ?? [];
  const failed = phases.find((p) => p['phase-status'] && !['SUCCEEDED', 'IN_PROGRESS'].includes(p['phase-status']));
  const status = detail['build-status'];
  let outcome: DetachedBuildEnd['outcome'];
  if (status === 'SUCCEEDED') outcome = 'succeeded';
  else if (status === 'STOPPED') outcome = 'stopped';
  else if (status === 'TIMED_OUT' || failed?.['phase-status'] === 'TIMED_OUT') outcome = 'timed-out';
  else if (status === 'FAILED' || status === 'FAULT') outcome = 'failed';
  else return undefined;
  const context = failed?.['phase-context']?.filter((c) => c && c !== ': ').join('; ');
  return {
    siteId: where[1]!,
    deployId,
    end: {
      buildId,
      outcome,
      logUrl: info.logs?.['deep-link'],
      detail: failed ? { phase: failed['phase-type'] ?? 'unknown', context: context || undefined } : undefined,
    },
  };
}
