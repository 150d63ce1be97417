/** Signing in with an API key; the key is checked by asking for its team. */
import { useState, type FormEvent } from 'react';
import { ApiError, createApi, messageOf } from '../api.js';
import { CURRENT_TEAM, type Team } from '../queries.js';
import { useTitle } from '../hooks.js';

export function SignIn({
  graphqlPath,
  notice,
  onSignedIn,
}: {
  graphqlPath: string;
  notice?: string;
  onSignedIn(key: string, team: Team): void;
}) {
  useTitle('Sign in');
  const [key, setKey] = useState('');
  const [shown, setShown] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) {
      setError('Enter an API key.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const api = createApi(graphqlPath, trimmed, () => {});
      const { getCurrentTeam } = await api.query<{ getCurrentTeam: Team }>(CURRENT_TEAM);
      onSignedIn(trimmed, getCurrentTeam);
    } catch (err) {
      setError(
        err instanceof ApiError && err.code === 'UNAUTHENTICATED'
          ? 'This API key was not accepted: it is wrong, or it has been revoked. Check it, or ask a team owner for a new one.'
          : messageOf(err),
      );
      setBusy(false);
    }
  };

  return (
    <main id="main" className="sign-in">
      <div className="sign-in-card">
        <div className="brand brand-large" aria-hidden="true">
          <Logo />
          Cairn
        </div>
        <h1>Sign in</h1>
        <p className="muted">
          Sign in with an API key of your team. It stays in this browser tab only, and is forgotten when you sign out or close the tab.
        </p>
        {notice ? (
          <p className="notice notice-info" role="status">
            {notice}
          </p>
        ) : null}
        <form onSubmit={(e) => void submit(e)} noValidate>
          <label htmlFor="api-key">API key</label>
          <div className="copy-row">
            <input
              id="api-key"
              name="api-key"
              className="mono"
              type={shown ? 'text' : 'password'}
              autoComplete="off"
              spellCheck={false}
              autoFocus
              value={key}
              onChange={(e) => setKey(e.currentTarget.value)}
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? 'sign-in-error' : 'api-key-hint'}
            />
            <button type="button" className="button button-small" onClick={() => setShown(!shown)} aria-pressed={shown}>
              {shown ? 'Hide' : 'Show'}
            </button>
          </div>
          <p id="api-key-hint" className="hint">
            It starts with <code>cairn_</code>. The first one is printed when the service first starts; more are made on the Team page.
          </p>
          {error ? (
            <p id="sign-in-error" className="notice notice-error" role="alert">
              {error}
            </p>
          ) : null}
          <button type="submit" className="button button-primary button-wide" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
      </div>
    </main>
  );
}

export function Logo() {
  return (
    <svg className="logo" viewBox="0 0 32 32" width="28" height="28" aria-hidden="true" focusable="false">
      <path d="M4 26c0-2.5 5.4-4.5 12-4.5s12 2 12 4.5-5.4 4.5-12 4.5S4 28.5 4 26z" fill="#5aa2e6" />
      <path d="M7 17.5c0-2.2 4-4 9-4s9 1.8 9 4-4 4-9 4-9-1.8-9-4z" fill="#8cc1f2" />
      <path d="M10 9.5c0-1.9 2.7-3.5 6-3.5s6 1.6 6 3.5-2.7 3.5-6 3.5-6-1.6-6-3.5z" fill="#c6e0f8" />
    </svg>
  );
}
