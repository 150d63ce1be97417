/**
 * Identities at an OpenID Connect provider, in the accounts table: which
 * account a provider's subject signs in to.
 *
 *   OIDC#<sha256 of issuer and sub> / OIDC   accountId, issuer, sub, email (as the provider said it when linked), createdAt
 *
 * The key is the issuer with the provider's `sub`, never the e-mail: an
 * e-mail changes hands at a provider, and two providers may both vouch
 * for one; `sub` is stable and unique within its issuer (OpenID Connect
 * Core 1.0, section 2, "sub"). Digested so that the key has one length
 * whatever either is. Written only where nothing is, so one subject signs
 * in to one account.
 */
import { createHash } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from './dynamo.js';

export interface OidcIdentity {
  accountId: string;
  issuer: string;
  sub: string;
  email: string;
  createdAt: string;
}

const keyOf = (issuer: string, sub: string) => ({
  pk: `OIDC#${createHash('sha256').update(`${issuer}\n${sub}`).digest('hex')}`,
  sk: 'OIDC',
});

/** The identity's item, for the transaction that makes it (put only where nothing is, as createAccount's alsoPut does). */
export const oidcIdentityItem = (identity: OidcIdentity): Record<string, unknown> => ({
  ...keyOf(identity.issuer, identity.sub),
  ...identity,
});

/** The identity of `sub` at `issuer`, or undefined. */
export async function oidcIdentity(db: Database, issuer: string, sub: string): Promise<OidcIdentity | undefined> {
  const out = await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: keyOf(issuer, sub), ConsistentRead: true }));
  if (!out.Item) return undefined;
  const { accountId, email, createdAt } = out.Item;
  return { accountId, issuer, sub, email, createdAt } as OidcIdentity;
}
