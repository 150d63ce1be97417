/**
 * The pages one-time links open, shown whether or not this tab is signed
 * in: an invitation (sign in or make an account, then join), asking for a
 * password reset link and setting a new password with one, and the first
 * owner's welcome. Each speaks to the /auth/ routes itself, with the
 * browser's session cookie (`credentials: 'same-origin'`) and the CSRF
 * token `GET /auth/session` gives; the token of a link is in the page's
 * fragment (`#/invitation/<token>`), which no browser sends to a server,
 * and only ever leaves in a request's body.
 */
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { href, type Route } from '../router.js';
import { useTitle } from '../hooks.js';
import { Loading } from '../components.js';
import { formatTime } from '../format.js';
import { Logo, ProviderButton } from './SignIn.js';

export type AccountLinkRoute = Extract<Route, { name: 'invitation' | 'welcome' | 'forgot-password' | 'reset-password' }>;

export const isAccountLinkRoute = (route: Route): route is AccountLinkRoute =>
  route.name === 'invitation' || route.name === 'welcome' || route.name === 'forgot-password' || route.name === 'reset-password';

interface Answer {
  status: number;
  body: { ok?: boolean; error?: string; field?: string; [k: string]: unknown };
}

async function authPost(path: string, body: unknown, csrfToken?: string): Promise<Answer> {
  try {
    const res = await fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', ...(csrfToken ? { 'x-csrf-token': csrfToken } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => ({}))) as Answer['body'] };
  } catch {
    return { status: 0, body: { ok: false, error: 'The service could not be reached. Check your connection and try again.' } };
  }
}

/** The session this browser has, if any: its e-mail and CSRF token. */
async function currentSession(): Promise<{ email: string | null; csrfToken: string } | null> {
  try {
    const res = await fetch('/auth/session', { credentials: 'same-origin', headers: { accept: 'application/json' } });
    if (!res.ok) return null;
    const body = (await res.json()) as { email: string | null; csrfToken: string };
    return { email: body.email, csrfToken: body.csrfToken };
  } catch {
    return null;
  }
}

export function AccountLinkPage({ route }: { route: AccountLinkRoute }) {
  switch (route.name) {
    case 'invitation':
      return <InvitationPage token={route.token} />;
    case 'welcome':
      return <WelcomePage token={route.token} />;
    case 'forgot-password':
      return <ForgotPasswordPage />;
    case 'reset-password':
      return <ResetPasswordPage token={route.token} />;
  }
}

