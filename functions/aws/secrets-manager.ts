/**
 * The first account's secret in AWS Secrets Manager (the custom resource's
 * FirstAccountSecretStore): read its value, and write the credentials into
 * it once. The stack creates the secret (with its KMS key and the
 * placeholder); this only reads and puts values.
 */
import { createHash } from 'node:crypto';
import {
  GetSecretValueCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { readSecretContent } from '../first-account/secret-value.js';
import type { FirstAccountSecretStore } from '../first-account/first-account.js';

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
