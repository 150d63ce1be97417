/**
 * People: the e-mail and password an account can be signed in with (an
 * account has one such identity at most), in the accounts table.
 *
 *   PERSON#<e-mail> / PERSON   the identity: accountId, email, passwordHash, createdAt
 *   ACCOUNT#<id> / PERSON      the account's identity, by account: email, createdAt
 *
 * The e-mail is normalised (trimmed, lower case) before it names anything,
 * so `Ada@Example.org ` and `ada@example.org` are one person. Both items
 * are written in one transaction, each only where nothing is: the first
 * keeps an e-mail to one account, the second an account to one e-mail.
 * The password is kept only as its scrypt hash (core/auth/passwords.ts),
 * with the parameters it was made with.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { TransactItem } from './teams.js';
import type { Database } from './dynamo.js';
import { ConflictError } from './errors.js';
import { writtenIf } from './tables.js';

export interface PersonIdentity {
  accountId: string;
  email: string;
  passwordHash: string;
  createdAt: string;
  /**
   * The hash is of a password nobody knows (an account made by signing in
   * with an OpenID Connect provider); a reset link's new password clears it.
   */
  passwordUnknown?: boolean;
}

/** The longest e-mail address SMTP carries (RFC 5321's 254-character path, less its brackets). */
export const EMAIL_MAX_LENGTH = 254;

/** The e-mail as it names a person: trimmed and in lower case (NFC, so one address has one spelling). */
export const normaliseEmail = (email: string): string => email.normalize('NFC').trim().toLowerCase();

/** A plausible address: one @, something on each side, a dot in the domain, no spaces or control characters. */
export function isPlausibleEmail(email: string): boolean {
  return (
    email.length <= EMAIL_MAX_LENGTH && /^[^\s@\u0000-\u001f\u007f]+@[^\s@\u0000-\u001f\u007f]+\.[^\s@\u0000-\u001f\u007f]+$/.test(email)
  );
}

/** The identity's two items, for a transaction that makes it: with a new account (sign-up) or for an existing one (`add`). */
export function personItems(identity: PersonIdentity): Array<Record<string, unknown>> {
  const email = normaliseEmail(identity.email);
  return [
    { pk: `PERSON#${email}`, sk: 'PERSON', ...identity, email },
    { pk: `ACCOUNT#${identity.accountId}`, sk: 'PERSON', accountId: identity.accountId, email, createdAt: identity.createdAt },
  ];
}

export class PersonStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** Gives an existing account an e-mail and password identity; ConflictError when the e-mail is taken or the account has one. */
  async add(accountId: string, email: string, passwordHash: string): Promise<PersonIdentity> {
    const identity: PersonIdentity = { accountId, email: normaliseEmail(email), passwordHash, createdAt: this.now().toISOString() };
    const made = await writtenIf(
      this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            ...personItems(identity).map((Item) => ({
              Put: { TableName: this.table, Item, ConditionExpression: 'attribute_not_exists(pk)' },
            })),
            {
              ConditionCheck: {
                TableName: this.table,
                Key: { pk: `ACCOUNT#${accountId}`, sk: 'ACCOUNT' },
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
          ],
        }),
      ),
    );
    if (!made)
      throw new ConflictError('the e-mail belongs to another account, the account has an e-mail already, or there is no such account');
    return identity;
  }

  /** The identity of an e-mail (normalised here), or undefined. */
  async byEmail(email: string): Promise<PersonIdentity | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `PERSON#${normaliseEmail(email)}`, sk: 'PERSON' }, ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    const { accountId, email: stored, passwordHash, createdAt, passwordUnknown } = out.Item;
    return {
      accountId,
      email: stored,
      passwordHash,
      createdAt,
      ...(passwordUnknown === true ? { passwordUnknown } : {}),
    } as PersonIdentity;
  }

  /** The e-mail an account signs in with, or undefined for an account that has none (made by the operator, with keys only). */
  async emailOf(accountId: string): Promise<string | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `ACCOUNT#${accountId}`, sk: 'PERSON' }, ConsistentRead: true }),
    );
    return out.Item?.email as string | undefined;
  }

  /** The write that sets a new password's hash, for a transaction (a reset link's): only while the hash is still `identity`'s. */
  hashChange(identity: PersonIdentity, passwordHash: string): TransactItem {
    return {
      Update: {
        TableName: this.table,
        Key: { pk: `PERSON#${identity.email}`, sk: 'PERSON' },
        // A password set by a reset link is one its person knows.
        UpdateExpression: 'SET passwordHash = :new REMOVE passwordUnknown',
        ConditionExpression: 'passwordHash = :old',
        ExpressionAttributeValues: { ':new': passwordHash, ':old': identity.passwordHash },
      },
    };
  }

  /** Replaces a hash made with weaker parameters by one made with the current ones, unless the password changed meanwhile. */
  async replaceHash(identity: PersonIdentity, passwordHash: string): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: `PERSON#${identity.email}`, sk: 'PERSON' },
          UpdateExpression: 'SET passwordHash = :new',
          ConditionExpression: 'passwordHash = :old',
          ExpressionAttributeValues: { ':new': passwordHash, ':old': identity.passwordHash },
        }),
      ),
    );
  }
}