function Card({ title, children }: { title: string; children: ReactNode }) {
  useTitle(title);
  return (
    <main id="main" className="sign-in">
      <div className="sign-in-card">
        <div className="brand brand-large" aria-hidden="true">
          <Logo />
          Cairn
        </div>
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}

function Problem({ id, text }: { id: string; text?: string }) {
  return text ? (
    <p id={id} className="notice notice-error" role="alert">
      {text}
    </p>
  ) : null;
}

function Done({ children }: { children: ReactNode }) {
  return (
    <>
      <p className="notice notice-ok" role="status">
        {children}
      </p>
      <a className="button button-primary button-wide" href={href({ name: 'sites' })}>
        Open Cairn
      </a>
    </>
  );
}

function Field(props: {
  id: string;
  label: string;
  value: string;
  onChange?(value: string): void;
  type?: 'text' | 'password' | 'email';
  autoComplete?: string;
  readOnly?: boolean;
  hint?: string;
}) {
  return (
    <div className="field">
      <label htmlFor={props.id}>{props.label}</label>
      <input
        id={props.id}
        name={props.id}
        // An address is typed in a text field with the e-mail keyboard: the app's styles dress text and password fields.
        type={props.type === 'email' ? 'text' : (props.type ?? 'text')}
        inputMode={props.type === 'email' ? 'email' : undefined}
        value={props.value}
        readOnly={props.readOnly}
        autoComplete={props.autoComplete}
        spellCheck={false}
        onChange={(e) => props.onChange?.(e.currentTarget.value)}
        aria-describedby={props.hint ? `${props.id}-hint` : undefined}
      />
      {props.hint ? (
        <p id={`${props.id}-hint`} className="hint">
          {props.hint}
        </p>
      ) : null}
    </div>
  );
}

const PASSWORD_HINT = 'At least 10 characters.';

interface InvitationView {
  team: { id: string; name: string };
  role: 'OWNER' | 'MEMBER';
  email: string;
  invitedBy: string | null;
  expiresAt: string;
}

function InvitationPage({ token }: { token: string }) {
  const [view, setView] = useState<InvitationView | null>(null);
  const [session, setSession] = useState<{ email: string | null; csrfToken: string } | null>(null);
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [joined, setJoined] = useState<string | null>(null);
  const [mode, setMode] = useState<'sign-up' | 'sign-in'>('sign-up');
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [provider, setProvider] = useState<string | null>(null);

  useEffect(() => {
    // The service's OpenID Connect provider, if it has one: signing up with it by this invitation is the other way in.
    fetch('/app/config.json')
      .then((res) => res.json() as Promise<{ oidc?: { name: string } }>)
      .then((config) => setProvider(config.oidc?.name ?? null))
      .catch(() => {});
    void (async () => {
      const [opened, signedIn] = await Promise.all([authPost('/auth/invitations/view', { token }), currentSession()]);
      if (opened.status === 200) setView(opened.body.invitation as InvitationView);
      else setProblem(opened.body.error ?? 'This invitation could not be opened.');
      setSession(signedIn);
      setLoading(false);
    })();
  }, [token]);

  const accept = async (csrfToken: string) => {
    const res = await authPost('/auth/invitations/accept', { token }, csrfToken);
    if (res.status === 200) setJoined((res.body.team as { name: string }).name);
    else setProblem(res.body.error ?? 'The invitation could not be accepted.');
  };

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!view) return;
    setBusy(true);
    setProblem(undefined);
    if (mode === 'sign-up') {
      const res = await authPost('/auth/sign-up', { email: view.email, password, name: name.trim(), invitation: token });
      if (res.status === 201) setJoined(view.team.name);
      else setProblem(res.body.error ?? 'The account could not be made.');
    } else {
      const res = await authPost('/auth/sign-in', { email: view.email, password });
      if (res.status === 200) await accept(res.body.csrfToken as string);
      else setProblem(res.body.error ?? 'Signing in failed.');
    }
    setBusy(false);
  };

  if (loading)
    return (
      <Card title="Invitation">
        <Loading label="Opening the invitation…" />
      </Card>
    );
  if (joined !== null)
    return (
      <Card title="Welcome to the team">
        <Done>
          You are now {view?.role === 'OWNER' ? 'an owner' : 'a member'} of {joined}.
        </Done>
      </Card>
    );
  if (!view)
    return (
      <Card title="Invitation">
        <Problem id="invitation-error" text={problem} />
      </Card>
    );
  const role = view.role === 'OWNER' ? 'an owner' : 'a member';
  const sameEmail = session?.email === view.email;
  return (
    <Card title={`Join ${view.team.name}`}>
      <p>
        {view.invitedBy ? <strong>{view.invitedBy}</strong> : 'An owner'} invites <strong>{view.email}</strong> to join the team{' '}
        <strong>{view.team.name}</strong> as {role}.
      </p>
      <p className="hint">The invitation works once, until {formatTime(view.expiresAt)}.</p>
      <Problem id="invitation-error" text={problem} />
      {session && sameEmail ? (
        <button type="button" className="button button-primary button-wide" disabled={busy} onClick={() => void accept(session.csrfToken)}>
          Join {view.team.name}
        </button>
      ) : (
        <>
          {session ? (
            <p className="notice notice-info" role="status">
              This browser is signed in as {session.email ?? 'an account without an e-mail'}; the invitation is for {view.email}. Sign in
              with that address below to join.
            </p>
          ) : null}
          <div className="row-actions" role="group" aria-label="Have an account?">
            <button type="button" className="button button-small" aria-pressed={mode === 'sign-up'} onClick={() => setMode('sign-up')}>
              I am new here
            </button>
            <button type="button" className="button button-small" aria-pressed={mode === 'sign-in'} onClick={() => setMode('sign-in')}>
              I have an account
            </button>
          </div>
          <form onSubmit={(e) => void submit(e)} noValidate>
            <Field id="invitation-email" label="E-mail" value={view.email} readOnly autoComplete="username" />
            {mode === 'sign-up' ? (
              <Field
                id="invitation-name"
                label="Account name"
                value={name}
                onChange={setName}
                autoComplete="off"
                hint="3 to 42 lower-case letters, digits or hyphens; your own bucket is named after it."
              />
            ) : null}
            <Field
              id="invitation-password"
              label="Password"
              type="password"
              value={password}
              onChange={setPassword}
              autoComplete={mode === 'sign-up' ? 'new-password' : 'current-password'}
              hint={mode === 'sign-up' ? PASSWORD_HINT : undefined}
            />
            <button type="submit" className="button button-primary button-wide" disabled={busy}>
              {mode === 'sign-up' ? 'Create account and join' : 'Sign in and join'}
            </button>
          </form>
          {mode === 'sign-up' && provider ? <ProviderButton name={provider} invitation={token} /> : null}
          {mode === 'sign-in' ? (
            <p className="hint">
              <a href={href({ name: 'forgot-password' })}>Forgot your password?</a>
            </p>
          ) : null}
        </>
      )}
    </Card>
  );
}

