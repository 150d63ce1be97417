/**
 * Owners' side of invitations on the team page: invite an e-mail with a
 * role, see the pending invitations with their expiry, withdraw one. When
 * no e-mail went out, the link is shown here, once, to pass on.
 */
import { useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton, ShownOnce } from '../components.js';
import { formatTime } from '../format.js';
import { useActions, useLoad } from '../hooks.js';

type Role = 'OWNER' | 'MEMBER';
interface Invitation {
  id: string;
  email: string;
  role: Role;
  expiresAt: string;
}

const LIST = `query Invitations($teamId: ID!) { getInvitations(teamId: $teamId) { id email role expiresAt } }`;
const INVITE = `mutation Invite($teamId: ID!, $email: String!, $role: TeamRole) {
  inviteTeamMember(teamId: $teamId, email: $email, role: $role) { invitation { id email role expiresAt } mailSent link mailError }
}`;
const REVOKE = `mutation RevokeInvitation($teamId: ID!, $invitationId: ID!) { revokeInvitation(teamId: $teamId, invitationId: $invitationId) { id } }`;

export function Invitations() {
  const { api, team } = useApp();
  const actions = useActions();
  const list = useLoad(
    async () => (await api.query<{ getInvitations: Invitation[] | null }>(LIST, { teamId: team.id })).getInvitations ?? [],
    [team.id],
  );
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('MEMBER');
  const [link, setLink] = useState<{ email: string; link: string; why: string } | null>(null);
  const busy = actions.pending !== null;

  const invite = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const address = email.trim();
    if (!address) return;
    setLink(null);
    const done = await actions.run(
      `Inviting ${address}`,
      () =>
        api.mutate<{ inviteTeamMember: { invitation: Invitation; mailSent: boolean; link: string | null; mailError: string | null } }>(
          INVITE,
          {
            teamId: team.id,
            email: address,
            role,
          },
        ),
      (r) =>
        r.inviteTeamMember.mailSent
          ? `An invitation is on its way to ${r.inviteTeamMember.invitation.email}.`
          : `${r.inviteTeamMember.invitation.email} is invited; no e-mail was sent, so pass on the link below.`,
    );
    if (!done) return;
    const made = done.inviteTeamMember;
    if (made.link) setLink({ email: made.invitation.email, link: made.link, why: made.mailError ?? '' });
    setEmail('');
    setRole('MEMBER');
    await list.reload(true);
  };
  const revoke = async (invitation: Invitation) => {
    const done = await actions.run(
      `Withdrawing the invitation of ${invitation.email}`,
      () => api.mutate(REVOKE, { teamId: team.id, invitationId: invitation.id }),
      () => `The invitation of ${invitation.email} is withdrawn: its link no longer works.`,
    );
    if (done) await list.reload(true);
  };

  return (
    <div className="stack" aria-labelledby="invitations-title" role="group">
      <h3 id="invitations-title">Invitations</h3>
      <form className="inline-form" onSubmit={(e) => void invite(e)}>
        <label htmlFor="invite-email">E-mail</label>
        <input
          id="invite-email"
          type="text"
          inputMode="email"
          value={email}
          onChange={(e) => setEmail(e.currentTarget.value)}
          autoComplete="off"
          required
        />
        <label htmlFor="invite-role">Role</label>
        <select id="invite-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
          <option value="MEMBER">Member</option>
          <option value="OWNER">Owner</option>
        </select>
        <button type="submit" className="button button-primary" disabled={busy}>
          Invite
        </button>
      </form>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {link ? (
        <ShownOnce label={`Invitation link for ${link.email}`} value={link.link}>
          <p className="hint">
            Shown once: send it to {link.email} yourself. It works once, for 7 days. {link.why}
          </p>
        </ShownOnce>
      ) : null}
      {list.error ? <p className="notice notice-error">{list.error}</p> : null}
      {list.data && list.data.length > 0 ? (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">E-mail</th>
              <th scope="col">Role</th>
              <th scope="col">Expires</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((i) => (
              <tr key={i.id} data-invitation={i.email}>
                <td data-label="E-mail">{i.email}</td>
                <td data-label="Role">{i.role === 'OWNER' ? 'Owner' : 'Member'}</td>
                <td data-label="Expires">{formatTime(i.expiresAt)}</td>
                <td className="actions">
                  <ConfirmButton
                    label="Withdraw"
                    confirmLabel={`Withdraw ${i.email}'s invitation`}
                    disabled={busy}
                    onConfirm={() => void revoke(i)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : list.data ? (
        <p className="muted">No invitations are waiting.</p>
      ) : null}
    </div>
  );
}
