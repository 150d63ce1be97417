/**
 * Runs a site's build command: bubblewrap on one machine
 * (functions/local/bwrap-runner.ts), AWS CodeBuild in AWS. The runner knows
 * nothing of deploys beyond what a build needs.
 */

export interface BuildRequest {
  /** For the runner's own bookkeeping and logs. */
  deployId: string;
  /** The checkout on this machine: the only place the build may write. */
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
}

export interface BuildRunner {
  /** What the deploy log says runs the build ("bubblewrap sandbox", ...). */
  readonly name: string;
  run(request: BuildRequest): Promise<BuildResult>;
}

/** A runner that refuses to build (no sandbox on this machine): the deploy fails with this message. */
export class BuildRefused extends Error {
  override name = 'BuildRefused';
}