function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [sent, setSent] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setBusy(true);
    setProblem(undefined);
    const res = await authPost('/auth/password-reset/request', { email: email.trim() });
    if (res.status === 202) setSent(String(res.body.message));
    else setProblem(res.body.error ?? 'The link could not be asked for.');
    setBusy(false);
  };
  return (
    <Card title="Forgot your password?">
      {sent ? (
        <p className="notice notice-ok" role="status">
          {sent}
        </p>
      ) : (
        <form onSubmit={(e) => void submit(e)} noValidate>
          <p className="muted">Give the e-mail address you sign in with: a link to set a new password is sent to it.</p>
          <Field id="reset-email" label="E-mail" type="email" value={email} onChange={setEmail} autoComplete="username" />
          <Problem id="reset-error" text={problem} />
          <button type="submit" className="button button-primary button-wide" disabled={busy}>
            Send me a link
          </button>
        </form>
      )}
    </Card>
  );
}

/** A new password, typed twice: the form of the reset and welcome pages. */
function NewPasswordForm({
  submitLabel,
  withEmail,
  onSubmit,
}: {
  submitLabel: string;
  withEmail: boolean;
  onSubmit(values: { email: string; password: string }): Promise<string | undefined>;
}) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (password !== again) return setProblem('The two passwords differ.');
    setBusy(true);
    setProblem(await onSubmit({ email: email.trim(), password }));
    setBusy(false);
  };
  return (
    <form onSubmit={(e) => void submit(e)} noValidate>
      {withEmail ? <Field id="new-email" label="E-mail" type="email" value={email} onChange={setEmail} autoComplete="username" /> : null}
      <Field
        id="new-password"
        label="New password"
        type="password"
        value={password}
        onChange={setPassword}
        autoComplete="new-password"
        hint={PASSWORD_HINT}
      />
      <Field
        id="new-password-again"
        label="New password, again"
        type="password"
        value={again}
        onChange={setAgain}
        autoComplete="new-password"
      />
      <Problem id="new-password-error" text={problem} />
      <button type="submit" className="button button-primary button-wide" disabled={busy}>
        {submitLabel}
      </button>
    </form>
  );
}

function ResetPasswordPage({ token }: { token: string }) {
  const [done, setDone] = useState<string | null>(null);
  return (
    <Card title="Set a new password">
      {done ? (
        <Done>Your password is set, and your account is signed out everywhere: sign in with {done} and the new password.</Done>
      ) : (
        <NewPasswordForm
          submitLabel="Set password"
          withEmail={false}
          onSubmit={async ({ password }) => {
            const res = await authPost('/auth/password-reset', { token, password });
            if (res.status === 200) setDone(String(res.body.email));
            return res.status === 200 ? undefined : (res.body.error ?? 'The password could not be set.');
          }}
        />
      )}
    </Card>
  );
}

function WelcomePage({ token }: { token: string }) {
  const [done, setDone] = useState<string | null>(null);
  return (
    <Card title="Welcome to Cairn">
      {done ? (
        <Done>You are signed in as {done}, the owner of the first account.</Done>
      ) : (
        <>
          <p className="muted">
            Choose the e-mail address and password you will sign in with, as the owner of this service's first account.
          </p>
          <NewPasswordForm
            submitLabel="Become the owner"
            withEmail
            onSubmit={async ({ email, password }) => {
              const res = await authPost('/auth/first-owner', { token, email, password });
              if (res.status === 201) setDone(String(res.body.email));
              return res.status === 201 ? undefined : (res.body.error ?? 'The link could not be used.');
            }}
          />
        </>
      )}
    </Card>
  );
}
