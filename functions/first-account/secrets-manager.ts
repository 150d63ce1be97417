/**
 * The first account's secret in AWS Secrets Manager: read its value, and
 * write the credentials into it once. The stack creates the secret (with
 * its KMS key and the placeholder); this only reads and puts values.
 */
import { createHash } from 'node:crypto';
import {
  GetSecretValueCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { readSecretContent, type FirstAccountSecret, type SecretContent } from './secret-value.js';

export interface FirstAccountSecretStore {
  /** Which secret: its ARN, for logs and answers (never its value). */
  readonly id: string;
  read(): Promise<SecretContent>;
  /**
   * Makes `value` the secret's current value. The version's token is derived
   * from the secret, so the same call again is a no-op and a different value
   * is refused by Secrets Manager itself: written once, never overwritten.
   */
  write(value: FirstAccountSecret): Promise<void>;
}

/** The one version token the credentials are ever written with (32 to 64 characters). */
export function credentialsVersionToken(secretId: string): string {
  return `cairn-first-account-${createHash('sha256').update(secretId).digest('hex').slice(0, 40)}`;
}

export function secretsManagerStore(client: SecretsManagerClient, secretId: string): FirstAccountSecretStore {
  return {
    id: secretId,
    async read() {
      const out = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      return readSecretContent(out.SecretString);
    },
    async write(value) {
      try {
        await client.send(
          new PutSecretValueCommand({
            SecretId: secretId,
            SecretString: JSON.stringify(value),
            ClientRequestToken: credentialsVersionToken(secretId),
          }),
        );
      } catch (err) {
        // The message of this error names the version, never a value; say what it means here.
        if (err instanceof ResourceExistsException) {
          throw new Error(
            `the secret ${secretId} already holds first-account credentials written with other values; they are left as they are`,
          );
        }
        throw err;
      }
    },
  };
}
