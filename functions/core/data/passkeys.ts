/**
 * Passkeys (WebAuthn credentials) people sign in with, the account's
 * choice to ask for one after the password, and the challenges handed out
 * for them, in the accounts table.
 *
 *   PASSKEY#<sha256 of the credential id> / PASSKEY   accountId, credentialId, publicKey (COSE, base64url), counter,
 *                                                     transports, name, createdAt, lastUsedAt
 *                                                     gsi1: ACCOUNT#<id> / PASSKEY#<createdAt>#<credential id>
 *   ACCOUNT#<id> / PASSKEYS                           count (passkeys the account has), required (ask one after the password)
 *   PASSKEYCHALLENGE#<sha256 of the challenge> / CHALLENGE
 *                                                     purpose, accountId, sessionId (registration), expiresAt
 *
 * The credential id is the authenticator's, up to 1,023 bytes (WebAuthn
 * Level 3, "Credential ID"), so the key is its digest and the id itself an
 * attribute. A passkey and the account's count change in one transaction,
 * so the count is exact, and "remove the last passkey while one is
 * required" is refused by a condition on it, however many removals race.
 *
 * A challenge is single use: taking it is a conditional delete (purpose,
 * expiry and, for a registration, the session it was made for), so of two
 * requests with one challenge only one gets it. It lasts
 * PASSKEY_LIMITS.challengeSeconds; `expiresAt` (the table's time to live)
 * lets DynamoDB delete one never used.
 */
import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { ConflictError } from './errors.js';
import { queryAll } from './pages.js';
import { writtenIf } from './tables.js';

export const PASSKEY_LIMITS = {
  /** A challenge is answered within this, or not at all: 5 minutes (the browser's own timeout is one minute). */
  challengeSeconds: 5 * 60,
  /** Passkeys per account: each is a key in the list and in every second-factor challenge. */
  perAccount: 20,
  /** A passkey's name, in characters. */
  nameLength: 64,
};

export interface Passkey {
  accountId: string;
  /** The authenticator's credential id, base64url: names the passkey in lists and removals. */
  credentialId: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  /** The signature counter last seen (0 for authenticators that keep none). */
  counter: number;
  transports: string[];
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** What a challenge was handed out for. */
export type ChallengePurpose = 'register' | 'sign-in' | 'second-factor';

export interface PasskeyChallenge {
  purpose: ChallengePurpose;
  challenge: string;
  /** The account it is for (registration and second factor); a usernameless sign-in's names none. */
  accountId?: string;
  /** The session a registration's challenge was handed to. */
  sessionId?: string;
}

export class PasskeyConflictError extends ConflictError {
  constructor(
    readonly why: 'taken' | 'too-many' | 'last-required' | 'none',
    message: string,
  ) {
    super(message);
  }
}

const passkeyKey = (credentialId: string) => ({ pk: `PASSKEY#${tokenDigest(credentialId)}`, sk: 'PASSKEY' });
const settingsKey = (accountId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: 'PASSKEYS' });
const challengeKey = (challenge: string) => ({ pk: `PASSKEYCHALLENGE#${tokenDigest(challenge)}`, sk: 'CHALLENGE' });

function passkeyFrom(item: Record<string, unknown>): Passkey {
  return {
    accountId: item.accountId as string,
    credentialId: item.credentialId as string,
    publicKey: item.publicKey as string,
    counter: Number(item.counter ?? 0),
    transports: (item.transports as string[] | undefined) ?? [],
    name: item.name as string,
    createdAt: item.createdAt as string,
    lastUsedAt: (item.lastUsedAt as string | null | undefined) ?? null,
  };
}

