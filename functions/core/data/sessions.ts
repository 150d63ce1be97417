/**
 * Sessions of people signed in to the web app, in the accounts table.
 *
 *   SESSION#<sha256 of the secret> / SESSION   id (public), accountId, createdAt, lastSeenAt, userAgent,
 *                                              address, expiresAt       gsi1: ACCOUNT#<id> / SESSION#<createdAt>#<id>
 *   ACCOUNT#<id> / SESSIONS                    notBefore: sessions made before it are signed out,
 *                                              but `kept` (a session id: the one that changed the password)
 *
 * The secret (256 random bits, the cookie's value) is never stored, only
 * its SHA-256, as API keys are: a copy of the table signs no one in. The
 * public `id` names a session in the list of one's sessions.
 *
 * A session ends SESSION_LIMITS.idleSeconds after it was last used, and
 * SESSION_LIMITS.absoluteSeconds after it began whatever its use; its
 * `expiresAt` (epoch seconds, the table's time to live) is the latter, so
 * DynamoDB deletes it some time after; until then (and always in the local
 * database, which keeps expired items) every read checks both.
 * "Sign out everywhere" sets the account's `notBefore` and deletes the
 * sessions listed: a session begun a moment before, which the index
 * (eventually consistent) might not list yet, is refused by the former.
 */
