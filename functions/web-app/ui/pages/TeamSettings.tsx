/**
 * The team itself: its owners rename it; anyone signed in makes a new team
 * of their own (they own it). A new team comes with its first API key,
 * shown here once; a person signed in with e-mail moves into the new team
 * at once, one signed in with an API key is told to sign in with the new
 * team's key to work in it. What the API refuses (an empty or overlong
 * name, a member who is not an owner) is the notice's text.
 */
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ShownOnce } from '../components.js';
import { useActions } from '../hooks.js';
import { CREATE_TEAM, UPDATE_TEAM, type Team } from '../queries.js';

export function TeamSettings({ owner }: { owner: boolean }) {
  const { api, team, person, teamRenamed, enterNewTeam } = useApp();
  const actions = useActions();
  const [name, setName] = useState(team.name);
  const [newName, setNewName] = useState('');
  const [made, setMade] = useState<{ team: Team; key: string } | null>(null);
  const shownRef = useRef<HTMLDivElement>(null);
  const busy = actions.pending !== null;
  // Another team (switched to), or the same one renamed: the field shows its name as it is.
  useEffect(() => setName(team.name), [team.id, team.name]);
  useEffect(() => {
    if (made) shownRef.current?.querySelector('input')?.focus();
  }, [made]);

  const rename = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setMade(null);
    const renamed = await actions.run(
      'Renaming the team',
      () => api.mutate<{ updateTeam: Team }>(UPDATE_TEAM, { teamId: team.id, name }),
      (r) => `The team is now called ${r.updateTeam.name}.`,
    );
    if (renamed) teamRenamed(renamed.updateTeam.name);
  };

  const create = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setMade(null);
    const created = await actions.run(
      `Creating the team ${newName.trim()}`,
      () => api.mutate<{ createTeam: { team: Team; apiKey: { key: string } } }>(CREATE_TEAM, { name: newName }),
      (r) => `The team ${r.createTeam.team.name} is made, and you own it. Copy its first API key now: it is not shown again.`,
    );
    if (created) {
      setMade({ team: created.createTeam.team, key: created.createTeam.apiKey.key });
      setNewName('');
    }
  };

  return (
    <section className="card" aria-labelledby="team-settings-title">
      <h2 id="team-settings-title">Team settings</h2>
      {owner ? (
        <form className="inline-form" onSubmit={(e) => void rename(e)}>
          <label htmlFor="team-name-field">Team name</label>
          <input id="team-name-field" value={name} onChange={(e) => setName(e.currentTarget.value)} autoComplete="off" maxLength={100} />
          <button type="submit" className="button" disabled={busy || name.trim() === '' || name.trim() === team.name}>
            Rename team
          </button>
        </form>
      ) : (
        <p className="muted">Owners of the team rename it.</p>
      )}
      <form className="inline-form" onSubmit={(e) => void create(e)}>
        <label htmlFor="new-team-name">New team's name</label>
        <input
          id="new-team-name"
          value={newName}
          onChange={(e) => setNewName(e.currentTarget.value)}
          placeholder="e.g. Studio"
          autoComplete="off"
          maxLength={100}
        />
        <button type="submit" className="button button-primary" disabled={busy || newName.trim() === ''}>
          Create team
        </button>
      </form>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {made ? (
        <div ref={shownRef}>
          <ShownOnce label={`API key for ${made.team.name}`} value={made.key}>
            <p className="hint">
              This is the only time the key is shown. It acts as you in {made.team.name}; revoke it on that team's page if you do not need
              it.
            </p>
          </ShownOnce>
          {person ? (
            <button type="button" className="button button-primary" onClick={() => enterNewTeam(made.team)}>
              Work in {made.team.name}
            </button>
          ) : (
            <p className="hint">To work in {made.team.name}, sign in with this key.</p>
          )}
        </div>
      ) : null}
    </section>
  );
}
