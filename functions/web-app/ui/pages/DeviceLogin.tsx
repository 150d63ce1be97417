/**
 * `/app/device`: where a person approves `cairn login` (RFC 8628's
 * verification page). Self-contained: it speaks to the /auth/ routes with
 * the session cookie (functions/graphql/device-http.ts), not to GraphQL
 * with an API key as the rest of the app does, and takes the CSRF token
 * for its POSTs from GET /auth/session.
 *
 * It shows which machine asks, when and from which address, and says so
 * plainly when that address is not the browser's: a code someone else
 * started and sent you is how a login gets phished (RFC 8628 §5.4). The
 * person picks one of their teams for the API key and approves, or denies.
 */
import { useEffect, useState, type FormEvent } from 'react';
import { useTitle } from '../hooks.js';
import { Logo } from './SignIn.js';

interface SessionInfo {
  account: { id: string; name: string };
  email: string | null;
  csrfToken: string;
}

interface GrantInfo {
  userCode: string;
  machine: string;
  address: string | null;
  userAgent: string | null;
  createdAt: string;
  expiresAt: string;
  status: 'pending' | 'approved' | 'denied' | 'issued';
  sameAddress: boolean;
  teams: Array<{ id: string; name: string; role: string }>;
  defaultTeamId: string | null;
}

type State =
  | { kind: 'loading' }
  | { kind: 'signed-out' }
  | { kind: 'broken'; message: string }
  | { kind: 'enter-code'; session: SessionInfo }
  | { kind: 'review'; session: SessionInfo; grant: GrantInfo }
  | { kind: 'done'; decision: 'approved' | 'denied'; machine: string };

async function call(path: string, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(path, { credentials: 'same-origin', ...init, headers: { accept: 'application/json', ...init.headers } });
  let body: Record<string, unknown> = {};
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    // A body that is not JSON: the status says enough.
  }
  return { status: res.status, body };
}

const errorOf = (body: Record<string, unknown>, status: number): string =>
  typeof body.error === 'string' ? body.error : `The service answered ${status}.`;

const when = (iso: string): string => new Date(iso).toLocaleString();

