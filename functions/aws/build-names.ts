/**
 * The names of what one deploy's CodeBuild build is given: its secret of
 * build variables (build-secrets.ts) and its build files in the bucket
 * (codebuild-runner.ts). A build runs its commands with the CodeBuild
 * project's role, and that role must read the current build's secret and
 * checkout and write its publish directory, so its grants cover every
 * deploy's: `cairn/<project>/builds/*` and `deploy-builds/*`
 * (lib/deploy-pipeline.ts). A name made of ids alone would let one team's
 * build read another's secret or checkout, or overwrite its publish
 * directory before the worker imports it: deploy ids and site ids are
 * public (every deploy has its own address, `<deploy id lowercased>--<slug>.<sites domain>`,
 * posted as commit statuses and in notifications). So each name is the
 * deploy id and a part no build can make:
 *
 *   <deploy id>-<first 32 characters of base64url(HMAC-SHA256(key, deploy id))>
 *
 * The key is a random string in a secret of the stack's own
 * (BuildSecretNamesKey, outside both prefixes), which the worker alone may
 * read and the project's role may not; it is read once per worker
 * container, with the first build (BuildNames.key). 32 characters of
 * base64url are 192 bits; they are letters, digits, `-` and `_`, which a
 * secret's name ("ASCII letters, numbers, and the following characters:
 * /_+=.@-", https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_CreateSecret.html)
 * and an S3 key may hold. That page also asks not to end a secret's name
 * with a hyphen and six characters, which a partial ARN search could take
 * for Secrets Manager's own suffix; these secrets are only ever named
 * whole, never searched by partial ARN. Neither the project's role nor a
 * build may list the bucket or the secrets, so a name is found only by
 * who can make it.
 *
 * The name is the same every time for a deploy, with no state kept: a
 * repeated start must send a StartBuild request identical to the first
 * (its idempotencyToken is the deploy id, and "If you repeat the
 * StartBuild request with the same token, but change a parameter,
 * CodeBuild returns a parameter mismatch error",
 * https://docs.aws.amazon.com/codebuild/latest/APIReference/API_StartBuild.html),
 * and every path that reads or removes the secret or the files finds them
 * by the deploy id again. Without the key there is no name: a worker not
 * given it (CAIRN_BUILD_SECRET_NAMES_KEY_ARN unset) starts no build, rather
 * than fall back to a name a build could guess.
 */
import { createHmac } from 'node:crypto';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { onceUntilFailure } from '../core/once-until-failure.js';

/** Characters of the keyed part. */
export const KEYED_PART_LENGTH = 32;

/** One deploy's build name under `key`: its id, a hyphen, the keyed part. */
export const keyedBuildName = (key: string, deployId: string) =>
  `${deployId}-${createHmac('sha256', key).update(deployId).digest('base64url').slice(0, KEYED_PART_LENGTH)}`;

/** The deploy a keyed build name is of (the keyed part is fixed in length, so a hyphen in the id is no ambiguity); undefined for any other name. */
export function deployIdOfBuildName(name: string): string | undefined {
  return new RegExp(`^(.+)-[A-Za-z0-9_-]{${KEYED_PART_LENGTH}}$`).exec(name)?.[1];
}

/** Fewer characters than the stack generates (64) would be a key someone chose, or cut short. */
const NAMES_KEY_MIN_LENGTH = 32;

/** The key naming one stack's builds, read once per container. */
export class BuildNames {
  /** `namesKeyArn`: the stack's secret holding the key (CAIRN_BUILD_SECRET_NAMES_KEY_ARN); `secretsManager` loads the client. */
  constructor(
    private readonly secretsManager: () => Promise<SecretsManagerClient>,
    private readonly namesKeyArn: string | undefined,
  ) {}

  /** Read with the first build (a read that failed is tried again by the next). Never a name without it: that name is one a build could guess. */
  private readonly key = onceUntilFailure(async (): Promise<string> => {
    if (!this.namesKeyArn) {
      throw new Error(
        'CAIRN_BUILD_SECRET_NAMES_KEY_ARN is unset: no build can be given its files or secret variables without the key that names them',
      );
    }
    const { GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
    const out = await (await this.secretsManager()).send(new GetSecretValueCommand({ SecretId: this.namesKeyArn }));
    const key = out.SecretString ?? '';
    if (key.length < NAMES_KEY_MIN_LENGTH) {
      throw new Error(
        `the secret ${this.namesKeyArn} holds ${key.length} characters, fewer than the ${NAMES_KEY_MIN_LENGTH} of a key naming builds`,
      );
    }
    return key;
  });

  /** The deploy's build name (reads the key the first time). */
  async of(deployId: string): Promise<string> {
    return keyedBuildName(await this.key(), deployId);
  }
}
