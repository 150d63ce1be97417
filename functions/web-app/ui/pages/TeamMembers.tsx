/**
 * The team's members: everyone sees who they are and their roles; owners
 * also add members by account name or invite them by e-mail
 * (TeamInvitations.tsx), change roles and remove members. What
 * the API refuses (an unknown account, the last owner) is the notice's text.
 */
import { useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton } from '../components.js';
import { formatTime } from '../format.js';
import { useActions } from '../hooks.js';
import { ADD_MEMBER, REMOVE_MEMBER, UPDATE_MEMBER, type Member } from '../queries.js';
import { Invitations } from './TeamInvitations.js';

type Role = Member['role'];
const ROLE_TEXT: Record<Role, string> = { OWNER: 'Owner', MEMBER: 'Member' };
const asRole = (role: Role) => (role === 'OWNER' ? 'an owner' : 'a member');

export function Members({ members, me, onChanged }: { members: Member[]; me: string | null; onChanged(): void }) {
  const { api, team, signOut } = useApp();
  const actions = useActions();
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('MEMBER');
  const owner = members.some((m) => m.accountId === me && m.role === 'OWNER');
  const busy = actions.pending !== null;

  const add = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const accountName = name.trim();
    if (!accountName) return;
    const added = await actions.run(
      `Adding ${accountName}`,
      () => api.mutate<{ addTeamMember: Member }>(ADD_MEMBER, { teamId: team.id, accountName, role }),
      (r) => `${r.addTeamMember.accountName} is now ${asRole(r.addTeamMember.role)} of the team.`,
    );
    if (added) {
      setName('');
      setRole('MEMBER');
      onChanged();
    }
  };
  const changeRole = async (m: Member, next: Role) => {
    const done = await actions.run(
      `Making ${m.accountName} ${asRole(next)}`,
      () => api.mutate(UPDATE_MEMBER, { teamId: team.id, accountId: m.accountId, role: next }),
      () => `${m.accountName} is now ${asRole(next)}.`,
    );
    if (done) onChanged();
  };
  const remove = async (m: Member) => {
    const done = await actions.run(
      `Removing ${m.accountName}`,
      () => api.mutate(REMOVE_MEMBER, { teamId: team.id, accountId: m.accountId }),
      () => `${m.accountName} is no longer in the team, and the API keys they made for it are revoked.`,
    );
    if (!done) return;
    // Leaving revokes one's own keys, this tab's too.
    if (m.accountId === me) return signOut('You left the team: the API keys you made for it, this one too, are revoked.');
    onChanged();
  };

  return (
    <section className="card" aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      {owner ? (
        <form className="inline-form" onSubmit={(e) => void add(e)}>
          <label htmlFor="member-name">Account name</label>
          <input
            id="member-name"
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            autoComplete="off"
            spellCheck={false}
            required
          />
          <label htmlFor="member-role">Role</label>
          <select id="member-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            <option value="MEMBER">Member</option>
            <option value="OWNER">Owner</option>
          </select>
          <button type="submit" className="button button-primary" disabled={busy}>
            Add member
          </button>
        </form>
      ) : (
        <p className="muted">Owners add members, change their roles and remove them.</p>
      )}
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Account</th>
            <th scope="col">Role</th>
            <th scope="col">Member since</th>
            {owner ? (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {members.map((m) => {
            const other: Role = m.role === 'OWNER' ? 'MEMBER' : 'OWNER';
            return (
              <tr key={m.accountId} data-member={m.accountName}>
                <td data-label="Account">
                  <span>
                    {m.accountName}
                    {m.accountId === me ? <span className="tag tag-current">you</span> : null}
                  </span>
                </td>
                <td data-label="Role">
                  <span className={`tag ${m.role === 'OWNER' ? 'tag-owner' : ''}`}>{ROLE_TEXT[m.role]}</span>
                </td>
                <td data-label="Member since">{formatTime(m.createdAt)}</td>
                {owner ? (
                  <td className="actions">
                    <span className="row-actions">
                      <button type="button" className="button button-small" disabled={busy} onClick={() => void changeRole(m, other)}>
                        Make {other === 'OWNER' ? 'owner' : 'member'}
                      </button>
                      <ConfirmButton
                        label="Remove"
                        confirmLabel={m.accountId === me ? 'Leave the team' : `Remove ${m.accountName}`}
                        disabled={busy}
                        onConfirm={() => void remove(m)}
                      />
                    </span>
                  </td>
                ) : null}
              </tr>
            );
          })}
        </tbody>
      </table>
      {owner ? <Invitations /> : null}
    </section>
  );
}