export function DeviceLogin() {
  useTitle('Log in the command line');
  const [state, setState] = useState<State>({ kind: 'loading' });
  const [code, setCode] = useState(() => new URLSearchParams(window.location.search).get('user_code') ?? '');
  const [teamId, setTeamId] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const lookUp = async (session: SessionInfo, typed: string) => {
    setBusy(true);
    setError(undefined);
    try {
      const { status, body } = await call(`/auth/device?user_code=${encodeURIComponent(typed.trim())}`, {
        headers: { 'x-csrf-token': session.csrfToken },
      });
      if (status === 401) return setState({ kind: 'signed-out' });
      if (status !== 200) {
        setError(errorOf(body, status));
        return setState({ kind: 'enter-code', session });
      }
      const grant = body as unknown as GrantInfo;
      setTeamId(
        grant.defaultTeamId && grant.teams.some((t) => t.id === grant.defaultTeamId) ? grant.defaultTeamId : (grant.teams[0]?.id ?? ''),
      );
      setState({ kind: 'review', session, grant });
    } catch {
      setError('The service could not be reached. Check your connection and try again.');
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    let stopped = false;
    (async () => {
      try {
        const { status, body } = await call('/auth/session');
        if (stopped) return;
        if (status === 401) return setState({ kind: 'signed-out' });
        if (status !== 200) return setState({ kind: 'broken', message: errorOf(body, status) });
        const session = body as unknown as SessionInfo;
        if (code.trim()) await lookUp(session, code);
        else setState({ kind: 'enter-code', session });
      } catch {
        if (!stopped) setState({ kind: 'broken', message: 'The service could not be reached. Check your connection and reload.' });
      }
    })();
    return () => {
      stopped = true;
    };
    // Once, on load: the code in the address is looked up then; later ones by the form.
  }, []);

  const decide = async (decision: 'approve' | 'deny') => {
    if (state.kind !== 'review') return;
    setBusy(true);
    setError(undefined);
    try {
      const { status, body } = await call(`/auth/device/${decision}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': state.session.csrfToken },
        body: JSON.stringify({ user_code: state.grant.userCode, ...(decision === 'approve' ? { teamId } : {}) }),
      });
      if (status === 401) return setState({ kind: 'signed-out' });
      if (status !== 200) return setError(errorOf(body, status));
      setState({ kind: 'done', decision: decision === 'approve' ? 'approved' : 'denied', machine: state.grant.machine });
    } catch {
      setError('The service could not be reached. Check your connection and try again.');
    } finally {
      setBusy(false);
    }
  };

  const submitCode = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (state.kind === 'enter-code') void lookUp(state.session, code);
  };

  let content;
  switch (state.kind) {
    case 'loading':
      content = <p role="status">Loading…</p>;
      break;
    case 'broken':
      content = (
        <p className="notice notice-error" role="alert">
          {state.message}
        </p>
      );
      break;
    case 'signed-out':
      content = (
        <>
          <p className="notice notice-info" role="status">
            You are not signed in. Sign in to Cairn in this browser, then come back to this page to approve the command line.
          </p>
          <a
            className="button button-primary button-wide"
            href={`/?next=${encodeURIComponent(window.location.pathname + window.location.search)}`}
          >
            Sign in
          </a>
        </>
      );
      break;
    case 'enter-code':
      content = (
        <form onSubmit={submitCode} noValidate>
          <p className="muted">Enter the code that cairn login printed in your terminal.</p>
          <label htmlFor="user-code">Code</label>
          <input
            id="user-code"
            name="user-code"
            className="mono"
            autoComplete="off"
            spellCheck={false}
            autoFocus
            placeholder="WDJB-MJHT"
            value={code}
            onChange={(e) => setCode(e.currentTarget.value)}
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? 'device-error' : undefined}
          />
          {error ? (
            <p id="device-error" className="notice notice-error" role="alert">
              {error}
            </p>
          ) : null}
          <button type="submit" className="button button-primary button-wide" disabled={busy}>
            {busy ? 'Looking up…' : 'Continue'}
          </button>
        </form>
      );
      break;
    case 'review': {
      const { grant, session } = state;
      const decided = grant.status !== 'pending';
      content = (
        <>
          <p>
            Signed in as <strong>{session.email ?? session.account.name}</strong>. The command line on{' '}
            <strong data-testid="device-machine">{grant.machine}</strong> asks to act as you.
          </p>
          <dl className="device-facts">
            <dt>Code</dt>
            <dd className="mono" data-testid="device-code">
              {grant.userCode}
            </dd>
            <dt>Machine</dt>
            <dd>{grant.machine}</dd>
            <dt>Asked from</dt>
            <dd data-testid="device-address">{grant.address ?? 'an unknown address'}</dd>
            <dt>Asked at</dt>
            <dd>{when(grant.createdAt)}</dd>
            <dt>Code expires</dt>
            <dd>{when(grant.expiresAt)}</dd>
          </dl>
          {grant.sameAddress ? null : (
            <p className="notice notice-info" role="note">
              This login was started from another address than this browser&apos;s. Approve only if you ran cairn login yourself, just now,
              and the code above is the one it printed.
            </p>
          )}
          {decided ? (
            <p className="notice notice-info" role="status">
              This code was {grant.status === 'issued' ? 'approved and used' : grant.status} already.
            </p>
          ) : (
            <>
              <label htmlFor="device-team">Team the command line acts in</label>
              <select id="device-team" value={teamId} onChange={(e) => setTeamId(e.currentTarget.value)}>
                {grant.teams.map((team) => (
                  <option key={team.id} value={team.id}>
                    {team.name}
                  </option>
                ))}
              </select>
              <p className="hint">
                Approving makes an API key of this team and a storage key pair of yours for {grant.machine}; cairn logout there revokes
                them.
              </p>
              {error ? (
                <p className="notice notice-error" role="alert">
                  {error}
                </p>
              ) : null}
              <div className="form-actions">
                <button type="button" className="button button-primary" disabled={busy || !teamId} onClick={() => void decide('approve')}>
                  Approve
                </button>
                <button type="button" className="button button-danger-outline" disabled={busy} onClick={() => void decide('deny')}>
                  Deny
                </button>
              </div>
            </>
          )}
        </>
      );
      break;
    }
    case 'done':
      content = (
        <p className={`notice ${state.decision === 'approved' ? 'notice-ok' : 'notice-info'}`} role="status">
          {state.decision === 'approved'
            ? `Approved: cairn on ${state.machine} is logged in. You can close this window and go back to the terminal.`
            : `Denied: cairn on ${state.machine} was not logged in.`}
        </p>
      );
      break;
  }

  return (
    <main id="main" className="sign-in">
      <div className="sign-in-card">
        <div className="brand brand-large" aria-hidden="true">
          <Logo />
          Cairn
        </div>
        <h1>Log in the command line</h1>
        {content}
      </div>
    </main>
  );
}