export class PasskeyStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** Keeps a challenge handed out now, for PASSKEY_LIMITS.challengeSeconds. */
  async putChallenge(challenge: PasskeyChallenge): Promise<void> {
    const now = this.now().getTime();
    await this.db.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...challengeKey(challenge.challenge),
          purpose: challenge.purpose,
          ...(challenge.accountId ? { accountId: challenge.accountId } : {}),
          ...(challenge.sessionId ? { sessionId: challenge.sessionId } : {}),
          expiresAt: Math.ceil(now / 1000) + PASSKEY_LIMITS.challengeSeconds,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  /**
   * Takes a challenge (deletes it) if it was handed out for `purpose`, has
   * not expired, and (`sessionId`) was handed to that session; undefined
   * when it was not, or was taken already. Of `purposes`, any one will do.
   */
  async takeChallenge(challenge: string, purposes: ChallengePurpose[], sessionId?: string): Promise<PasskeyChallenge | undefined> {
    const values: Record<string, unknown> = { ':now': Math.floor(this.now().getTime() / 1000) };
    purposes.forEach((p, i) => (values[`:p${i}`] = p));
    if (sessionId) values[':s'] = sessionId;
    try {
      const out = await this.db.doc.send(
        new DeleteCommand({
          TableName: this.table,
          Key: challengeKey(challenge),
          ConditionExpression: `purpose IN (${purposes.map((_, i) => `:p${i}`).join(', ')}) AND expiresAt > :now${sessionId ? ' AND sessionId = :s' : ''}`,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_OLD',
        }),
      );
      const item = out.Attributes!;
      return {
        purpose: item.purpose as ChallengePurpose,
        challenge,
        ...(item.accountId ? { accountId: item.accountId as string } : {}),
        ...(item.sessionId ? { sessionId: item.sessionId as string } : {}),
      };
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
      throw err;
    }
  }

  /** Adds a passkey to its account; PasskeyConflictError when the credential is known already or the account has its most. */
  async add(passkey: Omit<Passkey, 'createdAt' | 'lastUsedAt'>): Promise<Passkey> {
    const created: Passkey = { ...passkey, createdAt: this.now().toISOString(), lastUsedAt: null };
    const made = await writtenIf(
      this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.table,
                Item: {
                  ...passkeyKey(passkey.credentialId),
                  ...created,
                  gsi1pk: `ACCOUNT#${passkey.accountId}`,
                  gsi1sk: `PASSKEY#${created.createdAt}#${passkey.credentialId}`,
                },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Update: {
                TableName: this.table,
                Key: settingsKey(passkey.accountId),
                UpdateExpression: 'SET accountId = :a, #c = if_not_exists(#c, :zero) + :one',
                ConditionExpression: 'attribute_not_exists(#c) OR #c < :most',
                ExpressionAttributeNames: { '#c': 'count' },
                ExpressionAttributeValues: { ':a': passkey.accountId, ':zero': 0, ':one': 1, ':most': PASSKEY_LIMITS.perAccount },
              },
            },
          ],
        }),
      ),
    );
    if (made) return created;
    if (await this.get(passkey.credentialId)) throw new PasskeyConflictError('taken', 'This passkey is registered here already');
    throw new PasskeyConflictError('too-many', `An account has ${PASSKEY_LIMITS.perAccount} passkeys at most: remove one first`);
  }

  /** The passkey of a credential id, whoever's it is, or undefined. */
  async get(credentialId: string): Promise<Passkey | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: passkeyKey(credentialId), ConsistentRead: true }));
    return out.Item ? passkeyFrom(out.Item) : undefined;
  }

  /** The account's passkeys, oldest first. */
  async list(accountId: string): Promise<Passkey[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :account AND begins_with(gsi1sk, :passkey)',
      ExpressionAttributeValues: { ':account': `ACCOUNT#${accountId}`, ':passkey': 'PASSKEY#' },
    });
    return items.map(passkeyFrom);
  }

  /** Whether the account asks for a passkey after the password, and how many it has. */
  async settings(accountId: string): Promise<{ required: boolean; count: number }> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: settingsKey(accountId), ConsistentRead: true }));
    return { required: out.Item?.required === true, count: Number(out.Item?.count ?? 0) };
  }

  /**
   * Records a use: the counter moves to `counter` only from the value the
   * assertion was checked against, so of two uses of one signature (or a
   * use racing a removal) one fails; false then.
   */
  async recordUse(passkey: Passkey, counter: number): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: passkeyKey(passkey.credentialId),
          UpdateExpression: 'SET #c = :new, lastUsedAt = :now',
          ConditionExpression: '#c = :old AND accountId = :a',
          ExpressionAttributeNames: { '#c': 'counter' },
          ExpressionAttributeValues: {
            ':new': counter,
            ':old': passkey.counter,
            ':now': this.now().toISOString(),
            ':a': passkey.accountId,
          },
        }),
      ),
    );
  }

  /** Renames one of the account's passkeys: the passkey as it is now, or undefined when the account has no such one. */
  async rename(accountId: string, credentialId: string, name: string): Promise<Passkey | undefined> {
    try {
      const out = await this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: passkeyKey(credentialId),
          UpdateExpression: 'SET #n = :name',
          ConditionExpression: 'accountId = :a',
          ExpressionAttributeNames: { '#n': 'name' },
          ExpressionAttributeValues: { ':name': name, ':a': accountId },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return passkeyFrom(out.Attributes!);
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
      throw err;
    }
  }

  /**
   * Removes one of the account's passkeys; false when it has no such one.
   * PasskeyConflictError('last-required') when it is the last and the
   * account asks for a passkey after the password: that must be turned
   * off first, by its person, not as a side effect of a removal.
   */
  async remove(accountId: string, credentialId: string): Promise<boolean> {
    const removed = await writtenIf(
      this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.table,
                Key: passkeyKey(credentialId),
                ConditionExpression: 'accountId = :a',
                ExpressionAttributeValues: { ':a': accountId },
              },
            },
            {
              Update: {
                TableName: this.table,
                Key: settingsKey(accountId),
                UpdateExpression: 'SET #c = #c - :one',
                ConditionExpression: '#c >= :one AND (attribute_not_exists(required) OR required = :no OR #c > :one)',
                ExpressionAttributeNames: { '#c': 'count' },
                ExpressionAttributeValues: { ':one': 1, ':no': false },
              },
            },
          ],
        }),
      ),
    );
    if (removed) return true;
    const passkey = await this.get(credentialId);
    if (!passkey || passkey.accountId !== accountId) return false;
    throw new PasskeyConflictError(
      'last-required',
      'This is your last passkey, and your account asks for one after the password: turn that off first',
    );
  }

  /** Sets whether the account asks for a passkey after the password; turning it on needs a passkey (PasskeyConflictError('none')). */
  async setRequired(accountId: string, required: boolean): Promise<void> {
    const set = await writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: settingsKey(accountId),
          UpdateExpression: 'SET accountId = :a, required = :r',
          ...(required
            ? {
                ConditionExpression: '#c >= :one',
                ExpressionAttributeNames: { '#c': 'count' },
                ExpressionAttributeValues: { ':a': accountId, ':r': true, ':one': 1 },
              }
            : { ExpressionAttributeValues: { ':a': accountId, ':r': false } }),
        }),
      ),
    );
    if (!set) throw new PasskeyConflictError('none', 'Register a passkey first: asking for one needs one');
  }
}
