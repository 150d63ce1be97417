/**
 * A deploy's secret build variables on their way to its CodeBuild build.
 * StartBuild's PLAINTEXT variables are shown by CodeBuild's console and
 * BatchGetBuilds ("PLAINTEXT environment variables can be displayed in
 * plain text using the AWS CodeBuild console and the AWS CLI. For sensitive
 * values, we recommend you use an environment variable of type
 * PARAMETER_STORE or SECRETS_MANAGER",
 * https://docs.aws.amazon.com/codebuild/latest/APIReference/API_EnvironmentVariable.html),
 * so the worker writes the opened values into one Secrets Manager secret
 * per deploy, a JSON object by variable name, just before StartBuild, and
 * the build is given references to it, `<secret-id>:<json-key>`, which
 * CodeBuild resolves inside the build
 * (https://docs.aws.amazon.com/codebuild/latest/userguide/build-spec-ref.html#build-spec.env.secrets-manager).
 * The secret is force-deleted when the build ends, fails, is stopped, or
 * does not start (codebuild-runner.ts).
 *
 *   cairn/<project>/builds/<deploy id>-<32 characters>     {"API_KEY": "...", ...}
 *
 * The CodeBuild project's name tells one stack's builds from another's in
 * the account; the stack grants on `cairn/<project>/builds/*`
 * (lib/deploy-pipeline.ts): the worker creates, updates and deletes there,
 * the project's role only reads.
 *
 * Secrets Manager rather than Parameter Store (one SecureString per
 * variable), for what Cairn's variables are (up to 100 a site, values up
 * to 16,384 characters: functions/graphql/site-input.ts):
 *
 * - Size. A parameter holds 4 KB (standard tier) or 8 KB (advanced,
 *   charged) (https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html),
 *   less than one value Cairn accepts; a secret holds 65,536 bytes
 *   (https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html),
 *   every variable of almost any site. A deploy whose secrets come to
 *   more is refused with the reason (BuildSecretsTooLarge), never sent
 *   as PLAINTEXT instead.
 * - Calls. One CreateSecret and one DeleteSecret per deploy, whatever the
 *   number of variables, against 50 a second each (same page); Parameter
 *   Store would take a PutParameter per variable, within a throughput
 *   shared with every GetParameter of the account
 *   (https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-throughput.html),
 *   and DeleteParameters names 10 at a time.
 * - Cost. $0.40 a secret-month prorated by the hour
 *   (https://aws.amazon.com/secrets-manager/pricing/): a build of an hour
 *   costs about $0.0006; standard parameters would be free.
 * - Deletion. DeleteSecret with ForceDeleteWithoutRecovery skips the
 *   recovery window, and on a secret already gone it does not fail
 *   ("If you forcibly delete an already deleted or nonexistent secret, the
 *   operation does not return ResourceNotFoundException",
 *   https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_DeleteSecret.html),
 *   so every path may remove it again safely. The deletion itself is
 *   asynchronous and a name cannot be taken again at once (same page);
 *   a name is never taken again here: a retried deploy is a new deploy
 *   with its own id. (DeleteParameters is immediate but asks 30 seconds
 *   before a name is reused,
 *   https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_DeleteParameters.html.)
 *   Parameter Store's one advantage is an Expiration policy (advanced
 *   parameters only, https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-policies.html);
 *   here a secret is removed by the worker on each path a build ends by,
 *   including the event of a build whose deploy ended without it
 *   (deploy-worker/worker.ts).
 * - Key. The secret is encrypted with Secrets Manager's AWS managed key
 *   (aws/secretsmanager, no KmsKeyId), free of charge, whose key policy
 *   lets principals of the account use it only through Secrets Manager
 *   (https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html):
 *   the project's role needs secretsmanager:GetSecretValue
 *   (https://docs.aws.amazon.com/codebuild/latest/userguide/create-project-cli.html)
 *   and no kms:Decrypt. The stack's own key (the one sealing site secrets)
 *   would have to be opened to that role, and a build's commands run with
 *   that role's credentials.
 *
 * What the role can read, a build's commands can: the build's commands run
 * with the project role's credentials, and the role must read the current
 * build's secret, so its grant covers the whole prefix. So each name also
 * carries a part no build can know, made with the stack's key
 * (build-names.ts, which names the build's files the same way):
 *
 *   cairn/<project>/builds/<deploy id>-<first 32 characters of base64url(HMAC-SHA256(key, deploy id))>
 *
 * The project's role may not list secrets; the worker lists their names
 * (never values) to remove what builds left behind (build-leftovers.ts).
 */
