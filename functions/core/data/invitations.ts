/**
 * Invitations to join a team, by e-mail, in the accounts table.
 *
 *   TEAM#<teamId> / INVITATION#<e-mail>   the invitation: id, email, role, invitedBy, digest,
 *                                         createdAt, expiresAt, usedAt/usedBy or revokedAt
 *   INVITATION#<sha256 of the token> / INVITATION   the link's way in: teamId, email, expiresAt
 *
 * The token (256 random bits, in the link) is never stored, only its
 * SHA-256, as sessions' secrets and API keys are. A team has one
 * invitation per e-mail: inviting the same address again replaces it, and
 * the older link stops working (the invitation no longer carries its
 * digest). The invitation lives in the team's partition, so the team's
 * list is a consistent read and another team's invitation cannot even be
 * named by a revocation. An invitation lasts INVITATION_LIMITS seconds;
 * `expiresAt` (epoch seconds) is also the table's time to live, which
 * deletes it some time after, and every read checks it before then.
 * Accepting marks it used in the same transaction that makes the
 * membership (core/auth/invitations.ts), conditioned on it being unused,
 * unrevoked, unexpired and still this link's: a link works once.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { newId, tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { queryAll } from './pages.js';
import { normaliseEmail } from './people.js';
import { writtenIf } from './tables.js';
import type { TeamRole, TransactItem } from './teams.js';

export const INVITATION_LIMITS = {
  /** An invitation's link works for 7 days. */
  lifetimeSeconds: 7 * 24 * 3600,
  /** Invitations one team may send in an hour (each may send an e-mail). */
  perTeamPerHour: 50,
};

export interface Invitation {
  id: string;
  teamId: string;
  /** The e-mail invited (normalised): only an account of that e-mail joins by it. */
  email: string;
  role: TeamRole;
  /** The account of the owner who invited. */
  invitedBy: string;
  createdAt: string;
  expiresAt: string;
  usedAt?: string;
  usedBy?: string;
  revokedAt?: string;
}

/** Why a link opens no invitation. */
export type InvitationRefusal = 'unknown' | 'used' | 'revoked' | 'expired';

/** An invitation's link token: `i1.` and 43 base64url characters. */
const TOKEN_PATTERN = /^i1\.[A-Za-z0-9_-]{43}$/;

