/**
 * One-time links that act on an account: a password reset (an hour) and
 * the first owner's welcome link (7 days), in the accounts table.
 *
 *   LINK#<sha256 of the token> / RESET     accountId, email, passwordDigest, createdAt, expiresAt
 *   LINK#<sha256 of the token> / WELCOME   accountId, createdAt, expiresAt
 *
 * The token (256 random bits, in the link) is never stored, only its
 * SHA-256. A link is used by deleting its item in the same transaction as
 * what it does (core/auth/password-reset.ts, first-owner.ts), conditioned
 * on it still being there and unexpired: it works once. A reset link also
 * keeps a digest of the password hash it was asked under, so any change
 * of the password (another reset link, a change while signed in) ends
 * every reset link asked before it. `expiresAt` (epoch seconds) is the
 * table's time to live as well.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import type { TransactItem } from './teams.js';

export type AccountLinkKind = 'RESET' | 'WELCOME';

export const ACCOUNT_LINK_SECONDS: Record<AccountLinkKind, number> = {
  /** A password reset link works for an hour. */
  RESET: 3600,
  /** The first owner's link works for 7 days. */
  WELCOME: 7 * 24 * 3600,
};

export interface AccountLink {
  kind: AccountLinkKind;
  accountId: string;
  /** A reset link's e-mail. */
  email?: string;
  /** A reset link's: the SHA-256 of the password hash it was asked under. */
  passwordDigest?: string;
  createdAt: string;
  expiresAt: string;
}

/** A link's token: `l1.` and 43 base64url characters. */
const TOKEN_PATTERN = /^l1\.[A-Za-z0-9_-]{43}$/;

export const newAccountLinkToken = (): string => `l1.${randomBytes(32).toString('base64url')}`;

/** Where the first owner's welcome link leads: the web app's page (a fragment, so the token reaches no server's log). */
export const welcomeLink = (baseUrl: string, token: string): string => `${baseUrl}/#/welcome/${token}`;

export const isAccountLinkToken = (token: string): boolean => TOKEN_PATTERN.test(token);

export class AccountLinkStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** A new link's token and its item, for a caller that writes it in a transaction of its own (a new account's). */
  mint(
    kind: AccountLinkKind,
    fields: Pick<AccountLink, 'accountId' | 'email' | 'passwordDigest'>,
  ): { token: string; item: Record<string, unknown> } {
    const token = newAccountLinkToken();
    return { token, item: this.item(kind, token, fields) };
  }

  /**
   * The item of a link whose token was drawn before its account existed:
   * the first account in AWS, whose token is kept in the stack's secret
   * first (functions/first-account/first-account.ts), so a retry makes the
   * same link.
   */
  item(kind: AccountLinkKind, token: string, fields: Pick<AccountLink, 'accountId' | 'email' | 'passwordDigest'>): Record<string, unknown> {
    const now = this.now();
    const item = {
      pk: `LINK#${tokenDigest(token)}`,
      sk: kind,
      kind,
      ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)),
      createdAt: now.toISOString(),
      expiresAt: Math.floor(now.getTime() / 1000) + ACCOUNT_LINK_SECONDS[kind],
    };
    return item;
  }

  /** Makes a new link; its token is returned here and never again. */
  async create(kind: AccountLinkKind, fields: Pick<AccountLink, 'accountId' | 'email' | 'passwordDigest'>): Promise<string> {
    const { token, item } = this.mint(kind, fields);
    await this.db.doc.send(new PutCommand({ TableName: this.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
    return token;
  }

  /** The link a token opens, unexpired and of this kind, or undefined (unknown, used or expired: which, is not said). */
  async open(kind: AccountLinkKind, token: unknown): Promise<AccountLink | undefined> {
    if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) return undefined;
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `LINK#${tokenDigest(token)}`, sk: kind }, ConsistentRead: true }),
    );
    if (!out.Item || Number(out.Item.expiresAt) * 1000 <= this.now().getTime()) return undefined;
    const { accountId, email, passwordDigest, createdAt, expiresAt } = out.Item;
    return { kind, accountId, email, passwordDigest, createdAt, expiresAt: new Date(Number(expiresAt) * 1000).toISOString() };
  }

  /** The write that uses a link up, for the transaction that does what it is for: only while it is there and unexpired. */
  use(kind: AccountLinkKind, token: string): TransactItem {
    return {
      Delete: {
        TableName: this.table,
        Key: { pk: `LINK#${tokenDigest(token)}`, sk: kind },
        ConditionExpression: 'attribute_exists(pk) AND expiresAt > :seconds',
        ExpressionAttributeValues: { ':seconds': Math.floor(this.now().getTime() / 1000) },
      },
    };
  }
}