import { BatchWriteCommand, DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { newId, tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { queryAll } from './pages.js';
import { untilNoneLeft } from '../retry.js';

export const SESSION_LIMITS = {
  /** Unused this long, a session ends: 7 days. */
  idleSeconds: 7 * 24 * 3600,
  /** Used or not, a session ends this long after sign-in: 30 days. */
  absoluteSeconds: 30 * 24 * 3600,
  /** `lastSeenAt` is written again only when it is older than this, not on every request. */
  touchSeconds: 60,
  /** A user agent is kept to this many characters. */
  userAgentLength: 256,
};

export interface Session {
  /** Names the session in lists; not the secret. */
  id: string;
  accountId: string;
  createdAt: string;
  lastSeenAt: string;
  userAgent: string | null;
  address: string | null;
}

/** Why a secret signs no one in. */
export type SessionRefusal = 'unknown' | 'idle' | 'expired' | 'signed-out';

/** A session's secret as the cookie carries it: `s1.` and 43 base64url characters (256 bits). */
const SECRET_PATTERN = /^s1\.[A-Za-z0-9_-]{43}$/;

export class SessionStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** A new session for the account; the secret is returned here and never again. */
  async create(
    accountId: string,
    client: { userAgent?: string | null; address?: string | null },
  ): Promise<{ session: Session; secret: string }> {
    const secret = `s1.${randomBytes(32).toString('base64url')}`;
    const now = this.now();
    const session: Session = {
      id: newId(),
      accountId,
      createdAt: now.toISOString(),
      lastSeenAt: now.toISOString(),
      userAgent: client.userAgent ? client.userAgent.slice(0, SESSION_LIMITS.userAgentLength) : null,
      address: client.address ?? null,
    };
    const digest = tokenDigest(secret);
    await this.db.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: `SESSION#${digest}`,
          sk: 'SESSION',
          ...session,
          digest,
          expiresAt: Math.floor(now.getTime() / 1000) + SESSION_LIMITS.absoluteSeconds,
          gsi1pk: `ACCOUNT#${accountId}`,
          gsi1sk: `SESSION#${session.createdAt}#${session.id}`,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return { session, secret };
  }

  /**
   * The session a secret opens, its last use moved to now (at most once a
   * minute), or why it opens none. Reads the session, then its account's
   * `notBefore`.
   */
  async open(secret: string): Promise<{ session: Session } | { refused: SessionRefusal }> {
    if (!SECRET_PATTERN.test(secret)) return { refused: 'unknown' };
    const digest = tokenDigest(secret);
    const item = await this.db.reader.get(this.table, { pk: `SESSION#${digest}`, sk: 'SESSION' });
    if (!item) return { refused: 'unknown' };
    const session = sessionFromItem(item);
    const now = this.now().getTime();
    const refusal = this.refusal(session, now);
    if (refusal) return { refused: refusal };
    const marker = await this.db.reader.get(this.table, { pk: `ACCOUNT#${session.accountId}`, sk: 'SESSIONS' });
    if (signedOutBy(marker, session)) return { refused: 'signed-out' };
    if (now - Date.parse(session.lastSeenAt) > SESSION_LIMITS.touchSeconds * 1000) {
      session.lastSeenAt = new Date(now).toISOString();
      // Only while it still exists: a sign-out a moment ago must not be undone by this write.
      await this.db.doc
        .send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: `SESSION#${digest}`, sk: 'SESSION' },
            UpdateExpression: 'SET lastSeenAt = :now',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':now': session.lastSeenAt },
          }),
        )
        .catch((err: Error) => {
          if (err.name !== 'ConditionalCheckFailedException') throw err;
        });
    }
    return { session };
  }

  /** Why a session read back is over, or undefined while it lasts. */
  private refusal(session: Session, now: number): SessionRefusal | undefined {
    if (now >= Date.parse(session.createdAt) + SESSION_LIMITS.absoluteSeconds * 1000) return 'expired';
    if (now >= Date.parse(session.lastSeenAt) + SESSION_LIMITS.idleSeconds * 1000) return 'idle';
    return undefined;
  }

  /** The account's sessions that still last, newest first. */
  async list(accountId: string): Promise<Session[]> {
    return (await this.listItems(accountId)).map(({ session }) => session);
  }

  private async listItems(accountId: string): Promise<Array<{ session: Session; digest: string }>> {
    const [items, marker] = await Promise.all([
      queryAll(this.db, {
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :account AND begins_with(gsi1sk, :session)',
        ExpressionAttributeValues: { ':account': `ACCOUNT#${accountId}`, ':session': 'SESSION#' },
      }),
      this.db.reader.get(this.table, { pk: `ACCOUNT#${accountId}`, sk: 'SESSIONS' }),
    ]);
    const now = this.now().getTime();
    return items
      .map((item) => ({ session: sessionFromItem(item), digest: item.digest as string }))
      .filter(({ session }) => !this.refusal(session, now) && !signedOutBy(marker, session))
      .sort((a, b) => (a.session.createdAt < b.session.createdAt ? 1 : a.session.createdAt > b.session.createdAt ? -1 : 0));
  }

  /** Ends the session a secret opens (signing out); false when there was none. */
  async endSecret(secret: string): Promise<boolean> {
    if (!SECRET_PATTERN.test(secret)) return false;
    const out = await this.db.doc.send(
      new DeleteCommand({ TableName: this.table, Key: { pk: `SESSION#${tokenDigest(secret)}`, sk: 'SESSION' }, ReturnValues: 'ALL_OLD' }),
    );
    return out.Attributes !== undefined;
  }

  /** Ends one of the account's sessions by its public id; false when the account has no such session. */
  async end(accountId: string, sessionId: string): Promise<boolean> {
    const found = (await this.listItems(accountId)).find(({ session }) => session.id === sessionId);
    if (!found) return false;
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: { pk: `SESSION#${found.digest}`, sk: 'SESSION' } }));
    return true;
  }

  /**
   * Ends every session of the account, the one in use included ("sign out
   * everywhere"), or all but `keep` (a session id: the browser that changed
   * the password stays signed in); how many were ended.
   */
  async endAll(accountId: string, keep?: string): Promise<number> {
    const listed = (await this.listItems(accountId)).filter(({ session }) => session.id !== keep);
    await this.db.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: `ACCOUNT#${accountId}`,
          sk: 'SESSIONS',
          accountId,
          notBefore: this.now().toISOString(),
          ...(keep ? { kept: keep } : {}),
        },
      }),
    );
    // BatchWriteItem takes 25 requests at a time, and may hand some back unprocessed (throttling).
    for (let i = 0; i < listed.length; i += 25) {
      const deletes = listed.slice(i, i + 25).map(({ digest }) => ({ DeleteRequest: { Key: { pk: `SESSION#${digest}`, sk: 'SESSION' } } }));
      await untilNoneLeft(
        { [this.table]: deletes },
        async (RequestItems) => {
          const out = await this.db.doc.send(new BatchWriteCommand({ RequestItems }));
          const left = out.UnprocessedItems ?? {};
          return Object.keys(left).length ? (left as typeof RequestItems) : undefined;
        },
        { attempts: 9, baseMs: 10, what: 'ending sessions' },
      );
    }
    return listed.length;
  }
}

/** Whether the account's last "sign out everywhere" (its marker) ended this session. */
function signedOutBy(marker: Record<string, unknown> | undefined, session: Session): boolean {
  return !!marker && session.createdAt <= String(marker.notBefore) && session.id !== marker.kept;
}

function sessionFromItem(item: Record<string, unknown>): Session {
  return {
    id: item.id as string,
    accountId: item.accountId as string,
    createdAt: item.createdAt as string,
    lastSeenAt: item.lastSeenAt as string,
    userAgent: (item.userAgent as string | null | undefined) ?? null,
    address: (item.address as string | null | undefined) ?? null,
  };
}
