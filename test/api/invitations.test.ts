/**
 * Invitations by e-mail, through both doors, against the local service
 * sending mail to a real SMTP server the test starts (test/support/smtp.ts):
 * an owner invites, the message arrives (its link read from the parsed
 * mail), the invitee reads what it offers, and joins by signing up with it
 * (CAIRN_SIGNUP=invite, the default) or by accepting it signed in. Every
 * refusal: used, revoked, replaced, expired (its expiry moved back in the
 * table, which both doors read), another e-mail, no CSRF token, not an
 * owner, another team's, the hourly limit; and without mail, the link in
 * the owner's answer only.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tokenDigest, newAccessKeyId, newApiToken, newSecretAccessKey } from '../../functions/core/ids.js';
import { hashPassword } from '../../functions/core/auth/passwords.js';
import { INVITE_RATE } from '../../functions/core/auth/invitations.js';
import { INVITATION_LIMITS } from '../../functions/core/data/invitations.js';
import { mailProblem } from '../../functions/core/ports/mail.js';
import { accountsService, apiBase, authClient, doorTag, NODE_DOOR, PASSWORD } from '../support/accounts-service.js';
import { startTestService, type TestService } from '../support/service.js';

const live = accountsService({ CAIRN_GC_INTERVAL: '0' }, { mailFrom: 'Cairn <cairn@example.org>' });

const INVITE = `mutation ($t: ID!, $e: String!, $r: TeamRole) {
  inviteTeamMember(teamId: $t, email: $e, role: $r) { invitation { id teamId email role invitedBy createdAt expiresAt } mailSent link mailError }
}`;
const LIST = 'query ($t: ID!) { getInvitations(teamId: $t) { id email role expiresAt } }';
const REVOKE = 'mutation ($t: ID!, $i: ID!) { revokeInvitation(teamId: $t, invitationId: $i) { id } }';
const MEMBERS = 'query ($t: ID!) { getMembersByTeam(teamId: $t) { accountId accountName role } }';

const tokenOf = (link: string) => link.slice(link.indexOf('/#/invitation/') + '/#/invitation/'.length);

let made = 0;
/** An account with an API key (its owner's, in its own team) and, given an e-mail, a password identity. */
async function account(svc: TestService, prefix: string, email?: string) {
  const name = `${prefix}-${process.pid}-${++made}`.toLowerCase();
  const apiKey = newApiToken();
  const { account } = await svc.services.accounts.createAccount({
    name,
    accessKeyId: newAccessKeyId(),
    secretAccessKey: newSecretAccessKey(),
    apiToken: apiKey,
  });
  if (email) await svc.services.people.add(account.id, email, await hashPassword(PASSWORD));
  return { account, apiKey, name, key: { authorization: apiKey } };
}

async function invitationItem(svc: TestService, teamId: string, email: string) {
  const db = svc.services.db;
  return (await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: { pk: `TEAM#${teamId}`, sk: `INVITATION#${email}` } })))
    .Item;
}

