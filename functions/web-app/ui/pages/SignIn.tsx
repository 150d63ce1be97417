/**
 * Signing in. A person signs in with their e-mail and password (or signs
 * up, where the service allows it); the service then keeps their session
 * in an HttpOnly cookie. An API key, kept in this tab, stays a second way
 * in for operators and scripts' owners ("Use an API key"). Refusals are
 * shown in the service's own words: wrong credentials, a lock-out and its
 * wait, sign-up closed or by invitation.
 */
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import type { WebAppConfig } from '../../app-config.js';
import { ApiError, createApi, messageOf } from '../api.js';
import {
  AuthError,
  passkeysSupported,
  SecondStepPending,
  signIn,
  signInWithPasskey,
  signInWithRecoveryCode,
  signUp,
  startProviderSignIn,
  type PersonSession,
} from '../auth.js';
import { CURRENT_TEAM, type Team } from '../queries.js';
import { useTitle } from '../hooks.js';
import { href } from '../router.js';

export type SignInMode = 'password' | 'sign-up' | 'api-key';

const TITLES: Record<SignInMode, string> = { password: 'Sign in', 'sign-up': 'Create an account', 'api-key': 'Sign in with an API key' };

export function SignIn({
  graphqlPath,
  signUp: signUpPolicy,
  oidc,
  passkeys,
  notice,
  mode: initialMode,
  onSignedIn,
  onSignedInWithKey,
}: {
  graphqlPath: string;
  signUp: WebAppConfig['signUp'];
  oidc?: WebAppConfig['oidc'];
  /** Whether the service offers passkeys (its address is a domain name). */
  passkeys?: boolean;
  notice?: string;
  mode: SignInMode;
  onSignedIn(person: PersonSession): void;
  onSignedInWithKey(key: string, team: Team): void;
}) {
  const [mode, setMode] = useState<SignInMode>(initialMode);
  useTitle(TITLES[mode]);
  return (
    <main id="main" className="sign-in">
      <div className="sign-in-card">
        <div className="brand brand-large" aria-hidden="true">
          <Logo />
          Cairn
        </div>
        <h1>{TITLES[mode]}</h1>
        {notice ? (
          <p className="notice notice-info" role="status">
            {notice}
          </p>
        ) : null}
        {mode === 'api-key' ? (
          <ApiKeyForm graphqlPath={graphqlPath} onSignedIn={onSignedInWithKey} />
        ) : mode === 'sign-up' ? (
          <SignUpForm onSignedIn={onSignedIn} />
        ) : (
          <PasswordForm onSignedIn={onSignedIn} />
        )}
        {mode === 'password' && passkeys && passkeysSupported() ? <PasskeyButton onSignedIn={onSignedIn} /> : null}
        {mode === 'password' && oidc ? <ProviderButton name={oidc.name} /> : null}
        <div className="sign-in-other">
          {mode === 'password' ? (
            signUpPolicy === 'open' ? (
              <p>
                New here?{' '}
                <button type="button" className="link-button" onClick={() => setMode('sign-up')}>
                  Create an account
                </button>
              </p>
            ) : (
              <p className="muted">
                {signUpPolicy === 'invite'
                  ? 'New accounts are by invitation: ask an owner of a team to invite you.'
                  : "New accounts are made by the service's operator."}
              </p>
            )
          ) : (
            <p>
              {mode === 'sign-up' ? 'Have an account? ' : null}
              <button type="button" className="link-button" onClick={() => setMode('password')}>
                Use your e-mail and password
              </button>
            </p>
          )}
          {mode === 'password' ? (
            <p>
              <a href={href({ name: 'forgot-password' })}>Forgot your password?</a>
            </p>
          ) : null}
          {mode !== 'api-key' ? (
            <p>
              <button type="button" className="link-button" onClick={() => setMode('api-key')}>
                Use an API key
              </button>{' '}
              <span className="muted">(for operators)</span>
            </p>
          ) : null}
        </div>
      </div>
    </main>
  );
}

/** "Sign in with a passkey": no e-mail typed, the browser offers the person's passkeys for this site. */
function PasskeyButton({ onSignedIn }: { onSignedIn(person: PersonSession): void }) {
  return (
    <SignInButton
      label="Sign in with a passkey"
      busyLabel="Waiting for your passkey…"
      action={async () => onSignedIn(await signInWithPasskey())}
      problem={(err) => (err instanceof AuthError ? sentence(err.message) : messageOf(err))}
    />
  );
}

