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
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from './dynamo.js';
import { queryAll } from './pages.js';
import { writtenIf } from './tables.js';

export interface OidcIdentity {
  accountId: string;
  issuer: string;
  sub: string;
  email: string;
  createdAt: string;
}

/** The identity's id: the digest of issuer and sub, which names it in lists and unlinking (never the sub itself). */
const idOf = (issuer: string, sub: string) => createHash('sha256').update(`${issuer}\n${sub}`).digest('hex');

const keyOf = (issuer: string, sub: string) => ({ pk: `OIDC#${idOf(issuer, sub)}`, sk: 'OIDC' });

/**
 * The identity's item, for the transaction that makes it (put only where
 * nothing is, as createAccount's alsoPut does); listed by account through
 * gsi1 (items made before it was indexed are not listed until linked again).
 */
export const oidcIdentityItem = (identity: OidcIdentity): Record<string, unknown> => ({
  ...keyOf(identity.issuer, identity.sub),
  ...identity,
  gsi1pk: `ACCOUNT#${identity.accountId}`,
  gsi1sk: `OIDC#${idOf(identity.issuer, identity.sub)}`,
});

/** A linked identity as Settings lists it: its id (a digest), the issuer, the e-mail the provider gave, when. */
export interface LinkedIdentity {
  id: string;
  issuer: string;
  email: string;
  createdAt: string;
}

/**
 * Links a provider's subject to an account: `linked`, `already` (to this
 * account), or `taken` (another account's: never moved).
 */
export async function linkOidcIdentity(db: Database, identity: OidcIdentity): Promise<'linked' | 'already' | 'taken'> {
  const put = await writtenIf(
    db.doc.send(
      new PutCommand({ TableName: db.tables.accounts, Item: oidcIdentityItem(identity), ConditionExpression: 'attribute_not_exists(pk)' }),
    ),
  );
  if (put) return 'linked';
  const existing = await oidcIdentity(db, identity.issuer, identity.sub);
  return existing?.accountId === identity.accountId ? 'already' : 'taken';
}

/** The account's linked identities. */
export async function linkedIdentities(db: Database, accountId: string): Promise<LinkedIdentity[]> {
  const items = await queryAll(db, {
    TableName: db.tables.accounts,
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :account AND begins_with(gsi1sk, :oidc)',
    ExpressionAttributeValues: { ':account': `ACCOUNT#${accountId}`, ':oidc': 'OIDC#' },
  });
  return items.map((item) => ({
    id: String(item.gsi1sk).slice('OIDC#'.length),
    issuer: item.issuer as string,
    email: item.email as string,
    createdAt: item.createdAt as string,
  }));
}

/**
 * Unlinks one of the account's identities, in one transaction with a
 * check that the other way in (`otherWay`) is still there: the person's
 * password (known, not one a provider sign-up made up) or a passkey.
 * False when nothing was unlinked (not the account's, or the other way is gone).
 */
export async function unlinkOidcIdentity(
  db: Database,
  accountId: string,
  id: string,
  otherWay: 'password' | 'passkey',
  email?: string,
): Promise<boolean> {
  if (!/^[0-9a-f]{64}$/.test(id)) return false;
  const table = db.tables.accounts;
  const check =
    otherWay === 'password'
      ? {
          Key: { pk: `PERSON#${email}`, sk: 'PERSON' },
          ConditionExpression: 'accountId = :a AND attribute_not_exists(passwordUnknown)',
        }
      : { Key: { pk: `ACCOUNT#${accountId}`, sk: 'PASSKEYS' }, ConditionExpression: 'accountId = :a AND #c >= :one' };
  return writtenIf(
    db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: table,
              Key: { pk: `OIDC#${id}`, sk: 'OIDC' },
              ConditionExpression: 'accountId = :a',
              ExpressionAttributeValues: { ':a': accountId },
            },
          },
          {
            ConditionCheck: {
              TableName: table,
              ...check,
              ...(otherWay === 'passkey'
                ? { ExpressionAttributeNames: { '#c': 'count' }, ExpressionAttributeValues: { ':a': accountId, ':one': 1 } }
                : { ExpressionAttributeValues: { ':a': accountId } }),
            },
          },
        ],
      }),
    ),
  );
}

/** The identity of `sub` at `issuer`, or undefined. */
export async function oidcIdentity(db: Database, issuer: string, sub: string): Promise<OidcIdentity | undefined> {
  const out = await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: keyOf(issuer, sub), ConsistentRead: true }));
  if (!out.Item) return undefined;
  const { accountId, email, createdAt } = out.Item;
  return { accountId, issuer, sub, email, createdAt } as OidcIdentity;
}
