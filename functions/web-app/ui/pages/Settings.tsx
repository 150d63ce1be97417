/**
 * The person's settings (`#/settings`): their profile; their web app
 * sessions, each signed out on its own or all at once ("sign out
 * everywhere", this browser included); and the API section of the service
 * description ("user settings, API section, action Create API keys"): the
 * account's storage key pairs, each secret shown once, and their own
 * hosting API keys for the team in use. Signed in with a password, also
 * that password, changed with the current one (the service signs out the
 * account's other sessions), and passkeys: added from this browser (or a
 * security key, a phone), listed, removed, and optionally asked for after
 * the password. Like the sessions, these act on the session and its CSRF
 * token alone; only the password's change asks for the current one.
 */
import { useRef, useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import {
  AuthError,
  changePassword,
  requestPasswordLink,
  linkOutcome,
  listLinkedIdentities,
  listPasskeys,
  startProviderLink,
  unlinkIdentity,
  makeRecoveryCodes,
  passkeysSupported,
  recoveryCodeStatus,
  registerPasskey,
  removePasskey,
  renamePasskey,
  setPasskeyRequired,
  signOut as signOutOfSession,
  type PasskeyInfo,
} from '../auth.js';
import { ActionNotice, ConfirmButton, CopyButton, ErrorNotice, Loading, PageHeader, TimeAgo } from '../components.js';
import { formatAgo } from '../format.js';
import { useActions, useLoad, useTitle } from '../hooks.js';
import { REVOKE_SESSION, SETTINGS, type ApiKey, type Session, type StorageKeyPair } from '../queries.js';
import { ApiKeysSection, StorageKeyPairsSection } from './Credentials.js';

interface SettingsData {
  getCurrentMember: { accountId: string; accountName: string; role: 'OWNER' | 'MEMBER' };
  getSessions: Session[];
  getApiKeysByTeam: ApiKey[] | null;
  getStorageKeyPairs: StorageKeyPair[];
}

export function Settings() {
  useTitle('Settings');
  const { api, team, person, config } = useApp();
  const data = useLoad(() => api.query<SettingsData>(SETTINGS, { teamId: team.id }), [team.id]);
  const me = data.data?.getCurrentMember;
  const reload = () => void data.reload(true);

  return (
    <>
      <PageHeader title="Settings" subtitle="Your profile, where you are signed in, and your keys." />
      {data.loading && !data.data ? <Loading label="Loading your settings…" /> : null}
      {data.error ? <ErrorNotice retry={() => void data.reload()}>Could not load your settings: {data.error}</ErrorNotice> : null}
      {data.data && me ? (
        <div className="stack">
          <section className="card" aria-labelledby="profile-title">
            <h2 id="profile-title">Profile</h2>
            <dl className="facts">
              <div className="fact">
                <dt>Account name</dt>
                <dd>{me.accountName}</dd>
              </div>
              <div className="fact">
                <dt>E-mail</dt>
                <dd>{person ? (person.email ?? '—') : <span className="muted">Not shown when signed in with an API key</span>}</dd>
              </div>
              <div className="fact">
                <dt>Role in {team.name}</dt>
                <dd>{me.role === 'OWNER' ? 'Owner' : 'Member'}</dd>
              </div>
              <div className="fact">
                <dt>Signed in with</dt>
                <dd>{person ? 'A session in this browser' : 'An API key, in this tab'}</dd>
              </div>
            </dl>
          </section>
          {person?.passwordSet ? <PasswordSection csrfToken={person.csrfToken} onChanged={reload} /> : null}
          {person && !person.passwordSet && person.email ? <NoPasswordSection email={person.email} /> : null}
          {person ? <PasskeysSection csrfToken={person.csrfToken} offered={config.passkeys} /> : null}
          {person && config.oidc ? <ProvidersSection csrfToken={person.csrfToken} name={config.oidc.name} /> : null}
          <Sessions sessions={data.data.getSessions} onChanged={reload} />
          <section className="stack" aria-labelledby="api-title">
            <div>
              <h2 id="api-title">API</h2>
              <p className="muted">Keys for scripts, S3 tools and the command line. Each secret is shown once, when it is made.</p>
            </div>
            <StorageKeyPairsSection pairs={data.data.getStorageKeyPairs} heading="h3" onChanged={reload} />
            <ApiKeysSection
              keys={(data.data.getApiKeysByTeam ?? []).filter((k) => k.createdBy === me.accountId)}
              heading="h3"
              intro={
                <>
                  Your keys for the GraphQL API in {team.name}: each acts with your rights there. The team's other keys are on the Team
                  page.
                </>
              }
              onChanged={reload}
            />
          </section>
        </div>
      ) : null}
    </>
  );
}

/**
 * An account made by signing in with a provider has no password its person
 * knows: none to change here, but a reset link, sent to the account's
 * e-mail, sets one.
 */
function NoPasswordSection({ email }: { email: string }) {
  const [sent, setSent] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const ask = async () => {
    setBusy(true);
    setProblem(null);
    try {
      setSent(await requestPasswordLink(email));
    } catch (err) {
      setProblem(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="card" aria-labelledby="password-title">
      <h2 id="password-title">Password</h2>
      <p className="muted">
        You sign in through your identity provider, and this account has no password. To sign in with one as well, set it with a link sent
        to {email}.
      </p>
      {problem ? (
        <p className="notice notice-error" role="alert">
          {problem}
        </p>
      ) : null}
      {sent ? (
        <p className="notice notice-ok" role="status">
          {sent}
        </p>
      ) : (
        <button type="button" className="button" disabled={busy} onClick={() => void ask()}>
          Send me a link to set a password
        </button>
      )}
    </section>
  );
}

/** The password, changed with the current one; the other sessions end (the service's answer says how many). */
function PasswordSection({ csrfToken, onChanged }: { csrfToken: string; onChanged(): void }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeated, setRepeated] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ message: string; field?: string } | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const inputs = useRef<Record<string, HTMLInputElement | null>>({});

  const refuse = (message: string, field?: string) => {
    setError({ message, field });
    if (field) inputs.current[field]?.focus();
  };

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setDone(null);
    if (!current) return refuse('Enter your current password.', 'currentPassword');
    if (!next) return refuse('Enter a new password.', 'newPassword');
    if (next !== repeated) return refuse('The new password and its repetition differ.', 'repeatPassword');
    setBusy(true);
    setError(null);
    try {
      const ended = await changePassword(csrfToken, current, next);
      setCurrent('');
      setNext('');
      setRepeated('');
      setDone(
        ended === 0
          ? 'Password changed. No other session was signed in.'
          : `Password changed. ${ended} other session${ended === 1 ? ' was' : 's were'} signed out.`,
      );
      onChanged();
    } catch (err) {
      if (err instanceof AuthError) refuse(err.message, err.field);
      else refuse(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  const field = (id: string, label: string, value: string, set: (v: string) => void, autoComplete: string) => (
    <div className="field">
      <label htmlFor={`settings-${id}`}>{label}</label>
      <input
        id={`settings-${id}`}
        ref={(el) => void (inputs.current[id] = el)}
        type="password"
        autoComplete={autoComplete}
        value={value}
        aria-invalid={error?.field === id ? true : undefined}
        aria-describedby={error?.field === id ? 'password-error' : undefined}
        onChange={(e) => set(e.currentTarget.value)}
      />
    </div>
  );

  return (
    <section className="card" aria-labelledby="password-title">
      <h2 id="password-title">Password</h2>
      <p className="muted">Changing it signs out every other browser signed in to your account.</p>
      <form className="form" onSubmit={(e) => void submit(e)} noValidate>
        {field('currentPassword', 'Current password', current, setCurrent, 'current-password')}
        {field('newPassword', 'New password', next, setNext, 'new-password')}
        {field('repeatPassword', 'New password again', repeated, setRepeated, 'new-password')}
        {error ? (
          <p id="password-error" className="notice notice-error" role="alert">
            {error.message}
          </p>
        ) : null}
        {done ? (
          <p className="notice notice-ok" role="status">
            {done}
          </p>
        ) : null}
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Changing…' : 'Change password'}
        </button>
      </form>
    </section>
  );
}

/**
 * Passkeys: each listed with when it was added and last used, removed on
 * its own; a new one made by this browser's WebAuthn prompt under a name;
 * and "ask for a passkey after the password", which the service refuses
 * to leave on without a passkey (the last one cannot be removed while it
 * is on: turn it off first).
 */
function PasskeysSection({ csrfToken, offered }: { csrfToken: string; offered: boolean }) {
  const supported = offered && passkeysSupported();
  const list = useLoad(
    () => (supported ? listPasskeys() : Promise.resolve({ passkeys: [] as PasskeyInfo[], required: false })),
    [supported],
  );
  const actions = useActions();
  const [name, setName] = useState('');
  /** Recovery codes just made (by turning the passkey on): shown in their section, this once. */
  const [freshCodes, setFreshCodes] = useState<string[] | null>(null);
  /** The passkey being renamed, and the name typed so far. */
  const [renaming, setRenaming] = useState<{ id: string; name: string } | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const reload = () => void list.reload(true);

  const add = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const made = await actions.run(
      'Adding a passkey',
      () => registerPasskey(csrfToken, name.trim() || 'Passkey'),
      (p) => `The passkey “${p.name}” is added: you can sign in with it instead of your password.`,
    );
    if (made === undefined) return;
    setName('');
    reload();
  };
  const remove = async (p: PasskeyInfo) => {
    const done = await actions.run(
      `Removing the passkey “${p.name}”`,
      () => removePasskey(csrfToken, p.id).then(() => true),
      () => `The passkey “${p.name}” is removed: it signs no one in any more.`,
    );
    if (done === undefined) return;
    reload();
    heading.current?.focus();
  };
  const rename = async (event: FormEvent<HTMLFormElement>, p: PasskeyInfo) => {
    event.preventDefault();
    if (!renaming) return;
    const done = await actions.run(
      `Renaming the passkey “${p.name}”`,
      () => renamePasskey(csrfToken, p.id, renaming.name),
      (renamed) => `The passkey “${p.name}” is now “${renamed.name}”.`,
    );
    if (done === undefined) return;
    setRenaming(null);
    reload();
  };
  const setRequired = async (required: boolean) => {
    const done = await actions.run(
      required ? 'Asking for a passkey after the password' : 'No longer asking for a passkey after the password',
      () => setPasskeyRequired(csrfToken, required),
      (codes) =>
        required
          ? `From your next sign-in with your password, one of your passkeys is asked for too.${codes ? ' Keep the recovery codes below: they are shown once.' : ''}`
          : 'Your password alone signs you in again.',
    );
    if (done) setFreshCodes(done);
    reload();
  };

  return (
    <section className="card" aria-labelledby="passkeys-title">
      <h2 id="passkeys-title" ref={heading} tabIndex={-1}>
        Passkeys
      </h2>
      <p className="muted">
        A passkey signs you in with this device's lock (a fingerprint, a face, a PIN) or a security key, instead of your password, or after
        it as a second factor.
      </p>
      {!offered ? (
        <p className="muted">
          This service offers no passkeys: browsers allow them only at a domain name, and its address is an IP address.
        </p>
      ) : !supported ? (
        <p className="muted">This browser cannot use passkeys.</p>
      ) : (
        <>
          <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
          {list.error ? <ErrorNotice retry={() => void list.reload()}>Could not load your passkeys: {list.error}</ErrorNotice> : null}
          {list.data ? (
            <>
              {list.data.passkeys.length === 0 ? (
                <p className="muted">You have no passkey yet.</p>
              ) : (
                <table className="table">
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Added</th>
                      <th scope="col">Last used</th>
                      <th scope="col">
                        <span className="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.data.passkeys.map((p) => (
                      <tr key={p.id} data-passkey={p.id}>
                        <td data-label="Name">
                          {renaming?.id === p.id ? (
                            <form className="form-inline" onSubmit={(e) => void rename(e, p)} noValidate>
                              <label className="visually-hidden" htmlFor={`rename-${p.id}`}>
                                New name for “{p.name}”
                              </label>
                              <input
                                id={`rename-${p.id}`}
                                type="text"
                                maxLength={64}
                                autoFocus
                                value={renaming.name}
                                onChange={(e) => setRenaming({ id: p.id, name: e.currentTarget.value })}
                              />
                              <button type="submit" className="button button-small" disabled={actions.pending !== null}>
                                Save
                              </button>
                              <button type="button" className="button button-small" onClick={() => setRenaming(null)}>
                                Cancel
                              </button>
                            </form>
                          ) : (
                            p.name
                          )}
                        </td>
                        <td data-label="Added">
                          <TimeAgo iso={p.createdAt} formatted={formatAgo(p.createdAt)} />
                        </td>
                        <td data-label="Last used">
                          {p.lastUsedAt ? (
                            <TimeAgo iso={p.lastUsedAt} formatted={formatAgo(p.lastUsedAt)} />
                          ) : (
                            <span className="muted">never</span>
                          )}
                        </td>
                        <td className="actions">
                          {renaming?.id === p.id ? null : (
                            <button
                              type="button"
                              className="button button-small"
                              disabled={actions.pending !== null}
                              aria-label={`Rename “${p.name}”`}
                              onClick={() => setRenaming({ id: p.id, name: p.name })}
                            >
                              Rename
                            </button>
                          )}{' '}
                          <ConfirmButton
                            label="Remove"
                            confirmLabel={`Remove “${p.name}”`}
                            disabled={actions.pending !== null}
                            onConfirm={() => void remove(p)}
                          />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              <label className="checkbox">
                <input
                  type="checkbox"
                  checked={list.data.required}
                  disabled={actions.pending !== null || (!list.data.required && list.data.passkeys.length === 0)}
                  onChange={(e) => void setRequired(e.currentTarget.checked)}
                />
                Ask for a passkey after my password
              </label>
              {list.data.required ? <p className="muted">Your last passkey cannot be removed while this is on.</p> : null}
              <RecoveryCodesSection csrfToken={csrfToken} fresh={freshCodes} onFresh={setFreshCodes} required={list.data.required} />
            </>
          ) : null}
          <form className="form form-inline" onSubmit={(e) => void add(e)} noValidate>
            <div className="field">
              <label htmlFor="passkey-name">Passkey name</label>
              <input
                id="passkey-name"
                type="text"
                maxLength={64}
                placeholder="This laptop"
                value={name}
                onChange={(e) => setName(e.currentTarget.value)}
              />
            </div>
            <button type="submit" className="button" disabled={actions.pending !== null}>
              Add a passkey
            </button>
          </form>
        </>
      )}
    </section>
  );
}

/**
 * Recovery codes: ten one-time codes that stand in for a passkey after the
 * password, for a lost device. Shown once when made (here, or by turning
 * the passkey on), kept by the service only as digests; making new ones
 * replaces them all. The section says how many are left.
 */
function RecoveryCodesSection({
  csrfToken,
  fresh,
  onFresh,
  required,
}: {
  csrfToken: string;
  fresh: string[] | null;
  onFresh(codes: string[] | null): void;
  required: boolean;
}) {
  const status = useLoad(() => recoveryCodeStatus(), [fresh]);
  const actions = useActions();
  const make = async () => {
    const codes = await actions.run(
      'Making recovery codes',
      () => makeRecoveryCodes(csrfToken),
      () => 'Ten new recovery codes are made, and the old ones no longer work. Keep these: they are shown once.',
    );
    if (codes) onFresh(codes);
  };
  const remaining = status.data?.remaining ?? 0;
  return (
    <section className="stack" aria-labelledby="recovery-codes-title">
      <h3 id="recovery-codes-title">Recovery codes</h3>
      <p className="muted">
        If you lose your passkeys, a recovery code signs you in after your password instead, once each. Keep them somewhere safe, apart from
        your devices.
      </p>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {status.error ? (
        <ErrorNotice retry={() => void status.reload()}>Could not load your recovery codes: {status.error}</ErrorNotice>
      ) : null}
      {status.data ? (
        <p data-recovery-remaining={remaining}>
          {remaining === 0
            ? required
              ? 'You have no recovery code left: make new ones, or a lost passkey locks you out.'
              : 'You have no recovery codes.'
            : `${remaining} of 10 recovery codes left.`}
        </p>
      ) : null}
      {fresh ? (
        <div className="shown-once" role="group" aria-label="Your new recovery codes">
          <p className="notice notice-info">These codes are shown once: copy or print them now.</p>
          <ul className="mono recovery-codes">
            {fresh.map((code) => (
              <li key={code}>{code}</li>
            ))}
          </ul>
          <div className="copy-row">
            <CopyButton text={fresh.join('\n')} label="Copy the codes" />
            <button type="button" className="button button-small" onClick={() => onFresh(null)}>
              I have kept them
            </button>
          </div>
        </div>
      ) : null}
      {remaining > 0 ? (
        <ConfirmButton
          label="Make new recovery codes"
          confirmLabel="Replace my recovery codes"
          small={false}
          disabled={actions.pending !== null}
          onConfirm={() => void make()}
        />
      ) : (
        <button type="button" className="button" disabled={actions.pending !== null} onClick={() => void make()}>
          Make recovery codes
        </button>
      )}
    </section>
  );
}

/**
 * Sign-in providers: the service's OpenID Connect provider linked to this
 * account ("Connect <name>": the provider's page, then back here with what
 * came of it in `?link=`), and unlinked while another way in remains.
 */
function ProvidersSection({ csrfToken, name }: { csrfToken: string; name: string }) {
  const list = useLoad(() => listLinkedIdentities(), []);
  const actions = useActions();
  const [outcome] = useState(() => {
    const value = new URLSearchParams(window.location.search).get('link');
    if (value) window.history.replaceState(null, '', `${window.location.pathname}${window.location.hash}`);
    return value ? linkOutcome(value, name) : null;
  });
  const connect = async () => {
    const url = await actions.run(
      `Going to ${name}`,
      () => startProviderLink(csrfToken),
      () => `Going to ${name}…`,
    );
    if (url) window.location.assign(url);
  };
  const unlink = async (id: string) => {
    const done = await actions.run(
      `Unlinking ${name}`,
      () => unlinkIdentity(csrfToken, id).then(() => true),
      () => `${name} is unlinked: it no longer signs you in.`,
    );
    if (done) void list.reload(true);
  };
  return (
    <section className="card" aria-labelledby="providers-title">
      <h2 id="providers-title">Sign-in providers</h2>
      <p className="muted">Sign in with {name} as well as your other ways in.</p>
      {outcome ? (
        <p className={`notice ${outcome.ok ? 'notice-ok' : 'notice-error'}`} role={outcome.ok ? 'status' : 'alert'}>
          {outcome.text}
        </p>
      ) : null}
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {list.error ? <ErrorNotice retry={() => void list.reload()}>Could not load your providers: {list.error}</ErrorNotice> : null}
      {list.data ? (
        list.data.length === 0 ? (
          <button type="button" className="button" disabled={actions.pending !== null} onClick={() => void connect()}>
            Connect {name}
          </button>
        ) : (
          <ul className="plain-list">
            {list.data.map((identity) => (
              <li key={identity.id} data-identity={identity.id}>
                {name}
                {identity.email ? ` (${identity.email})` : ''}, linked{' '}
                <TimeAgo iso={identity.createdAt} formatted={formatAgo(identity.createdAt)} />{' '}
                <ConfirmButton
                  label="Unlink"
                  confirmLabel={`Unlink ${name}`}
                  disabled={actions.pending !== null}
                  onConfirm={() => void unlink(identity.id)}
                />
              </li>
            ))}
          </ul>
        )
      ) : null}
    </section>
  );
}

/** "Chrome on Linux" from a User-Agent, or the start of it when it is not one of the common browsers. */
export function describeAgent(agent: string | null): string {
  if (!agent) return 'Unknown browser';
  const browser = /Edg\//.test(agent)
    ? 'Edge'
    : /Firefox\//.test(agent)
      ? 'Firefox'
      : /HeadlessChrome\//.test(agent)
        ? 'Headless Chrome'
        : /Chrom(e|ium)\//.test(agent)
          ? 'Chrome'
          : /Version\/.*Safari\//.test(agent)
            ? 'Safari'
            : undefined;
  const system = /Android/.test(agent)
    ? 'Android'
    : /iPhone|iPad/.test(agent)
      ? 'iOS'
      : /Windows/.test(agent)
        ? 'Windows'
        : /Mac OS X/.test(agent)
          ? 'macOS'
          : /Linux|X11/.test(agent)
            ? 'Linux'
            : undefined;
  if (!browser) return agent.length > 40 ? `${agent.slice(0, 40)}…` : agent;
  return system ? `${browser} on ${system}` : browser;
}

function Sessions({ sessions, onChanged }: { sessions: Session[]; onChanged(): void }) {
  const { api, person, signOut, signedOut } = useApp();
  const actions = useActions();
  const heading = useRef<HTMLHeadingElement>(null);

  const revoke = async (s: Session) => {
    const done = await actions.run(
      `Signing out ${describeAgent(s.userAgent)}`,
      () => api.mutate<{ revokeSession: boolean }>(REVOKE_SESSION, { sessionId: s.id }),
      () => `${describeAgent(s.userAgent)} (${s.address ?? 'unknown address'}) is signed out.`,
    );
    if (done === undefined) return;
    onChanged();
    // Its row goes: focus stays in the section rather than falling to the page's start.
    heading.current?.focus();
  };
  const everywhere = async () => {
    if (person) {
      const done = await actions.run(
        'Signing out everywhere',
        () => signOutOfSession(person.csrfToken, true).then(() => true),
        () => '',
      );
      if (done) signedOut('You signed out everywhere: every session of your account has ended, this one too.');
      return;
    }
    // Signed in with an API key, which no sign-out ends: every session is revoked, one by one.
    await actions.run(
      'Signing out everywhere',
      async () => {
        for (const s of sessions) await api.mutate(REVOKE_SESSION, { sessionId: s.id });
        return sessions.length;
      },
      (n) => `${n} session${n === 1 ? '' : 's'} signed out. This tab stays signed in with its API key.`,
    );
    onChanged();
    heading.current?.focus();
  };

  return (
    <section className="card" aria-labelledby="sessions-title">
      <div className="section-header">
        <h2 id="sessions-title" ref={heading} tabIndex={-1}>
          Sessions
        </h2>
        {sessions.length > 0 ? (
          <ConfirmButton
            label="Sign out everywhere"
            confirmLabel="Sign out of every session"
            disabled={actions.pending !== null}
            onConfirm={() => void everywhere()}
          />
        ) : null}
      </div>
      <p className="muted">
        The browsers signed in to your account with its e-mail and password. A session ends after 7 days unused, and 30 days after it began.
      </p>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {sessions.length === 0 ? (
        <p className="muted">No browser is signed in with your e-mail and password.</p>
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Browser</th>
              <th scope="col">Address</th>
              <th scope="col">Signed in</th>
              <th scope="col">Last seen</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sessions.map((s) => (
              <tr key={s.id} data-session={s.id} data-current={s.current ? 'yes' : undefined}>
                <td data-label="Browser">
                  <span title={s.userAgent ?? undefined}>
                    {describeAgent(s.userAgent)}
                    {s.current ? <span className="tag tag-current">this browser</span> : null}
                  </span>
                </td>
                <td data-label="Address">{s.address ?? <span className="muted">—</span>}</td>
                <td data-label="Signed in">
                  <TimeAgo iso={s.createdAt} formatted={formatAgo(s.createdAt)} />
                </td>
                <td data-label="Last seen">
                  <TimeAgo iso={s.lastSeenAt} formatted={formatAgo(s.lastSeenAt)} />
                </td>
                <td className="actions">
                  <button
                    type="button"
                    className="button button-small"
                    disabled={actions.pending !== null}
                    onClick={() => (s.current ? signOut() : void revoke(s))}
                    aria-label={
                      s.current ? 'Sign out this browser' : `Sign out ${describeAgent(s.userAgent)}, ${s.address ?? 'unknown address'}`
                    }
                  >
                    Sign out
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
