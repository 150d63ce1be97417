/**
 * What the first account's secret in AWS Secrets Manager holds. Pure data:
 * the stack (lib/first-account.ts) creates the secret with PENDING_VALUE,
 * the custom resource's handler replaces that, once, with the account's
 * credentials as one JSON object.
 */

/**
 * The secret's value until the first account is made. CloudFormation writes
 * a secret's value again only when this template value changes, so it must
 * never change: a new placeholder would be written over the credentials.
 */
export const PENDING_VALUE = JSON.stringify({ cairn: 'first-account', status: 'pending' });

/** The secret's value once the first account exists (`aws secretsmanager get-secret-value` prints it). */
export interface FirstAccountSecret {
  cairn: 'first-account';
  accountName: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The GraphQL API key (`Authorization: <apiKey>`). */
  apiKey: string;
  defaultBucket: string;
  region: string;
  /** The endpoints as the first deploy knew them; the stack's outputs are the current ones. */
  storageEndpoint?: string;
  graphqlUrl?: string;
  gatewayUrl?: string;
  /**
   * The one-time link that gives the account its owner's e-mail and
   * password in the web app (7 days, once: core/auth/first-owner.ts); set
   * when the stack gave the GraphQL URL, whose origin serves the web app.
   */
  welcomeUrl?: string;
  createdAt: string;
}

/** What a secret's value says: still the placeholder, Cairn's credentials, or something Cairn did not write. */
export type SecretContent = { kind: 'pending' } | { kind: 'credentials'; value: FirstAccountSecret } | { kind: 'foreign' };

const REQUIRED = ['accountName', 'accessKeyId', 'secretAccessKey', 'apiKey', 'defaultBucket'] as const;

export function readSecretContent(value: string | undefined): SecretContent {
  if (value === PENDING_VALUE) return { kind: 'pending' };
  if (value === undefined) return { kind: 'foreign' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return { kind: 'foreign' };
  }
  const record = parsed as Record<string, unknown> | null;
  if (record?.cairn !== 'first-account' || !REQUIRED.every((field) => typeof record[field] === 'string' && record[field] !== ''))
    return { kind: 'foreign' };
  return { kind: 'credentials', value: record as unknown as FirstAccountSecret };
}