/** "Sign in with <provider>": the service starts the flow, then this tab goes to the provider, which sends it back signed in. */
export function ProviderButton({ name, invitation }: { name: string; invitation?: string }) {
  return (
    <SignInButton
      label={`Sign in with ${name}`}
      busyLabel={`Going to ${name}…`}
      action={async () => window.location.assign(await startProviderSignIn(invitation))}
      problem={(err) => (err instanceof Error ? err.message : String(err))}
    />
  );
}

/** A sign-in way that is one button: busy while `action` runs, its failure said above it in `problem`'s words. */
function SignInButton({
  label,
  busyLabel,
  action,
  problem,
}: {
  label: string;
  busyLabel: string;
  action(): Promise<void>;
  problem(err: unknown): string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const go = async () => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(problem(err));
      setBusy(false);
    }
  };
  return (
    <div className="stack sign-in-provider">
      {error ? (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      ) : null}
      <button type="button" className="button" disabled={busy} onClick={() => void go()}>
        {busy ? busyLabel : label}
      </button>
    </div>
  );
}

/** A field of the sign-in forms, its error named to assistive technology when the service says the field is at fault. */
function Field({
  id,
  label,
  hint,
  invalid,
  errorId,
  children,
}: {
  id: string;
  label: string;
  hint?: ReactNode;
  invalid: boolean;
  errorId: string;
  children: (props: { id: string; 'aria-invalid'?: true; 'aria-describedby'?: string }) => ReactNode;
}) {
  const described = [invalid ? errorId : null, hint ? `${id}-hint` : null].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-invalid': invalid ? true : undefined, 'aria-describedby': described || undefined })}
      {hint ? (
        <p id={`${id}-hint`} className="hint">
          {hint}
        </p>
      ) : null}
    </div>
  );
}

/** What a form shows of a refusal: the service's sentence; the field it names, if any, takes focus. */
function useRefusal(fields: Record<string, HTMLInputElement | null>) {
  const [error, setError] = useState<{ message: string; field?: string } | null>(null);
  const focusField = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (error && focusField.current) fields[focusField.current]?.focus();
    focusField.current = undefined;
  });
  const refuse = (err: unknown) => {
    const field = err instanceof AuthError ? err.field : undefined;
    focusField.current = field;
    setError({ message: err instanceof AuthError ? sentence(err.message) : messageOf(err), field });
  };
  return { error, refuse, clear: () => setError(null) };
}

