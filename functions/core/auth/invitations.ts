/**
 * Invitations, the rules, called with plain values (the GraphQL mutations
 * in functions/graphql/resolvers/invitations.ts, the routes under
 * /auth/invitations/ in functions/graphql/account-links-http.ts, sign-up
 * in sign-in.ts).
 *
 * - An owner invites an e-mail with a role. The link goes out by e-mail
 *   when the service sends mail; otherwise (or when sending failed) it is
 *   in the owner's answer, to pass on, and nowhere else: never logged.
 *   A team sends at most INVITATION_LIMITS.perTeamPerHour.
 * - Whoever holds the link may read which team and role it offers.
 * - Joining takes an account of the invited e-mail: one signed in (accept)
 *   or one made by signing up with the link. Either way the membership and
 *   the invitation's use are one transaction, so a link makes one member.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Invitation, InvitationRefusal } from '../data/invitations.js';
import { INVITATION_LIMITS } from '../data/invitations.js';
import { isPlausibleEmail, normaliseEmail } from '../data/people.js';
import type { TeamMember, TeamRole, TransactItem } from '../data/teams.js';
import type { MailOutcome } from '../ports/mail.js';
import type { Services } from '../services.js';

export type InvitationServices = Pick<
  Services,
  'accounts' | 'config' | 'db' | 'invitations' | 'logger' | 'mailer' | 'people' | 'rateLimits' | 'teams'
>;

export const INVITE_RATE = { action: 'invite', count: INVITATION_LIMITS.perTeamPerHour, windowSeconds: 3600 };

/** Where a link leads: the web app's page for it. A fragment, not a path: browsers send no fragment to any server, so the token is in no access log and no Referer. */
export const invitationLink = (services: Pick<Services, 'config'>, token: string): string =>
  `${services.config.urls.baseUrl}/#/invitation/${token}`;

export type InviteOutcome =
  | { kind: 'invited'; invitation: Invitation; mail: MailOutcome; link?: string }
  | { kind: 'invalid'; message: string; field: string }
  | { kind: 'limited'; message: string; retryAfter: number };

export async function inviteByEmail(
  services: InvitationServices,
  input: { teamId: string; email: string; role: TeamRole; invitedBy: { accountId: string; name?: string } },
): Promise<InviteOutcome> {
  const email = normaliseEmail(String(input.email ?? ''));
  if (!isPlausibleEmail(email)) return { kind: 'invalid', message: 'email must be an e-mail address', field: 'email' };
  // Telling an owner that someone is in their own team already says nothing they cannot see in its list.
  const identity = await services.people.byEmail(email);
  if (identity && (await services.teams.getMember(input.teamId, identity.accountId)))
    return { kind: 'invalid', message: `${email} is a member of the team already`, field: 'email' };
  const wait = await services.rateLimits.take(INVITE_RATE, input.teamId);
  if (wait > 0)
    return {
      kind: 'limited',
      message: `The team has sent ${INVITATION_LIMITS.perTeamPerHour} invitations in the last hour: try again in ${Math.ceil(wait / 60)} minutes`,
      retryAfter: wait,
    };
  const team = await services.teams.get(input.teamId);
  const { invitation, token } = await services.invitations.create({
    teamId: input.teamId,
    email,
    role: input.role,
    invitedBy: input.invitedBy.accountId,
  });
  const link = invitationLink(services, token);
  const mail = await services.mailer.send({
    to: email,
    subject: `You are invited to join ${team?.name ?? 'a team'} on Cairn`.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 200),
    text: [
      `${input.invitedBy.name ?? 'An owner'} invites you to join the team "${team?.name ?? input.teamId}" on Cairn, as ${input.role === 'OWNER' ? 'an owner' : 'a member'}.`,
      '',
      'To accept, open this link (it works once, until ' + invitation.expiresAt.slice(0, 16).replace('T', ' ') + ' UTC):',
      '',
      link,
      '',
      'Sign in, or make an account with this e-mail address, and you are in the team.',
      'If you did not expect this, ignore this message: nothing happens unless the link is opened and accepted.',
    ].join('\n'),
  });
  if (!mail.sent && services.mailer.configured)
    services.logger.warn('an invitation was made but its e-mail was not sent; its link is in the owner’s answer', {
      teamId: input.teamId,
      invitationId: invitation.id,
    });
  return { kind: 'invited', invitation, mail, ...(mail.sent ? {} : { link }) };
}

