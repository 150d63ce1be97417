/**
 * Runs a site's build command: bubblewrap on one machine
 * (functions/local/bwrap-runner.ts), AWS CodeBuild in AWS. The runner knows
 * nothing of deploys beyond what a build needs.
 */

export interface BuildRequest {
  /** For the runner's own bookkeeping and logs. */
  deployId: string;
  /** The checkout on this machine: the only place the build may write. Its files may be hard links to the kept snapshot (steps/checkout/): a runner must not let a command write through them. */
  checkout: string;
  /** Where the command runs, relative to the checkout (the site's baseDirectoryPath, '' for the root). */
  directory: string;
  /** Run as `sh -c <command>`. */
  command: string;
  /**
   * The build's whole environment (the site's variables, CI=true,
   * CAIRN_DEPLOY_ID, COMMIT_REF, BRANCH): nothing of the service's own is
   * added by the runner beyond HOME and a PATH that has Node.
   */
  env: Record<string, string>;
  /** Past this the whole process tree is killed and the build fails. */
  timeoutMs: number;
  /** The container image the site asked for (CodeBuild's image override; bubblewrap uses this machine's system). */
  image?: string;
  /** Aborting it (a cancelled deploy) kills the whole process tree at once. */
  signal: AbortSignal;
  /** The build's stdout and stderr, as they come. */
  onOutput(text: string): void;
}

export interface BuildResult {
  /** 'succeeded' only when the command exited 0. */
  outcome: 'succeeded' | 'failed' | 'timed-out' | 'cancelled';
  /** The exit code, or the signal that ended the command. */
  exitCode?: number;
  signal?: string;
  /**
   * For a build ended at one of its limits (config.build.limits), the line
   * that says which and its value: "memory limit 3 GiB reached". The
   * outcome is then 'failed'.
   */
  limit?: string;
}

export interface BuildRunner {
  /** What the deploy log says runs the build ("bubblewrap sandbox", ...). */
  readonly name: string;
  /**
   * A build is coming (a deploy with a build command has started, its clone
   * next): what the runner finds out once before its first build (whether
   * its sandbox works here) may start now, beside the clone. Never throws:
   * a runner that cannot build refuses in run().
   */
  prepare?(): void;
  run(request: BuildRequest): Promise<BuildResult>;
}

/** A runner that refuses to build (no sandbox on this machine): the deploy fails with this message. */
export class BuildRefused extends Error {
  override name = 'BuildRefused';
}

/**
 * A runner whose builds run on another machine and end later (AWS
 * CodeBuild, functions/aws/codebuild-runner.ts): the pipeline
 * hands it the checkout, records the build on the deploy and ends its turn;
 * the build's end arrives as an event, and resumeDeploy takes the deploy up
 * from the publish directory the build left.
 */
export interface DetachedBuildRunner {
  readonly name: string;
  readonly detached: true;
  /** Hands the checkout over and starts the build (at most once per deploy, however often asked). */
  start(request: DetachedBuildRequest): Promise<StartedBuild>;
  /** Writes the publish directory the build left into `into` (created here); `.git` is left out when asked. */
  fetchOutput(build: DeployOfBuild, into: string, options: { withoutGit: boolean }): Promise<void>;
  stop(buildId: string): Promise<void>;
  /** Removes what the deploy's build left behind (its source, its output). */
  discard(build: DeployOfBuild): Promise<void>;
}

export interface DeployOfBuild {
  siteId: string;
  deployId: string;
  /** Whether the build was given secret variables (the deploy record says); unknown is taken as yes. */
  hadSecrets?: boolean;
}

export interface DetachedBuildRequest extends Omit<BuildRequest, 'signal' | 'onOutput'>, DeployOfBuild {
  /** The publish directory, relative to the checkout ('' for the root): what the build hands back. */
  publishDirectory: string;
  /** The names in `env` of the site's secret variables: a runner elsewhere must not send their values where others can read them. */
  secretNames: readonly string[];
}

export interface StartedBuild {
  id: string;
  /** Where the build's own log can be read, when known at start. */
  logUrl?: string;
}

/** How a detached build ended, as its state-change event tells. */
export interface DetachedBuildEnd {
  buildId: string;
  outcome: 'succeeded' | 'failed' | 'timed-out' | 'stopped';
  /** For a failure: the phase that failed and what it said. */
  detail?: { phase: string; context?: string };
  logUrl?: string;
}

export function isDetached(runner: BuildRunner | DetachedBuildRunner): runner is DetachedBuildRunner {
  return 'detached' in runner && runner.detached;
}
