/**
 * Device grants: the command line's browser login (OAuth 2.0 Device
 * Authorization Grant, RFC 8628), in the accounts table.
 *
 *   DEVICE#<sha256 of the device code> / DEVICE   the grant: userCode, clientId, machine, address, userAgent,
 *                                                 createdAt, expiresAt, interval, lastPolledAt, status,
 *                                                 accountId, teamId, decidedAt, apiKeyId, accessKeyId
 *   USERCODE#<user code> / USERCODE               the grant a user code names: digest, expiresAt
 *   DEVICEGUESS#<scope>#<value> / DEVICEGUESS     wrong user codes (and new grants) counted per account or address
 *
 * The device code (256 random bits, which the command line polls with) is
 * never stored, only its SHA-256, as sessions and API keys are. The user
 * code is short enough to type, so it is what a guesser would aim at:
 * 8 letters of a 20-letter alphabet (RFC 8628 §6.1: no vowels, so no
 * words; no digits, so no 0/O or 1/I) are 20^8 ≈ 2^34.6 codes, of which a
 * few live for 10 minutes; looking one up needs a session, and each
 * account and address may miss DEVICE_LIMITS.guesses* times a window
 * (counted by rate-limits.ts's windowed counter, as sign-in failures are).
 *
 * A grant is `pending` until its person approves or denies it on the web
 * page, then `approved` or `denied`; the token endpoint turns an approved
 * grant into `issued` in the same transaction that writes its credentials,
 * so two polls at once cannot both receive them, and a device code used
 * once answers nothing again. `expiresAt` (epoch seconds) is the table's
 * time to live: DynamoDB deletes the items some time after it, and every
 * read checks it until then (the local database never deletes).
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes, randomInt } from 'node:crypto';
import { tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { WindowedCounter, type Counted, type RateLimit } from './rate-limits.js';
import { writtenIf } from './tables.js';

export const DEVICE_LIMITS = {
  /** A grant lasts this long (RFC 8628 `expires_in`). */
  expiresSeconds: 600,
  /** The least time between two polls (`interval`). */
  intervalSeconds: 5,
  /** What a poll that came too soon adds to the grant's interval (RFC 8628 §3.5, slow_down). */
  slowDownSeconds: 5,
  /** The interval never grows beyond this: a client that keeps polling too fast still gets an answer within the grant's life. */
  maxIntervalSeconds: 60,
  /** A poll may come this much before its interval is over (timers and clocks are not exact). */
  pollGraceMs: 1000,
  /** The window wrong user codes are counted in. */
  guessWindowSeconds: 15 * 60,
  /** Wrong user codes per signed-in account in a window. */
  guessesPerAccount: 10,
  /** Wrong user codes per client address in a window (people may share an address). */
  guessesPerAddress: 30,
  /** New grants per client address in a window: each is an item in the table. */
  grantsPerAddress: 60,
};

/** RFC 8628 §6.1's example alphabet: consonants only, none that looks like another. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

export type DeviceGrantStatus = 'pending' | 'approved' | 'denied' | 'issued';

export interface DeviceGrant {
  /** The device code's SHA-256: names the grant. */
  digest: string;
  /** Normalised: 8 letters, no hyphen (`formatUserCode` adds it). */
  userCode: string;
  clientId: string;
  /** What the command line says its machine is called. */
  machine: string;
  /** The address the command line asked from. */
  address: string | null;
  userAgent: string | null;
  createdAt: string;
  /** Epoch seconds. */
  expiresAt: number;
  /** Seconds between polls, raised by every slow_down. */
  interval: number;
  /** Epoch milliseconds of the last poll. */
  lastPolledAt?: number;
  status: DeviceGrantStatus;
  /** Who approved or denied it, for which team. */
  accountId?: string;
  teamId?: string;
  decidedAt?: string;
  /** What the grant was turned into (once issued). */
  apiKeyId?: string;
  accessKeyId?: string;
}