/** The service words its refusals as a sentence without a capital or a full stop ("password must be…"); shown, it gets both. */
function sentence(text: string): string {
  const trimmed = text.trim();
  const capital = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

function PasswordForm({ onSignedIn }: { onSignedIn(person: PersonSession): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState<false | 'password' | 'passkey'>(false);
  /** The password was right and no passkey came: the step's challenge, for a recovery code instead (`asked`: its field shown). */
  const [pending, setPending] = useState<{ challenge: string; asked: boolean } | null>(null);
  const [code, setCode] = useState('');
  const inputs = useRef<Record<string, HTMLInputElement | null>>({});
  const { error, refuse, clear } = useRefusal(inputs.current);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (pending?.asked) return submitCode();
    if (!email.trim() || !password) return refuse(new Error('Enter your e-mail address and your password.'));
    setBusy('password');
    setPending(null);
    clear();
    try {
      // An account that asks for a passkey after the password: the browser's prompt follows, and the button says so.
      onSignedIn(await signIn(email.trim(), password, () => setBusy('passkey')));
    } catch (err) {
      refuse(err);
      if (err instanceof SecondStepPending) setPending({ challenge: err.challenge, asked: false });
      setBusy(false);
    }
  };

  const submitCode = async () => {
    if (!pending) return;
    if (!code.trim()) return refuse(new Error('Enter one of your recovery codes.'));
    setBusy('password');
    clear();
    try {
      onSignedIn(await signInWithRecoveryCode(pending.challenge, code.trim()));
    } catch (err) {
      // Right or wrong, the step is used up: the password starts the next try.
      refuse(err);
      setPending(null);
      setCode('');
      setBusy(false);
    }
  };

  return (
    <form className="form" onSubmit={(e) => void submit(e)} noValidate>
      <Field id="email" label="E-mail" invalid={error?.field === 'email'} errorId="sign-in-error">
        {(props) => (
          <input
            {...props}
            ref={(el) => void (inputs.current.email = el)}
            name="email"
            type="email"
            autoComplete="username"
            spellCheck={false}
            autoFocus
            value={email}
            onChange={(e) => setEmail(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field id="password" label="Password" invalid={error?.field === 'password'} errorId="sign-in-error">
        {(props) => (
          <input
            {...props}
            ref={(el) => void (inputs.current.password = el)}
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
          />
        )}
      </Field>
      {pending?.asked ? (
        <Field
          id="recovery-code"
          label="Recovery code"
          hint="One of the codes you kept when you set up your passkey: each works once."
          invalid={error !== null}
          errorId="sign-in-error"
        >
          {(props) => (
            <input
              {...props}
              name="recovery-code"
              className="mono"
              autoComplete="one-time-code"
              spellCheck={false}
              autoFocus
              value={code}
              onChange={(e) => setCode(e.currentTarget.value)}
            />
          )}
        </Field>
      ) : null}
      {error ? (
        <p id="sign-in-error" className="notice notice-error" role="alert">
          {error.message}
        </p>
      ) : null}
      {pending && !pending.asked ? (
        <button type="button" className="link-button" onClick={() => (clear(), setPending({ ...pending, asked: true }))}>
          Use a recovery code instead
        </button>
      ) : null}
      <button type="submit" className="button button-primary button-wide" disabled={busy !== false}>
        {busy === 'passkey'
          ? 'Password accepted: confirm with your passkey…'
          : busy
            ? 'Signing in…'
            : pending?.asked
              ? 'Sign in with the recovery code'
              : 'Sign in'}
      </button>
    </form>
  );
}

function SignUpForm({ onSignedIn }: { onSignedIn(person: PersonSession): void }) {
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const inputs = useRef<Record<string, HTMLInputElement | null>>({});
  const { error, refuse, clear } = useRefusal(inputs.current);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setBusy(true);
    clear();
    try {
      onSignedIn(await signUp({ name: name.trim(), email: email.trim(), password }));
    } catch (err) {
      refuse(err);
      setBusy(false);
    }
  };

  return (
    <form className="form" onSubmit={(e) => void submit(e)} noValidate>
      <Field
        id="account-name"
        label="Account name"
        hint="3 to 42 lower-case letters, digits or hyphens. Your team and your first bucket are named after it; it cannot be changed."
        invalid={error?.field === 'name'}
        errorId="sign-up-error"
      >
        {(props) => (
          <input
            {...props}
            ref={(el) => void (inputs.current.name = el)}
            name="name"
            autoComplete="off"
            spellCheck={false}
            autoFocus
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field id="email" label="E-mail" invalid={error?.field === 'email'} errorId="sign-up-error">
        {(props) => (
          <input
            {...props}
            ref={(el) => void (inputs.current.email = el)}
            name="email"
            type="email"
            autoComplete="username"
            spellCheck={false}
            value={email}
            onChange={(e) => setEmail(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field
        id="new-password"
        label="Password"
        hint="At least 10 characters."
        invalid={error?.field === 'password'}
        errorId="sign-up-error"
      >
        {(props) => (
          <input
            {...props}
            ref={(el) => void (inputs.current.password = el)}
            name="password"
            type="password"
            autoComplete="new-password"
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
          />
        )}
      </Field>
      {error ? (
        <p id="sign-up-error" className="notice notice-error" role="alert">
          {error.message}
        </p>
      ) : null}
      <button type="submit" className="button button-primary button-wide" disabled={busy}>
        {busy ? 'Creating the account…' : 'Create account'}
      </button>
    </form>
  );
}

/** Signing in with an API key; the key is checked by asking for its team, and kept in this tab only. */
function ApiKeyForm({ graphqlPath, onSignedIn }: { graphqlPath: string; onSignedIn(key: string, team: Team): void }) {
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
      const api = createApi(graphqlPath, { kind: 'api-key', apiKey: trimmed }, () => {});
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
    <>
      <p className="muted">
        Sign in with an API key of your team. It stays in this browser tab only, and is forgotten when you sign out or close the tab.
      </p>
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
          It starts with <code>cairn_</code>. The first one is printed when the service first starts; more are made in Settings.
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
    </>
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