export type InvitationProblem = InvitationRefusal | 'wrong-email' | 'member' | 'team-gone';

export const INVITATION_PROBLEMS: Record<InvitationProblem, { status: number; message: string }> = {
  unknown: { status: 404, message: 'This invitation link is not valid: check that it was copied whole, or ask for a new one' },
  used: { status: 410, message: 'This invitation has been used already' },
  revoked: { status: 410, message: "This invitation was withdrawn (or replaced by a newer one): ask the team's owner for a new one" },
  expired: { status: 410, message: "This invitation has expired (a link lasts 7 days): ask the team's owner for a new one" },
  'wrong-email': { status: 403, message: 'This invitation is for another e-mail address than the account signed in' },
  member: { status: 409, message: 'The account is a member of this team already' },
  'team-gone': { status: 410, message: 'The team of this invitation no longer exists' },
};

/** What a link offers, as its holder may read it. */
export interface InvitationView {
  team: { id: string; name: string };
  role: TeamRole;
  email: string;
  invitedBy: string | null;
  expiresAt: string;
}

export async function viewInvitation(
  services: InvitationServices,
  token: unknown,
): Promise<{ kind: 'open'; view: InvitationView } | { kind: 'refused'; problem: InvitationProblem }> {
  const opened = await services.invitations.open(String(token ?? ''));
  if ('refused' in opened) return { kind: 'refused', problem: opened.refused };
  const { invitation } = opened;
  const [team, inviter] = await Promise.all([services.teams.get(invitation.teamId), services.accounts.getAccount(invitation.invitedBy)]);
  if (!team) return { kind: 'refused', problem: 'team-gone' };
  return {
    kind: 'open',
    view: {
      team: { id: team.id, name: team.name },
      role: invitation.role,
      email: invitation.email,
      invitedBy: inviter?.name ?? null,
      expiresAt: invitation.expiresAt,
    },
  };
}

/** The writes that make `account` a member by the opened invitation and use it up: the membership's two, then the invitation's. */
export function joinWrites(
  services: Pick<Services, 'invitations' | 'teams'>,
  opened: { invitation: Invitation; digest: string },
  account: { id: string; name: string },
  createdAt: string,
): TransactItem[] {
  const member: TeamMember = {
    teamId: opened.invitation.teamId,
    accountId: account.id,
    accountName: account.name,
    role: opened.invitation.role,
    createdAt,
  };
  return [...services.teams.arrival(member), services.invitations.acceptance(opened, account.id)];
}

/** Why joinWrites' transaction failed, from its cancellation reasons (read at `offset`), asking the invitation again when it was its write. */
export async function joinFailure(
  services: Pick<Services, 'invitations'>,
  token: string,
  reasons: ReadonlyArray<{ Code?: string }> | undefined,
  offset = 0,
): Promise<InvitationProblem> {
  const failed = (i: number) => reasons?.[offset + i]?.Code === 'ConditionalCheckFailed';
  if (failed(0)) return 'member';
  if (failed(1)) return 'team-gone';
  const reopened = await services.invitations.open(token);
  return 'refused' in reopened ? reopened.refused : 'used';
}

/** A signed-in account accepts the invitation its e-mail was sent. */
export async function acceptInvitation(
  services: InvitationServices,
  token: unknown,
  accountId: string,
): Promise<{ kind: 'joined'; member: TeamMember; team: { id: string; name: string } } | { kind: 'refused'; problem: InvitationProblem }> {
  const opened = await services.invitations.open(String(token ?? ''));
  if ('refused' in opened) return { kind: 'refused', problem: opened.refused };
  const [account, email] = await Promise.all([services.accounts.getAccount(accountId), services.people.emailOf(accountId)]);
  if (!account || email !== opened.invitation.email) return { kind: 'refused', problem: 'wrong-email' };
  const createdAt = new Date().toISOString();
  const writes = joinWrites(services, opened, account, createdAt);
  try {
    await services.db.doc.send(new TransactWriteCommand({ TransactItems: writes }));
  } catch (err) {
    if (!(err instanceof TransactionCanceledException)) throw err;
    return { kind: 'refused', problem: await joinFailure(services, String(token), err.CancellationReasons) };
  }
  const team = await services.teams.get(opened.invitation.teamId);
  return {
    kind: 'joined',
    member: { teamId: opened.invitation.teamId, accountId, accountName: account.name, role: opened.invitation.role, createdAt },
    team: { id: opened.invitation.teamId, name: team?.name ?? '' },
  };
}
