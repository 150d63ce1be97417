/**
 * The app: signed out, the sign-in page (e-mail and password, or an API
 * key); signed in, the shell (header, navigation, team switcher) around the
 * page the hash names.
 */
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { WebAppConfig } from '../app-config.js';
import { createApi, messageOf } from './api.js';
import { AuthError, currentSession, providerProblem, signOut as signOutOfSession, type PersonSession } from './auth.js';
import { AppContext, useApp, type AppContextValue } from './app-context.js';
import { ErrorNotice, Loading, PageHeader } from './components.js';
import { AccountLinkPage, isAccountLinkRoute } from './pages/AccountLinks.js';
import { Bucket } from './pages/Bucket.js';
import { Deploy } from './pages/Deploy.js';
import { EditSite, NewSite } from './pages/NewSite.js';
import { Logo, SignIn, type SignInMode } from './pages/SignIn.js';
import { Site } from './pages/Site.js';
import { SiteIntegrations } from './pages/SiteIntegrations.js';
import { SiteDomains } from './pages/SiteDomains.js';
import { Sites } from './pages/Sites.js';
import { Storage } from './pages/Storage.js';
import { Settings } from './pages/Settings.js';
import { Team } from './pages/Team.js';
import { CURRENT_TEAM, type Team as TeamData } from './queries.js';
import { href, markNavigated, navigate, useRoute, type Route } from './router.js';
import { session } from './session.js';
import type { Credentials } from './sigv4.js';

/** How the browser is signed in: with an API key kept in this tab, or as a person whose session is the HttpOnly cookie. */
type SignedInWith = { kind: 'api-key'; apiKey: string } | { kind: 'session'; person: PersonSession };

type State =
  | { kind: 'starting' }
  | { kind: 'broken'; message: string }
  | { kind: 'signed-out'; notice?: string; mode: SignInMode }
  | { kind: 'signed-in'; with: SignedInWith; team: TeamData };

const KEY_REFUSED = 'Your API key is no longer accepted (it was revoked or deleted). Sign in with another one.';
const SESSION_ENDED = 'Your session has ended (signed out, or unused or kept too long). Sign in again.';

/** The team a person works in: the one this tab chose if it is still theirs, else their own, else their first. */
function teamFor(person: PersonSession): TeamData | undefined {
  const chosen = session.team();
  const team =
    person.teams.find((t) => t.id === chosen) ?? person.teams.find((t) => t.id === person.account.defaultTeamId) ?? person.teams[0];
  return team ? { id: team.id, name: team.name } : undefined;
}