export class InvitationStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** A new invitation (replacing the team's earlier one for the e-mail); the token is returned here and never again. */
  async create(input: {
    teamId: string;
    email: string;
    role: TeamRole;
    invitedBy: string;
  }): Promise<{ invitation: Invitation; token: string }> {
    const token = `i1.${randomBytes(32).toString('base64url')}`;
    const digest = tokenDigest(token);
    const now = this.now();
    const expires = Math.floor(now.getTime() / 1000) + INVITATION_LIMITS.lifetimeSeconds;
    const invitation: Invitation = {
      id: newId(),
      teamId: input.teamId,
      email: normaliseEmail(input.email),
      role: input.role,
      invitedBy: input.invitedBy,
      createdAt: now.toISOString(),
      expiresAt: new Date(expires * 1000).toISOString(),
    };
    await this.db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.table,
              Item: { pk: `TEAM#${input.teamId}`, sk: `INVITATION#${invitation.email}`, ...invitation, digest, expiresAt: expires },
            },
          },
          {
            Put: {
              TableName: this.table,
              Item: { pk: `INVITATION#${digest}`, sk: 'INVITATION', teamId: input.teamId, email: invitation.email, expiresAt: expires },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
    return { invitation, token };
  }

  /** The team's invitations still waiting for their person (neither used, revoked nor expired), oldest first. */
  async listPending(teamId: string): Promise<Invitation[]> {
    const now = this.now().getTime();
    return (await this.listItems(teamId))
      .map(({ invitation }) => invitation)
      .filter((i) => this.refusal(i, now) === undefined)
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  private async listItems(teamId: string): Promise<Array<{ invitation: Invitation; digest: string }>> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :team AND begins_with(sk, :invitation)',
      ExpressionAttributeValues: { ':team': `TEAM#${teamId}`, ':invitation': 'INVITATION#' },
      ConsistentRead: true,
    });
    return items.map((item) => ({ invitation: invitationFromItem(item), digest: item.digest as string }));
  }

  /** Revokes one of the team's pending invitations by id: the invitation, or why it could not be revoked. */
  async revoke(teamId: string, id: string): Promise<{ invitation: Invitation } | { refused: 'unknown' | 'used' | 'revoked' | 'expired' }> {
    const found = (await this.listItems(teamId)).find(({ invitation }) => invitation.id === id);
    if (!found) return { refused: 'unknown' };
    const refusal = this.refusal(found.invitation, this.now().getTime());
    if (refusal) return { refused: refusal };
    const revokedAt = this.now().toISOString();
    const revoked = await writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: `TEAM#${teamId}`, sk: `INVITATION#${found.invitation.email}` },
          UpdateExpression: 'SET revokedAt = :now',
          ConditionExpression: 'digest = :digest AND attribute_not_exists(usedAt) AND attribute_not_exists(revokedAt)',
          ExpressionAttributeValues: { ':now': revokedAt, ':digest': found.digest },
        }),
      ),
    );
    // Used, revoked or replaced a moment ago: say which, as read now.
    if (!revoked) return this.revoke(teamId, id);
    return { invitation: { ...found.invitation, revokedAt } };
  }

  /** The invitation a link's token opens, or why it opens none. */
  async open(token: string): Promise<{ invitation: Invitation; digest: string } | { refused: InvitationRefusal }> {
    if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) return { refused: 'unknown' };
    const digest = tokenDigest(token);
    const pointer = await this.get({ pk: `INVITATION#${digest}`, sk: 'INVITATION' });
    if (!pointer) return { refused: 'unknown' };
    const item = await this.get({ pk: `TEAM#${pointer.teamId}`, sk: `INVITATION#${pointer.email}` });
    // Replaced by a newer invitation of the same e-mail: this link is no longer its way in.
    if (!item || item.digest !== digest) return { refused: 'revoked' };
    const invitation = invitationFromItem(item);
    const refusal = this.refusal(invitation, this.now().getTime());
    return refusal ? { refused: refusal } : { invitation, digest };
  }

  /** The write that marks an opened invitation used by `accountId`, for the transaction that makes the membership. */
  acceptance(opened: { invitation: Invitation; digest: string }, accountId: string): TransactItem {
    const now = this.now();
    return {
      Update: {
        TableName: this.table,
        Key: { pk: `TEAM#${opened.invitation.teamId}`, sk: `INVITATION#${opened.invitation.email}` },
        UpdateExpression: 'SET usedAt = :now, usedBy = :account',
        ConditionExpression:
          'digest = :digest AND attribute_not_exists(usedAt) AND attribute_not_exists(revokedAt) AND expiresAt > :seconds',
        ExpressionAttributeValues: {
          ':now': now.toISOString(),
          ':account': accountId,
          ':digest': opened.digest,
          ':seconds': Math.floor(now.getTime() / 1000),
        },
      },
    };
  }

  private refusal(invitation: Invitation, now: number): InvitationRefusal | undefined {
    if (invitation.usedAt) return 'used';
    if (invitation.revokedAt) return 'revoked';
    if (now >= Date.parse(invitation.expiresAt)) return 'expired';
    return undefined;
  }

  private async get(Key: { pk: string; sk: string }): Promise<Record<string, unknown> | undefined> {
    return (await this.db.doc.send(new GetCommand({ TableName: this.table, Key, ConsistentRead: true }))).Item;
  }
}

function invitationFromItem(item: Record<string, unknown>): Invitation {
  const invitation: Invitation = {
    id: item.id as string,
    teamId: item.teamId as string,
    email: item.email as string,
    role: item.role as TeamRole,
    invitedBy: item.invitedBy as string,
    createdAt: item.createdAt as string,
    expiresAt: new Date(Number(item.expiresAt) * 1000).toISOString(),
  };
  if (item.usedAt) Object.assign(invitation, { usedAt: item.usedAt, usedBy: item.usedBy });
  if (item.revokedAt) invitation.revokedAt = item.revokedAt as string;
  return invitation;
}
