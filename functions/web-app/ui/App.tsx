/** The app: signed out, the sign-in page; signed in, the shell (header, navigation) around the page the hash names. */
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { WebAppConfig } from '../app-config.js';
import { createApi, messageOf } from './api.js';
import { AppContext, useApp, type AppContextValue } from './app-context.js';
import { ErrorNotice, Loading, PageHeader } from './components.js';
import { AccountLinkPage, isAccountLinkRoute } from './pages/AccountLinks.js';
import { Bucket } from './pages/Bucket.js';
import { Deploy } from './pages/Deploy.js';
import { EditSite, NewSite } from './pages/NewSite.js';
import { Logo, SignIn } from './pages/SignIn.js';
import { Site } from './pages/Site.js';
import { SiteIntegrations } from './pages/SiteIntegrations.js';
import { Sites } from './pages/Sites.js';
import { Storage } from './pages/Storage.js';
import { Team } from './pages/Team.js';
import { CURRENT_TEAM, type Team as TeamData } from './queries.js';
import { href, markNavigated, useRoute, type Route } from './router.js';
import { session } from './session.js';
import type { Credentials } from './sigv4.js';

type State =
  | { kind: 'starting' }
  | { kind: 'broken'; message: string }
  | { kind: 'signed-out'; notice?: string }
  | { kind: 'signed-in'; apiKey: string; team: TeamData };

export function App() {
  const [config, setConfig] = useState<WebAppConfig | null>(null);
  const [state, setState] = useState<State>({ kind: 'starting' });
  const [storageKeys, setStorageKeysState] = useState<Credentials | null>(() => session.storageKeys());
  const route = useRoute();

  const signOut = useCallback((notice?: string) => {
    session.clear();
    setStorageKeysState(null);
    setState({ kind: 'signed-out', notice });
  }, []);

  // The endpoints first, then the key this tab already has, if any.
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
      if (!key) return setState({ kind: 'signed-out' });
      try {
        const api = createApi(cfg.graphqlPath, key, () => {});
        const { getCurrentTeam } = await api.query<{ getCurrentTeam: TeamData }>(CURRENT_TEAM);
        if (!stopped) setState({ kind: 'signed-in', apiKey: key, team: getCurrentTeam });
      } catch (err) {
        if (stopped) return;
        const code = (err as { code?: string }).code;
        if (code === 'UNAUTHENTICATED') {
          session.clear();
          setState({
            kind: 'signed-out',
            notice: 'Your API key is no longer accepted (it was revoked or deleted). Sign in with another one.',
          });
        } else setState({ kind: 'broken', message: `The service could not be reached: ${messageOf(err)}` });
      }
    })();
    return () => {
      stopped = true;
    };
  }, []);

  const context = useMemo<AppContextValue | null>(() => {
    if (state.kind !== 'signed-in' || !config) return null;
    return {
      api: createApi(config.graphqlPath, state.apiKey, () =>
        signOut('Your API key is no longer accepted (it was revoked or deleted). Sign in with another one.'),
      ),
      config,
      team: state.team,
      apiKey: state.apiKey,
      signOut,
      storageKeys,
      setStorageKeys: (keys) => {
        session.setStorageKeys(keys);
        setStorageKeysState(keys);
      },
    };
  }, [state, config, signOut, storageKeys]);

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
        notice={state.kind === 'signed-out' ? state.notice : undefined}
        onSignedIn={(apiKey, team) => {
          markNavigated();
          session.setApiKey(apiKey);
          setState({ kind: 'signed-in', apiKey, team });
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

function Shell() {
  const route = useRoute();
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
      {/* The key makes each route a fresh page: its state, loads and polling start over. */}
      <main id="main" className="content" tabIndex={-1} key={href(route)}>
        <Page route={route} />
      </main>
    </>
  );
}

function section(route: Route): 'sites' | 'storage' | 'team' | null {
  if (
    route.name === 'sites' ||
    route.name === 'new-site' ||
    route.name === 'site' ||
    route.name === 'site-settings' ||
    route.name === 'site-integrations' ||
    route.name === 'deploy'
  )
    return 'sites';
  if (route.name === 'storage' || route.name === 'bucket') return 'storage';
  if (route.name === 'team') return 'team';
  return null;
}

function Header({ current }: { current: 'sites' | 'storage' | 'team' | null }) {
  const app = useApp();
  const link = (name: 'sites' | 'storage' | 'team', label: string) => (
    <a
      href={href({ name })}
      className={`nav-link${current === name ? ' active' : ''}`}
      aria-current={current === name ? 'page' : undefined}
    >
      {label}
    </a>
  );
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
        </nav>
        <div className="account">
          <span className="team-name" title="The team of your API key">
            {app.team.name}
          </span>
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
    case 'deploy':
      return <Deploy siteId={route.siteId} deployId={route.deployId} />;
    case 'team':
      return <Team />;
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
