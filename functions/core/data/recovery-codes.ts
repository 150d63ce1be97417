/**
 * Recovery codes: one-time codes that stand in for a passkey at the second
 * step of a sign-in, for a person who asks for a passkey after the
 * password and has lost the device. In the accounts table:
 *
 *   ACCOUNT#<id> / RECOVERYCODES   codes (a string set of the codes' digests), createdAt
 *
 * One item per account, holding the digests of the codes left: making
 * codes puts the item whole (the old codes are gone in the same write),
 * and using one removes its digest with a condition that it is there
 * (`DELETE codes :d` if `contains(codes, :d)`), so of two requests with
 * one code, however close, exactly one removes it; the other's condition
 * fails. A set that loses its last member loses the attribute: none left.
 *
 * Only digests are kept, and a fast hash is enough here, unlike for a
 * password: a code is 80 random bits from the CSPRNG, not something a
 * person chose, so a leaked digest leaves 2^80 candidates to hash, which no
 * amount of hashing speed makes feasible (scrypt's cost is for passwords'
 * small, guessable spaces). The digest is keyed by the account (SHA-256 of
 * the account id and the code) so that each guess is a guess at one
 * account's codes, never at every account's at once.
 */
import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from './dynamo.js';
import { writtenIf } from './tables.js';

export const RECOVERY_CODE_LIMITS = {
  /** Codes made at once. */
  count: 10,
  /** Characters a code has, less its hyphens (typed with them or without). */
  length: 16,
};

const itemKey = (accountId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: 'RECOVERYCODES' });

/** The digest a code is kept as: keyed by the account, of the code as normalised (recovery-codes in core/auth). */
export const recoveryCodeDigest = (accountId: string, normalisedCode: string): string =>
  createHash('sha256').update(`cairn recovery code\n${accountId}\n${normalisedCode}`).digest('hex');

export class RecoveryCodeStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** Keeps these digests as the account's codes, in place of any it had. */
  async replace(accountId: string, digests: string[]): Promise<{ createdAt: string }> {
    const createdAt = this.now().toISOString();
    await this.db.doc.send(
      new PutCommand({ TableName: this.table, Item: { ...itemKey(accountId), accountId, codes: new Set(digests), createdAt } }),
    );
    return { createdAt };
  }

  /** How many codes the account has left, and when they were made (null: never, or all cleared). */
  async status(accountId: string): Promise<{ remaining: number; createdAt: string | null }> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: itemKey(accountId), ConsistentRead: true }));
    const codes = out.Item?.codes as Set<string> | undefined;
    return { remaining: codes?.size ?? 0, createdAt: (out.Item?.createdAt as string | undefined) ?? null };
  }

  /** Uses a code up: true when its digest was the account's and is now gone, false when it was not there (wrong, or used). */
  async use(accountId: string, digest: string): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: itemKey(accountId),
          UpdateExpression: 'DELETE codes :d',
          ConditionExpression: 'contains(codes, :one)',
          ExpressionAttributeValues: { ':d': new Set([digest]), ':one': digest },
        }),
      ),
    );
  }

  /** Forgets the account's codes. */
  async clear(accountId: string): Promise<void> {
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: itemKey(accountId) }));
  }
}
