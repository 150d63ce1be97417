/**
 * Limits of the deploy worker in AWS, shared by the stack (lib/) and the
 * worker: the stack sizes the function, the queue and the CodeBuild project
 * with them (and scopes the project's role to the build files' prefix), and
 * the worker's tick fails deploys that outlived them.
 */

/** Where deploys' build files (checkouts for CodeBuild, publish directories back) live in the block bucket. */
export const DEPLOY_BUILDS_PREFIX = 'deploy-builds/';

/** The worker Lambda's timeout: one turn clones and hands over, another imports and publishes. */
export const WORKER_TIMEOUT_MINUTES = 15;

/** How long a CodeBuild build may wait for capacity before CodeBuild gives up on it. */
export const BUILD_QUEUED_TIMEOUT_MINUTES = 60;

/** CodeBuild's timeout for a build given CAIRN_BUILD_TIMEOUT: whole minutes, within what CodeBuild takes (5 to 480). */
export function codeBuildTimeoutMinutes(timeoutMs: number): number {
  return Math.min(480, Math.max(5, Math.ceil(timeoutMs / 60_000)));
}

/**
 * How long a deploy may be running before the tick ends it FAILED: the
 * build's limit, plus a worker turn on either side of it, plus (for a
 * CodeBuild build) its time queued. Past that no turn of the worker can
 * still be moving it: its Lambda was stopped, or an event was lost.
 */
export function runningLimitMs(buildTimeoutMs: number, remote: boolean): number {
  const build = remote ? (codeBuildTimeoutMinutes(buildTimeoutMs) + BUILD_QUEUED_TIMEOUT_MINUTES) * 60_000 : buildTimeoutMs;
  return build + 2 * WORKER_TIMEOUT_MINUTES * 60_000;
}

/**
 * How old a build's files must be before the tick removes them as left
 * over (and only when their deploy is not running; its secret goes sooner,
 * functions/aws/build-leftovers.ts says when): past the
 * running limit of any deploy built in CodeBuild (the project's timeout and
 * queued timeout, which the stack sets from these same functions, and a
 * worker turn on either side), so no build can still read them and no
 * worker can still be moving their deploy; and one worker turn more, so
 * that for a deploy the tick ended its build's own end event, if it comes,
 * removes them first.
 */
export const buildLeftoverAgeMs = (buildTimeoutMs: number) => runningLimitMs(buildTimeoutMs, true) + WORKER_TIMEOUT_MINUTES * 60_000;

/** The image a site's build runs in when its settings name none (pulled from ECR Public: ecrPublicImage). */
export const DEFAULT_BUILD_IMAGE = 'node:slim';

/** Where ECR Public mirrors Docker Hub's official images (https://gallery.ecr.aws/docker/library/node). */
export const ECR_PUBLIC_DOCKER_LIBRARY = 'public.ecr.aws/docker/library/';

/**
 * An image from Docker Hub's official library (`node:slim`) as ECR Public
 * serves it, same repository and tag. CodeBuild pulls a Docker Hub image
 * anonymously, Docker Hub limits anonymous pulls per source address
 * (https://docs.docker.com/docker-hub/usage/), and builds pull from
 * addresses many AWS accounts share; ECR Public's mirror of the official
 * images is pulled from within AWS. A reference to another registry, or to
 * a Docker Hub image with an owner (which ECR Public does not mirror), is
 * kept.
 */
export function ecrPublicImage(ref: string): string {
  let name = ref.replace(/^(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)\//, '');
  const first = name.split('/')[0]!;
  if (name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')) return name;
  if (name.startsWith('library/')) name = name.slice('library/'.length);
  // Only official images (no owner) are in ECR Public's Docker library.
  return name.includes('/') ? ref : `${ECR_PUBLIC_DOCKER_LIBRARY}${name}`;
}

/**
 * Repositories the worker keeps between deploys (steps/checkout/mirrors.ts): on one
 * machine, in its data directory; in a Lambda instance, in its /tmp beside
 * the checkouts, where a warm instance reuses them.
 */
export const KEPT_REPOSITORIES = { local: 32, lambda: 4 } as const;