import type { EnvironmentVariable } from '@aws-sdk/client-codebuild';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { BuildNames } from './build-names.js';

/** Where the build secrets of the stack whose CodeBuild project is `project` live (the stack's grants cover this prefix). */
export const buildSecretsPrefix = (project: string) => `cairn/${project}/builds/`;

/** A secret's value may hold this many bytes (SecretString, https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html). */
export const SECRET_VALUE_MAX_BYTES = 65_536;

/** The deploy's secret variables do not fit in one secret. */
export class BuildSecretsTooLarge extends Error {
  override name = 'BuildSecretsTooLarge';
}

export class BuildSecrets {
  /** `secretsManager` loads the client (with the first build that has secrets: the worker's start-up does not carry it); `names` names the deploys' secrets. */
  constructor(
    private readonly secretsManager: () => Promise<SecretsManagerClient>,
    private readonly project: string,
    private readonly names: BuildNames,
  ) {}

  /** The name of the deploy's secret (reads the key the first time). */
  async secretId(deployId: string): Promise<string> {
    return `${buildSecretsPrefix(this.project)}${await this.names.of(deployId)}`;
  }

  /**
   * Writes `values` (name to opened value) as the deploy's secret and
   * returns the build's variables that refer to them. A second write for
   * the same deploy (a repeated start) finds the secret there and puts the
   * same version again, which Secrets Manager ignores: the version's token
   * is made of the deploy id, and "If a version with this value already exists
   * and that version's SecretString ... values are the same as those in
   * the request, then the request is ignored"
   * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_PutSecretValue.html).
   */
  async write(deployId: string, values: Record<string, string>): Promise<EnvironmentVariable[]> {
    const value = JSON.stringify(values);
    const bytes = Buffer.byteLength(value);
    if (bytes > SECRET_VALUE_MAX_BYTES) {
      throw new BuildSecretsTooLarge(
        `the site's secret variables come to ${Math.ceil(bytes / 1024)} KiB, more than the 64 KiB a CodeBuild build can be given as secrets (one Secrets Manager secret): shorten them or make the ones that are not secret plain variables`,
      );
    }
    const { CreateSecretCommand, PutSecretValueCommand, ResourceExistsException } = await import('@aws-sdk/client-secrets-manager');
    const client = await this.secretsManager();
    const secretId = await this.secretId(deployId);
    // The same token each time for the deploy: 32 to 64 characters (a deploy id is 22).
    const version = `cairn-build-${deployId}`.padEnd(32, '-');
    try {
      await client.send(
        new CreateSecretCommand({
          Name: secretId,
          Description: `Cairn: the secret build variables of deploy ${deployId}, removed when its build ends`,
          SecretString: value,
          ClientRequestToken: version,
        }),
      );
    } catch (err) {
      if (!(err instanceof ResourceExistsException)) throw err;
      await client.send(new PutSecretValueCommand({ SecretId: secretId, SecretString: value, ClientRequestToken: version }));
    }
    return Object.keys(values).map((name) => ({ name, type: 'SECRETS_MANAGER', value: `${secretId}:${name}` }));
  }

  /** Removes the deploy's secret at once (no recovery window); a secret already gone, or never written, is no error. */
  async remove(deployId: string): Promise<void> {
    await this.removeSecret(await this.secretId(deployId));
  }

  /**
   * Removes the secrets a build's variables refer to (a stopped build's,
   * as StopBuild returns it), those of this stack's builds only.
   */
  async removeReferenced(variables: readonly EnvironmentVariable[]): Promise<void> {
    const prefix = buildSecretsPrefix(this.project);
    const ids = new Set(
      variables
        .filter((v) => v.type === 'SECRETS_MANAGER' && v.value?.startsWith(prefix))
        .map((v) => v.value!.slice(0, v.value!.indexOf(':') < 0 ? undefined : v.value!.indexOf(':'))),
    );
    for (const id of ids) await this.removeSecret(id);
  }

  private async removeSecret(secretId: string): Promise<void> {
    const { DeleteSecretCommand } = await import('@aws-sdk/client-secrets-manager');
    const client = await this.secretsManager();
    await client.send(new DeleteSecretCommand({ SecretId: secretId, ForceDeleteWithoutRecovery: true }));
  }
}