export function App() {
  const [config, setConfig] = useState<WebAppConfig | null>(null);
  const [state, setState] = useState<State>({ kind: 'starting' });
  const [storageKeys, setStorageKeysState] = useState<Credentials | null>(() => session.storageKeys());
  const route = useRoute();

  /** Forgets the sign-in here; the service has ended it already, or never had it. */
  const signedOut = useCallback((notice?: string, mode: SignInMode = 'password') => {
    session.clear();
    setStorageKeysState(null);
    setState({ kind: 'signed-out', notice, mode });
  }, []);

  /** Signs a person's browser in, in the team it last worked in. */
  const enter = useCallback(
    (person: PersonSession) => {
      const team = teamFor(person);
      if (!team) return signedOut('Your account is in no team any more: ask an owner of a team to add you.');
      session.setApiKey(null);
      session.setHadSession(true);
      setState({ kind: 'signed-in', with: { kind: 'session', person }, team });
    },
    [signedOut],
  );

  // The endpoints first, then the key this tab already has, else the session the browser's cookie opens, if any.
  useEffect(() => {
    let stopped = false;
    (async () => {
      let cfg: WebAppConfig;
      try {
        const res = await fetch('/app/config.json', { headers: { accept: 'application/json' } });
        if (!res.ok) throw new Error(`/app/config.json answered ${res.status}`);
        cfg = (await res.json()) as WebAppConfig;
      } catch (err) {
        if (!stopped) setState({ kind: 'broken', message: `The app could not load its settings: ${messageOf(err)}` });
        return;
      }
      if (stopped) return;
      setConfig(cfg);
      const key = session.apiKey();
      if (!key) {
        let person: PersonSession | null;
        try {
          person = await currentSession();
        } catch (err) {
          if (!stopped) setState({ kind: 'broken', message: `The service could not be reached: ${messageOf(err)}` });
          return;
        }
        if (stopped) return;
        if (person) return enter(person);
        // Back from the provider without signing in: the service named the problem in the query, shown once.
        const problem = new URLSearchParams(window.location.search).get('sign_in_error');
        if (problem !== null) {
          window.history.replaceState(null, '', `/${window.location.hash}`);
          return signedOut(providerProblem(problem, cfg.oidc?.name ?? 'the provider'));
        }
        // No session: a tab that had one says it ended (its cookie expired, or it was signed out elsewhere).
        return signedOut(session.hadSession() ? SESSION_ENDED : undefined);
      }
      try {
        const api = createApi(cfg.graphqlPath, { kind: 'api-key', apiKey: key }, () => {});
        const { getCurrentTeam } = await api.query<{ getCurrentTeam: TeamData }>(CURRENT_TEAM);
        if (!stopped) setState({ kind: 'signed-in', with: { kind: 'api-key', apiKey: key }, team: getCurrentTeam });
      } catch (err) {
        if (stopped) return;
        const code = (err as { code?: string }).code;
        if (code === 'UNAUTHENTICATED') signedOut(KEY_REFUSED, 'api-key');
        else setState({ kind: 'broken', message: `The service could not be reached: ${messageOf(err)}` });
      }
    })();
    return () => {
      stopped = true;
    };
  }, [enter, signedOut]);

  const context = useMemo<AppContextValue | null>(() => {
    if (state.kind !== 'signed-in' || !config) return null;
    const signedInWith = state.with;
    const person = signedInWith.kind === 'session' ? signedInWith.person : null;
    return {
      api:
        signedInWith.kind === 'api-key'
          ? createApi(config.graphqlPath, signedInWith, () => signedOut(KEY_REFUSED, 'api-key'))
          : createApi(config.graphqlPath, { kind: 'session', csrfToken: signedInWith.person.csrfToken, teamId: state.team.id }, () =>
              signedOut(SESSION_ENDED),
            ),
      config,
      team: state.team,
      apiKey: signedInWith.kind === 'api-key' ? signedInWith.apiKey : null,
      person,
      signOut: (message?: string) => {
        if (!person) return signedOut(message, 'api-key');
        // The session ends on the service before this tab forgets it: a sign-out that did not reach it says so.
        signOutOfSession(person.csrfToken).then(
          () => signedOut(message),
          (err: unknown) =>
            err instanceof AuthError && err.status === 401
              ? signedOut(message)
              : signedOut(`Signing out failed (${messageOf(err)}): this browser may still be signed in. Try again.`),
        );
      },
      signedOut: (message: string) => signedOut(message, person ? 'password' : 'api-key'),
      switchTeam: (teamId: string) => {
        const team = person?.teams.find((t) => t.id === teamId);
        if (!team || team.id === state.team.id) return;
        session.setTeam(team.id);
        markNavigated();
        // Another team's pages: start from its sites.
        if (window.location.hash !== href({ name: 'sites' })) navigate({ name: 'sites' });
        setState({ ...state, team: { id: team.id, name: team.name } });
      },
      teamRenamed: (name: string) => {
        const team = { id: state.team.id, name };
        const teams = person?.teams.map((t) => (t.id === team.id ? { ...t, name } : t));
        setState({ ...state, team, ...(person && teams ? { with: { kind: 'session', person: { ...person, teams } } } : {}) });
      },
      enterNewTeam: (team: TeamData) => {
        if (!person) return;
        const known = person.teams.some((t) => t.id === team.id);
        const teams = known ? person.teams : [...person.teams, { id: team.id, name: team.name, role: 'OWNER' as const }];
        session.setTeam(team.id);
        markNavigated();
        if (window.location.hash !== href({ name: 'sites' })) navigate({ name: 'sites' });
        setState({ ...state, with: { kind: 'session', person: { ...person, teams } }, team: { id: team.id, name: team.name } });
      },
      storageKeys,
      setStorageKeys: (keys) => {
        session.setStorageKeys(keys);
        setStorageKeysState(keys);
      },
    };
  }, [state, config, signedOut, storageKeys]);

  // A one-time link's page shows whether or not this tab is signed in.
  if (isAccountLinkRoute(route)) return <AccountLinkPage route={route} />;
  if (state.kind === 'starting') {
    return (
      <main id="main" className="center">
        <Loading label="Starting Cairn…" />
      </main>
    );
  }
  if (state.kind === 'broken') {
    return (
      <main id="main" className="center">
        <ErrorNotice retry={() => window.location.reload()}>{state.message}</ErrorNotice>
      </main>
    );
  }
  if (state.kind === 'signed-out' || !context) {
    return (
      <SignIn
        graphqlPath={config?.graphqlPath ?? '/graphql'}
        signUp={config?.signUp ?? 'closed'}
        oidc={config?.oidc}
        passkeys={config?.passkeys}
        notice={state.kind === 'signed-out' ? state.notice : undefined}
        mode={state.kind === 'signed-out' ? state.mode : 'password'}
        onSignedInWithKey={(apiKey, team) => {
          markNavigated();
          session.setApiKey(apiKey);
          setState({ kind: 'signed-in', with: { kind: 'api-key', apiKey }, team });
        }}
        onSignedIn={(person) => {
          const next = nextPage();
          if (next) {
            // Back to the page that sent the person here to sign in (the command line's login page).
            window.location.assign(next);
            return;
          }
          markNavigated();
          enter(person);
        }}
      />
    );
  }
  return (
    <AppContext.Provider value={context}>
      <Shell />
    </AppContext.Provider>
  );
}