/** `WDJB-MJHT` from `WDJBMJHT`. */
export const formatUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`;

/** A user code as a person may type it (lower case, spaces, a hyphen) in its stored form, or undefined when it cannot be one. */
export function normaliseUserCode(typed: unknown): string | undefined {
  if (typeof typed !== 'string' || typed.length > 32) return undefined;
  const code = typed.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const ch of code) if (!USER_CODE_ALPHABET.includes(ch)) return undefined;
  return code;
}

function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** A device code as the command line holds it: `cdc1.` and 43 base64url characters (256 bits). */
const DEVICE_CODE_PATTERN = /^cdc1\.[A-Za-z0-9_-]{43}$/;

/** What a poll of the token endpoint finds. */
export type PollOutcome =
  | { kind: 'unknown' }
  | { kind: 'expired' }
  | { kind: 'slow-down'; interval: number }
  | { kind: 'pending' }
  | { kind: 'denied' }
  | { kind: 'issued' }
  | { kind: 'approved'; grant: DeviceGrant };

/** What counts of guesses (and of new grants) are kept by. */
export interface GuessKey {
  scope: 'account' | 'address' | 'start';
  value: string;
}

const guess = (action: GuessKey['scope'], count: number): RateLimit => ({ action, count, windowSeconds: DEVICE_LIMITS.guessWindowSeconds });
const GUESS_LIMITS: Record<GuessKey['scope'], RateLimit> = {
  account: guess('account', DEVICE_LIMITS.guessesPerAccount),
  address: guess('address', DEVICE_LIMITS.guessesPerAddress),
  start: guess('start', DEVICE_LIMITS.grantsPerAddress),
};

const counted = (key: GuessKey): Counted => ({ limit: GUESS_LIMITS[key.scope], key: key.value });

export class DeviceGrantStore {
  private readonly guesses: WindowedCounter;

  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.guesses = new WindowedCounter(db, { name: 'DEVICEGUESS', countAttribute: 'count' }, now);
  }

  private get table() {
    return this.db.tables.accounts;
  }

  private nowSeconds(): number {
    return Math.floor(this.now().getTime() / 1000);
  }

  /** A new pending grant; its device code is returned here and never again. */
  async start(input: {
    clientId: string;
    machine: string;
    address?: string | null;
    userAgent?: string | null;
  }): Promise<{ grant: DeviceGrant; deviceCode: string }> {
    const deviceCode = `cdc1.${randomBytes(32).toString('base64url')}`;
    const digest = tokenDigest(deviceCode);
    const now = this.now();
    const expiresAt = Math.floor(now.getTime() / 1000) + DEVICE_LIMITS.expiresSeconds;
    // A user code names one live grant: a collision (one in millions while a few grants live) draws again.
    for (let attempt = 0; attempt < 5; attempt++) {
      const grant: DeviceGrant = {
        digest,
        userCode: newUserCode(),
        clientId: input.clientId,
        machine: input.machine,
        address: input.address ?? null,
        userAgent: input.userAgent ? input.userAgent.slice(0, 256) : null,
        createdAt: now.toISOString(),
        expiresAt,
        interval: DEVICE_LIMITS.intervalSeconds,
        status: 'pending',
      };
      const made = await writtenIf(
        this.db.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: this.table,
                  Item: { pk: `DEVICE#${digest}`, sk: 'DEVICE', ...grant },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
              {
                Put: {
                  TableName: this.table,
                  Item: { pk: `USERCODE#${grant.userCode}`, sk: 'USERCODE', digest, expiresAt },
                  ConditionExpression: 'attribute_not_exists(pk) OR expiresAt <= :now',
                  ExpressionAttributeValues: { ':now': Math.floor(now.getTime() / 1000) },
                },
              },
            ],
          }),
        ),
      );
      if (made) return { grant, deviceCode };
    }
    throw new Error('could not draw a free user code in 5 attempts');
  }

  private async getByDigest(digest: string): Promise<DeviceGrant | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `DEVICE#${digest}`, sk: 'DEVICE' }, ConsistentRead: true }),
    );
    return out.Item ? grantFromItem(out.Item) : undefined;
  }

  /** The live grant a user code (normalised) names, or undefined: none, or expired. */
  async byUserCode(userCode: string): Promise<DeviceGrant | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `USERCODE#${userCode}`, sk: 'USERCODE' }, ConsistentRead: true }),
    );
    if (!out.Item || Number(out.Item.expiresAt) <= this.nowSeconds()) return undefined;
    const grant = await this.getByDigest(out.Item.digest as string);
    return grant && grant.userCode === userCode && grant.expiresAt > this.nowSeconds() ? grant : undefined;
  }

  /**
   * One poll of the token endpoint with a device code. The poll is
   * recorded (conditionally, so that of two polls at once one is too
   * soon); one that comes before the grant's interval is over raises the
   * interval and is answered slow_down, whatever the grant's state.
   */
  async poll(deviceCode: string, clientId: string): Promise<PollOutcome> {
    if (!DEVICE_CODE_PATTERN.test(deviceCode)) return { kind: 'unknown' };
    const grant = await this.getByDigest(tokenDigest(deviceCode));
    if (!grant || grant.clientId !== clientId) return { kind: 'unknown' };
    if (grant.expiresAt <= this.nowSeconds()) return { kind: 'expired' };
    if (grant.status === 'issued') return { kind: 'issued' };
    const now = this.now().getTime();
    const Key = { pk: `DEVICE#${grant.digest}`, sk: 'DEVICE' };
    const onTime = await writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key,
          UpdateExpression: 'SET lastPolledAt = :now',
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(lastPolledAt) OR lastPolledAt <= :due)',
          ExpressionAttributeValues: { ':now': now, ':due': now - grant.interval * 1000 + DEVICE_LIMITS.pollGraceMs },
        }),
      ),
    );
    if (!onTime) {
      const interval = Math.min(grant.interval + DEVICE_LIMITS.slowDownSeconds, DEVICE_LIMITS.maxIntervalSeconds);
      await this.db.doc
        .send(
          new UpdateCommand({
            TableName: this.table,
            Key,
            UpdateExpression: 'SET lastPolledAt = :now, #interval = :interval',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#interval': 'interval' },
            ExpressionAttributeValues: { ':now': now, ':interval': interval },
          }),
        )
        .catch((err: Error) => {
          if (err.name !== 'ConditionalCheckFailedException') throw err;
        });
      return { kind: 'slow-down', interval };
    }
    if (grant.status === 'pending') return { kind: 'pending' };
    if (grant.status === 'denied') return { kind: 'denied' };
    return { kind: 'approved', grant };
  }

  /** Approves or denies a pending, live grant for an account (and the team its key will act in); false when it is not pending any more. */
  async decide(grant: DeviceGrant, decision: 'approved' | 'denied', by: { accountId: string; teamId?: string }): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: `DEVICE#${grant.digest}`, sk: 'DEVICE' },
          UpdateExpression: `SET #status = :decision, accountId = :account, decidedAt = :at${by.teamId ? ', teamId = :team' : ''}`,
          ConditionExpression: '#status = :pending AND expiresAt > :now',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':decision': decision,
            ':account': by.accountId,
            ':at': this.now().toISOString(),
            ':pending': 'pending',
            ':now': this.nowSeconds(),
            ...(by.teamId ? { ':team': by.teamId } : {}),
          },
        }),
      ),
    );
  }

  /**
   * Marks an approved grant issued and writes what it issues, in one
   * transaction: `items` (the credentials, each only where nothing is)
   * and a check that the approver is still a member of the team. False
   * when the grant was issued meanwhile (another poll) or the check failed;
   * then nothing was written.
   */
  async issue(
    grant: DeviceGrant,
    issued: { apiKeyId: string; accessKeyId: string },
    items: Array<Record<string, unknown>>,
  ): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.table,
                Key: { pk: `DEVICE#${grant.digest}`, sk: 'DEVICE' },
                UpdateExpression: 'SET #status = :issued, apiKeyId = :apiKey, accessKeyId = :accessKey',
                ConditionExpression: '#status = :approved',
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: {
                  ':issued': 'issued',
                  ':approved': 'approved',
                  ':apiKey': issued.apiKeyId,
                  ':accessKey': issued.accessKeyId,
                },
              },
            },
            {
              ConditionCheck: {
                TableName: this.table,
                Key: { pk: `TEAM#${grant.teamId}`, sk: `MEMBER#${grant.accountId}` },
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            ...items.map((Item) => ({ Put: { TableName: this.table, Item, ConditionExpression: 'attribute_not_exists(pk)' } })),
          ],
        }),
      ),
    );
  }

  /** Seconds until these keys may try again (the longest wait among them), or 0 when they may now. */
  retryAfter(keys: GuessKey[]): Promise<number> {
    return this.guesses.retryAfter(keys.map(counted));
  }

  /** Counts one against each key: in its open window, or in a new one (as sign-in failures are counted). */
  count(keys: GuessKey[]): Promise<void> {
    return this.guesses.add(keys.map(counted));
  }
}

function grantFromItem(item: Record<string, unknown>): DeviceGrant {
  const optional = <T>(name: string) => (item[name] === undefined || item[name] === null ? undefined : (item[name] as T));
  return {
    digest: item.digest as string,
    userCode: item.userCode as string,
    clientId: item.clientId as string,
    machine: item.machine as string,
    address: (item.address as string | null | undefined) ?? null,
    userAgent: (item.userAgent as string | null | undefined) ?? null,
    createdAt: item.createdAt as string,
    expiresAt: Number(item.expiresAt),
    interval: Number(item.interval),
    lastPolledAt: optional<number>('lastPolledAt'),
    status: item.status as DeviceGrantStatus,
    accountId: optional<string>('accountId'),
    teamId: optional<string>('teamId'),
    decidedAt: optional<string>('decidedAt'),
    apiKeyId: optional<string>('apiKeyId'),
    accessKeyId: optional<string>('accessKeyId'),
  };
}