describe.each(live.doors)('invitations through the $name', (door) => {
  const tag = doorTag(door);
  const shared = authClient(door, live.base);
  const api = { post: shared.postJson, gql: shared.gql };
  const email = (what: string) => `${what}-${tag}-${process.pid}-${++made}@example.org`;
  const signIn = async (address: string) => {
    const res = await shared.signIn(address);
    expect(res.status).toBe(200);
    return res.headers;
  };

  test('an owner invites by e-mail; the message arrives; the invitee signs up with its link and is a member with the role', async () => {
    const owner = await account(live.service, `own-${tag}`);
    const teamId = owner.account.defaultTeamId;
    const to = email('Invitee').toUpperCase();
    const invited = await api.gql(owner.key, INVITE, { t: teamId, e: to, r: 'OWNER' });
    expect(invited.errors).toBeUndefined();
    const answer = invited.data.inviteTeamMember;
    expect(answer).toEqual({
      invitation: {
        id: expect.any(String),
        teamId,
        email: to.toLowerCase(),
        role: 'OWNER',
        invitedBy: owner.account.id,
        createdAt: expect.any(String),
        expiresAt: expect.any(String),
      },
      mailSent: true,
      link: null,
      mailError: null,
    });
    const lifetime = Date.parse(answer.invitation.expiresAt) - Date.parse(answer.invitation.createdAt);
    expect(Math.abs(lifetime - INVITATION_LIMITS.lifetimeSeconds * 1000)).toBeLessThan(2000);

    // The message: to the address, from the configured sender, through the authenticated SMTP session.
    const { mail, from } = await live.smtp.next(to);
    expect(from).toBe('cairn@example.org');
    expect(mail.from?.value).toEqual([{ name: 'Cairn', address: 'cairn@example.org' }]);
    expect(mail.subject).toBe(`You are invited to join ${owner.name} on Cairn`);
    expect(mail.text).toContain(`${owner.name} invites you to join the team "${owner.name}" on Cairn, as an owner.`);
    const link = live.smtp.linkIn(mail);
    expect(link.startsWith(`${live.service.config.urls.baseUrl}/#/invitation/i1.`)).toBe(true);
    const token = tokenOf(link);

    // Only the token's digest is kept.
    const item = await invitationItem(live.service, teamId, to.toLowerCase());
    expect(item?.digest).toBe(tokenDigest(token));
    expect(JSON.stringify(item)).not.toContain(token);

    const listed = await api.gql(owner.key, LIST, { t: teamId });
    expect(listed.data.getInvitations).toEqual([
      { id: answer.invitation.id, email: to.toLowerCase(), role: 'OWNER', expiresAt: answer.invitation.expiresAt },
    ]);

    const view = await api.post('/auth/invitations/view', { token });
    expect(view).toMatchObject({
      status: 200,
      body: {
        ok: true,
        invitation: { team: { id: teamId, name: owner.name }, role: 'OWNER', email: to.toLowerCase(), invitedBy: owner.name },
      },
    });

    // Sign-up is by invitation here: without one it is refused; with one, for its e-mail, it makes the account a member.
    const name = `joiner-${tag}-${process.pid}-${made}`;
    expect((await api.post('/auth/sign-up', { email: to, password: PASSWORD, name })).status).toBe(403);
    const up = await api.post('/auth/sign-up', { email: to, password: PASSWORD, name, invitation: token });
    expect(up.status).toBe(201);
    const members = (await api.gql(owner.key, MEMBERS, { t: teamId })).data.getMembersByTeam;
    expect(members).toContainEqual({ accountId: up.body.account.id, accountName: name, role: 'OWNER' });
    // The new member acts in the team with their session.
    const inTeam = await api.gql({ cookie: up.cookie, 'x-cairn-team': teamId }, '{ getCurrentMember { role } }');
    expect(inTeam.data.getCurrentMember.role).toBe('OWNER');

    // Used: listed no more, and the link opens nothing, for sign-up as for a view.
    expect((await api.gql(owner.key, LIST, { t: teamId })).data.getInvitations).toEqual([]);
    const again = await api.post('/auth/invitations/view', { token });
    expect([again.status, again.body.error]).toEqual([410, 'This invitation has been used already']);
    const reuse = await api.post('/auth/sign-up', { email: to, password: PASSWORD, name: `${name}-2`, invitation: token });
    expect([reuse.status, reuse.body.field]).toEqual([400, 'invitation']);
    expect(await live.service.services.accounts.getAccountByName(`${name}-2`)).toBeUndefined();
  });

  test('a signed-in person accepts with the CSRF token; another e-mail, a used link and no token are refused', async () => {
    const owner = await account(live.service, `acc-${tag}`);
    const teamId = owner.account.defaultTeamId;
    const to = email('member');
    const person = await account(live.service, `person-${tag}`, to);
    const stranger = email('stranger');
    await account(live.service, `stranger-${tag}`, stranger);
    await api.gql(owner.key, INVITE, { t: teamId, e: to });
    const token = tokenOf(live.smtp.linkIn((await live.smtp.next(to)).mail));

    const session = await signIn(to);
    expect((await api.post('/auth/invitations/accept', { token }, { cookie: session.cookie })).status).toBe(403);
    expect((await api.post('/auth/invitations/accept', { token })).status).toBe(401);
    const other = await signIn(stranger);
    const wrong = await api.post('/auth/invitations/accept', { token }, other);
    expect([wrong.status, wrong.body.error]).toEqual([403, 'This invitation is for another e-mail address than the account signed in']);

    const accepted = await api.post('/auth/invitations/accept', { token }, session);
    expect(accepted).toMatchObject({ status: 200, body: { ok: true, team: { id: teamId, name: owner.name }, role: 'MEMBER' } });
    expect((await api.gql(owner.key, MEMBERS, { t: teamId })).data.getMembersByTeam).toContainEqual({
      accountId: person.account.id,
      accountName: person.name,
      role: 'MEMBER',
    });
    expect((await api.post('/auth/invitations/accept', { token }, session)).status).toBe(410);
    // Inviting someone who is in the team already is refused.
    const twice = await api.gql(owner.key, INVITE, { t: teamId, e: to });
    expect([twice.errors?.[0].extensions.code, twice.errors?.[0].extensions.field]).toEqual(['BAD_USER_INPUT', 'email']);
  });

  test('revoked, replaced, expired and unknown links are refused, each saying why', async () => {
    const owner = await account(live.service, `ref-${tag}`);
    const teamId = owner.account.defaultTeamId;
    const view = (token: string) => api.post('/auth/invitations/view', { token });

    const revokedTo = email('revoked');
    const first = (await api.gql(owner.key, INVITE, { t: teamId, e: revokedTo })).data.inviteTeamMember.invitation;
    const revokedToken = tokenOf(live.smtp.linkIn((await live.smtp.next(revokedTo)).mail));
    expect((await api.gql(owner.key, REVOKE, { t: teamId, i: first.id })).data.revokeInvitation).toEqual({ id: first.id });
    expect((await view(revokedToken)).status).toBe(410);
    const revokeAgain = await api.gql(owner.key, REVOKE, { t: teamId, i: first.id });
    expect(revokeAgain.errors?.[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(
      (await api.post('/auth/sign-up', { email: revokedTo, password: PASSWORD, name: `rv-${tag}-${made}`, invitation: revokedToken })).body
        .field,
    ).toBe('invitation');

    // Inviting an address again replaces its invitation: the older link stops working, the newer works.
    const againTo = email('again');
    await api.gql(owner.key, INVITE, { t: teamId, e: againTo });
    const older = tokenOf(live.smtp.linkIn((await live.smtp.next(againTo)).mail));
    await api.gql(owner.key, INVITE, { t: teamId, e: againTo, r: 'OWNER' });
    const newer = tokenOf(live.smtp.linkIn((await live.smtp.next(againTo)).mail));
    expect((await view(older)).status).toBe(410);
    expect((await view(newer)).body.invitation.role).toBe('OWNER');

    // Its 7 days over (the expiry moved back in the table): expired, for a view and for sign-up alike.
    const db = live.service.services.db;
    await db.doc.send(
      new UpdateCommand({
        TableName: db.tables.accounts,
        Key: { pk: `TEAM#${teamId}`, sk: `INVITATION#${againTo}` },
        UpdateExpression: 'SET expiresAt = :past',
        ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
      }),
    );
    const expired = await view(newer);
    expect([expired.status, expired.body.error]).toEqual([410, expect.stringMatching(/^This invitation has expired/)]);
    const late = await api.post('/auth/sign-up', { email: againTo, password: PASSWORD, name: `late-${tag}-${made}`, invitation: newer });
    expect([late.status, late.body.field]).toEqual([400, 'invitation']);
    expect((await api.gql(owner.key, LIST, { t: teamId })).data.getInvitations).toEqual([]);

    // A link that is nobody's, or not a token at all.
    expect((await view(`i1.${'A'.repeat(43)}`)).status).toBe(404);
    expect((await view('../../etc/passwd')).status).toBe(404);
    expect((await api.post('/auth/invitations/view', {})).status).toBe(404);

    // The invited e-mail only: another address signing up with the link is refused.
    const thirdTo = email('third');
    await api.gql(owner.key, INVITE, { t: teamId, e: thirdTo });
    const third = tokenOf(live.smtp.linkIn((await live.smtp.next(thirdTo)).mail));
    const elsewhere = await api.post('/auth/sign-up', {
      email: email('someone-else'),
      password: PASSWORD,
      name: `se-${tag}-${made}`,
      invitation: third,
    });
    expect([elsewhere.status, elsewhere.body.field]).toEqual([400, 'email']);
  });

  test('only owners invite, list and revoke; another team’s invitations are not found; bad addresses are refused', async () => {
    const owner = await account(live.service, `own2-${tag}`);
    const teamId = owner.account.defaultTeamId;
    const member = await account(live.service, `mem-${tag}`);
    await live.service.services.teams.addMember(teamId, { id: member.account.id, name: member.name }, 'MEMBER');
    const memberKey = (await api.gql(member.key, 'mutation ($t: ID!) { createApiKey(teamId: $t, name: "m") { key } }', { t: teamId })).data
      .createApiKey.key;
    const asMember = await api.gql({ authorization: memberKey }, INVITE, { t: teamId, e: email('x') });
    expect(asMember.errors?.[0].extensions.code).toBe('FORBIDDEN');
    expect((await api.gql({ authorization: memberKey }, LIST, { t: teamId })).errors?.[0].extensions.code).toBe('FORBIDDEN');

    const to = email('pending');
    const made_ = (await api.gql(owner.key, INVITE, { t: teamId, e: to })).data.inviteTeamMember.invitation;
    await live.smtp.next(to);
    const other = await account(live.service, `other-${tag}`);
    const revoke = await api.gql(other.key, REVOKE, { t: teamId, i: made_.id });
    expect(revoke.errors?.[0].extensions.code).toBe('NOT_FOUND');
    // Named in the caller's own team, the id is still nobody's there.
    const ownTeam = await api.gql(other.key, REVOKE, { t: other.account.defaultTeamId, i: made_.id });
    expect(ownTeam.errors?.[0].extensions.code).toBe('NOT_FOUND');
    expect((await api.gql(other.key, LIST, { t: teamId })).data.getInvitations).toBeNull();
    expect((await api.gql({ authorization: memberKey }, REVOKE, { t: teamId, i: made_.id })).errors?.[0].extensions.code).toBe('FORBIDDEN');
    expect((await api.gql(owner.key, LIST, { t: teamId })).data.getInvitations.map((i: { id: string }) => i.id)).toEqual([made_.id]);

    // Header injection and other non-addresses never reach the mail server.
    const before = live.smtp.messages.length;
    for (const bad of [`a@example.org\r\nBcc: victim@example.org`, 'a@example.org, b@example.org', 'not-an-address', '']) {
      const refused = await api.gql(owner.key, INVITE, { t: teamId, e: bad });
      expect([refused.errors?.[0].extensions.code, refused.errors?.[0].extensions.field]).toEqual(['BAD_USER_INPUT', 'email']);
    }
    expect(live.smtp.messages.length).toBe(before);
  });

  test('a team sends at most 50 invitations an hour', async () => {
    const owner = await account(live.service, `rate-${tag}`);
    const teamId = owner.account.defaultTeamId;
    // 49 counted already (the store the mutation counts with), the 50th through the API.
    for (let i = 0; i < INVITATION_LIMITS.perTeamPerHour - 1; i++) await live.service.services.rateLimits.take(INVITE_RATE, teamId);
    const last = email('fiftieth');
    expect((await api.gql(owner.key, INVITE, { t: teamId, e: last })).data.inviteTeamMember.mailSent).toBe(true);
    await live.smtp.next(last);
    const over = await api.gql(owner.key, INVITE, { t: teamId, e: email('over') });
    expect(over.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/^The team has sent 50 invitations in the last hour/),
      extensions: { code: 'FORBIDDEN', retryAfter: expect.any(Number) },
    });
    expect(over.errors?.[0].extensions.retryAfter).toBeGreaterThan(3500);
    // Another team is not held by this one's count.
    const other = await account(live.service, `rate2-${tag}`);
    const fine = email('fine');
    expect((await api.gql(other.key, INVITE, { t: other.account.defaultTeamId, e: fine })).data.inviteTeamMember.mailSent).toBe(true);
    await live.smtp.next(fine);
  });

  test('a message the mail server refuses is reported to the owner with the link, and the service goes on', async () => {
    const owner = await account(live.service, `fail-${tag}`);
    const to = email('bounce');
    live.smtp.refuse.add(to);
    const invited = await api.gql(owner.key, INVITE, { t: owner.account.defaultTeamId, e: to });
    const answer = invited.data.inviteTeamMember;
    expect(answer.mailSent).toBe(false);
    expect(answer.mailError).toBe("the mail server did not take the message (the service's log says why)");
    expect(answer.link).toMatch(/\/#\/invitation\/i1\.[A-Za-z0-9_-]{43}$/);
    expect((await api.post('/auth/invitations/view', { token: tokenOf(answer.link) })).status).toBe(200);
    expect((await api.gql(owner.key, '{ getCurrentTeam { id } }')).status).toBe(200);
  });
});

describe('without mail', () => {
  let quiet: TestService;
  beforeAll(async () => {
    quiet = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  }, 120_000);
  afterAll(async () => {
    await quiet?.close();
  });

  test('the link is in the inviting owner’s answer only, and works', async () => {
    const api = authClient(NODE_DOOR, () => apiBase(quiet));
    const owner = await account(quiet, 'quiet');
    const to = `quiet-${process.pid}@example.org`;
    const invited = await api.gql(owner.key, INVITE, { t: owner.account.defaultTeamId, e: to });
    const answer = invited.data.inviteTeamMember;
    expect(answer).toMatchObject({ mailSent: false, mailError: 'this service sends no e-mail (CAIRN_SMTP_URL is not set)' });
    expect(answer.link).toMatch(new RegExp(`^${quiet.config.urls.baseUrl.replace(/[.]/g, '\\.')}/#/invitation/i1\\.`));
    // Listing gives no link: it was shown once.
    expect(JSON.stringify((await api.gql(owner.key, LIST, { t: owner.account.defaultTeamId })).data)).not.toContain('i1.');
    const up = await api.post('/auth/sign-up', {
      email: to,
      password: PASSWORD,
      name: `quiet-${process.pid}`,
      invitation: tokenOf(answer.link),
    });
    expect(up.status).toBe(201);
  });
});

test('a message with a recipient or subject that could add a header is never sent', () => {
  const ok = { to: 'a@example.org', subject: 'Hello', text: 'x' };
  expect(mailProblem(ok)).toBeUndefined();
  expect(mailProblem({ ...ok, to: 'a@example.org\r\nBcc: b@example.org' })).toBe('the recipient must be one e-mail address');
  expect(mailProblem({ ...ok, to: 'a@example.org,b@example.org' })).toBe('the recipient must be one e-mail address');
  expect(mailProblem({ ...ok, subject: 'Hi\r\nBcc: b@example.org' })).toBe('the subject must be one line, without control characters');
  expect(mailProblem({ ...ok, subject: 'Hi\nthere' })).toBe('the subject must be one line, without control characters');
});