/**
 * Where `?next=` asks to go after signing in: a page of this app's own
 * (`/app/...` on this origin) and nothing else, so that a link cannot send a
 * person who signs in to another site.
 */
function nextPage(): string | undefined {
  const next = new URLSearchParams(window.location.search).get('next');
  if (!next || !/^\/app\/[A-Za-z0-9/_-]*(\?[A-Za-z0-9=&%_.-]*)?$/.test(next)) return undefined;
  return next;
}

function Shell() {
  const route = useRoute();
  const { team } = useApp();
  const current = section(route);
  return (
    <>
      <a
        className="skip-link"
        href="#main"
        onClick={(e) => {
          // The hash is the router's: move focus without navigating.
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <Header current={current} />
      {/* The key makes each route, and each team's, a fresh page: its state, loads and polling start over. */}
      <main id="main" className="content" tabIndex={-1} key={`${team.id} ${href(route)}`}>
        <Page route={route} />
      </main>
    </>
  );
}

type Section = 'sites' | 'storage' | 'team' | 'settings';

function section(route: Route): Section | null {
  if (
    route.name === 'sites' ||
    route.name === 'new-site' ||
    route.name === 'site' ||
    route.name === 'site-settings' ||
    route.name === 'site-integrations' ||
    route.name === 'site-domains' ||
    route.name === 'deploy'
  )
    return 'sites';
  if (route.name === 'storage' || route.name === 'bucket') return 'storage';
  if (route.name === 'team') return 'team';
  if (route.name === 'settings') return 'settings';
  return null;
}

function Header({ current }: { current: Section | null }) {
  const app = useApp();
  const link = (name: Section, label: string) => (
    <a
      href={href({ name })}
      className={`nav-link${current === name ? ' active' : ''}`}
      aria-current={current === name ? 'page' : undefined}
    >
      {label}
    </a>
  );
  const teams = app.person?.teams ?? [];
  return (
    <header className="topbar">
      <div className="topbar-inner">
        <a className="brand" href={href({ name: 'sites' })}>
          <Logo />
          Cairn
        </a>
        <nav aria-label="Main" className="nav">
          {link('sites', 'Sites')}
          {link('storage', 'Storage')}
          {link('team', 'Team')}
          {link('settings', 'Settings')}
        </nav>
        <div className="account">
          {teams.length > 1 ? (
            <>
              <label htmlFor="team-switch" className="visually-hidden">
                Team
              </label>
              <select id="team-switch" className="team-switch" value={app.team.id} onChange={(e) => app.switchTeam(e.currentTarget.value)}>
                {teams.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name}
                  </option>
                ))}
              </select>
            </>
          ) : (
            <span className="team-name" title={app.person ? 'The team you work in' : 'The team of your API key'}>
              {app.team.name}
            </span>
          )}
          <button type="button" className="button button-small button-on-dark" onClick={() => app.signOut()}>
            Sign out
          </button>
        </div>
      </div>
    </header>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.name) {
    case 'sites':
      return <Sites />;
    case 'new-site':
      return <NewSite />;
    case 'site':
      return <Site siteId={route.siteId} />;
    case 'site-settings':
      return <EditSite siteId={route.siteId} />;
    case 'site-integrations':
      return <SiteIntegrations siteId={route.siteId} />;
    case 'site-domains':
      return <SiteDomains siteId={route.siteId} />;
    case 'deploy':
      return <Deploy siteId={route.siteId} deployId={route.deployId} />;
    case 'team':
      return <Team />;
    case 'settings':
      return <Settings />;
    case 'storage':
      return <Storage />;
    case 'bucket':
      return <Bucket bucket={route.bucket} prefix={route.prefix} />;
    case 'not-found':
      return (
        <>
          <PageHeader title="Page not found" />
          <p>
            Nothing is at <code>{route.path}</code>. <a href={href({ name: 'sites' })}>Go to the sites</a>.
          </p>
        </>
      );
  }
}
