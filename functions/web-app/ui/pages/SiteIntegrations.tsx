/**
 * A site's "Git & notifications" page: what deploys it from outside and who
 * hears of its deploys. The webhook a git host posts pushes and pull
 * requests to (its secret made or rotated here, shown once), the access
 * token a private repository is cloned with (write-only), build hooks, and
 * notification URLs with their last deliveries. Previews and
 * auto-publishing are the site's settings: linked, not repeated.
 */
import { useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton, CopyButton, Mono, PageHeader, ShownOnce, siteNotReady } from '../components.js';
import { useActions, useLoad, usePolling, useTitle } from '../hooks.js';
import {
  CREATE_WEBHOOK_SECRET,
  DELETE_WEBHOOK_SECRET,
  SET_REPOSITORY_TOKEN,
  SITE_INTEGRATIONS,
  type SiteIntegrations as SiteData,
} from '../queries.js';
import { href } from '../router.js';
import { BuildHooks } from './BuildHooks.js';
import { NotificationUrls } from './NotificationUrls.js';
import type { SectionProps } from './section-props.js';

export function SiteIntegrations({ siteId }: { siteId: string }) {
  const { api } = useApp();
  const site = useLoad(
    async () => (await api.query<{ getSiteById: SiteData | null }>(SITE_INTEGRATIONS, { siteId })).getSiteById,
    [siteId],
  );
  useTitle(site.data ? `Git & notifications of ${site.data.name}` : 'Git & notifications');
  // A delivery being retried is followed until it is settled.
  const pending = !!site.data?.notificationUrls.some((n) => n.lastDeliveries.some((d) => d.status === 'PENDING'));
  usePolling(() => site.reload(true), pending ? 3000 : null);

  const gate = siteNotReady(site);
  if (gate || !site.data) return gate;
  const s = site.data;
  const onChanged = () => void site.reload(true);
  const git = s.deploySettings.source.__typename === 'Repository';
  return (
    <>
      <PageHeader
        title="Git & notifications"
        back={{ href: href({ name: 'site', siteId: s.id }), label: s.name }}
        subtitle={
          git
            ? 'What deploys the site from outside, and where its deploys are reported.'
            : 'Build hooks that deploy the site, and where its deploys are reported.'
        }
      />
      <div className="stack">
        <section className="card" aria-labelledby="settings-title">
          <h2 id="settings-title">Deploy settings</h2>
          <p>
            {git ? (
              <>
                Pull-request previews are <strong>{s.deploySettings.prDeployPreviews ? 'on' : 'off'}</strong>; a
              </>
            ) : (
              'A'
            )}
            uto-publishing is <strong>{s.deploySettings.autoPublishing ? 'on' : 'off'}</strong>.{' '}
            <a href={href({ name: 'site-settings', siteId: s.id })}>Change them in the site's settings</a>.
          </p>
        </section>
        {git ? (
          <>
            <Webhook site={s} onChanged={onChanged} />
            <RepositoryToken site={s} onChanged={onChanged} />
          </>
        ) : (
          <p className="notice notice-info">This site deploys a CID, not a repository: it has no webhook or repository token.</p>
        )}
        <BuildHooks site={s} onChanged={onChanged} />
        <NotificationUrls site={s} onChanged={onChanged} />
      </div>
    </>
  );
}

function Webhook({ site, onChanged }: SectionProps) {
  const { api } = useApp();
  const actions = useActions();
  const [made, setMade] = useState<{ secret: string; url: string } | null>(null);
  const busy = actions.pending !== null;
  const branch = site.deploySettings.source.branch;

  const create = async () => {
    setMade(null);
    const r = await actions.run(
      site.webhookSecretSet ? 'Replacing the webhook secret' : 'Creating the webhook secret',
      () => api.mutate<{ createWebhookSecret: { secret: string; url: string } }>(CREATE_WEBHOOK_SECRET, { siteId: site.id }),
      () =>
        `${site.webhookSecretSet ? 'New secret made: the old one no longer works.' : 'Secret made.'} Copy it to the git host now: it is not shown again.`,
    );
    if (r) setMade(r.createWebhookSecret);
    onChanged();
  };
  const remove = async () => {
    setMade(null);
    await actions.run(
      'Deleting the webhook secret',
      () => api.mutate(DELETE_WEBHOOK_SECRET, { siteId: site.id }),
      () => 'The secret is deleted: the webhook URL answers 404 from now on.',
    );
    onChanged();
  };

  return (
    <section className="card" aria-labelledby="webhook-title">
      <h2 id="webhook-title">Webhook</h2>
      <p className="muted">
        The git host posts pushes and pull requests here: a push to <code>{branch}</code> deploys it; a pull request builds a preview when
        previews are on.
      </p>
      <p data-testid="webhook-status">
        {site.webhookSecretSet
          ? 'A secret is set: events signed with it are taken.'
          : 'No secret yet: the webhook URL answers 404 until one is made.'}
      </p>
      <div className="copy-row webhook-url">
        <span className="muted">Webhook URL</span>
        <Mono>{site.webhookUrl}</Mono>
        <CopyButton text={site.webhookUrl} label="Copy URL" />
      </div>
      <div className="toolbar section-actions">
        {site.webhookSecretSet ? (
          <>
            <ConfirmButton
              small={false}
              label="Rotate secret"
              confirmLabel="Replace the secret"
              disabled={busy}
              onConfirm={() => void create()}
            />
            <ConfirmButton
              small={false}
              label="Delete secret"
              confirmLabel="Delete the secret"
              disabled={busy}
              onConfirm={() => void remove()}
            />
          </>
        ) : (
          <button type="button" className="button button-primary" disabled={busy} onClick={() => void create()}>
            Create webhook secret
          </button>
        )}
      </div>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {made ? (
        <div className="shown-once-group">
          <ShownOnce label="Payload URL" value={made.url} />
          <ShownOnce label="Webhook secret" value={made.secret}>
            <p className="hint">The secret is shown only now. Give it to the git host with the URL, as below.</p>
          </ShownOnce>
        </div>
      ) : null}
      <div className="setup-steps">
        <div>
          <h3>On GitHub</h3>
          <ol>
            <li>
              The repository's <em>Settings → Webhooks → Add webhook</em>.
            </li>
            <li>
              <em>Payload URL</em>: the webhook URL.
            </li>
            <li>
              <em>Content type</em>: <code>application/json</code>.
            </li>
            <li>
              <em>Secret</em>: the webhook secret.
            </li>
            <li>
              <em>Let me select individual events</em>: <em>Pushes</em> and <em>Pull requests</em>.
            </li>
          </ol>
        </div>
        <div>
          <h3>On GitLab</h3>
          <ol>
            <li>
              The project's <em>Settings → Webhooks → Add new webhook</em>.
            </li>
            <li>
              <em>URL</em>: the webhook URL.
            </li>
            <li>
              <em>Secret token</em>: the webhook secret.
            </li>
            <li>
              <em>Trigger</em>: <em>Push events</em> and <em>Merge request events</em>.
            </li>
          </ol>
        </div>
      </div>
    </section>
  );
}

function RepositoryToken({ site, onChanged }: SectionProps) {
  const { api } = useApp();
  const actions = useActions();
  const [token, setToken] = useState('');
  const [username, setUsername] = useState('');
  const busy = actions.pending !== null;

  const save = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!token) return;
    const done = await actions.run(
      'Setting the token',
      () => api.mutate(SET_REPOSITORY_TOKEN, { siteId: site.id, token, username: username.trim() || null }),
      () => 'The token is set: the next deploys clone the repository with it.',
    );
    // The token leaves the page once the service has it.
    if (done) {
      setToken('');
      setUsername('');
    }
    onChanged();
  };
  const clear = async () => {
    await actions.run(
      'Clearing the token',
      () => api.mutate(SET_REPOSITORY_TOKEN, { siteId: site.id, token: null }),
      () => 'The token is cleared: the repository is cloned without credentials.',
    );
    onChanged();
  };

  return (
    <section className="card" aria-labelledby="token-title">
      <h2 id="token-title">Repository access token</h2>
      <p className="muted">
        For a private repository: the clone sends it as HTTP basic credentials. It can be set or cleared here, never read back.
      </p>
      <p data-testid="token-status">
        {site.repositoryTokenSet ? (
          <>
            A token is set, with the user name <code>{site.repositoryUsername}</code>.
          </>
        ) : (
          'No token is set: the repository is cloned without credentials.'
        )}
      </p>
      <form className="form" onSubmit={(e) => void save(e)}>
        <div className="field-row">
          <div className="field grow">
            <label htmlFor="repo-token">{site.repositoryTokenSet ? 'New token' : 'Token'}</label>
            <input
              id="repo-token"
              type="password"
              className="mono"
              value={token}
              onChange={(e) => setToken(e.currentTarget.value)}
              autoComplete="off"
              spellCheck={false}
              required
              aria-describedby="repo-token-hint"
            />
            <p id="repo-token-hint" className="hint">
              GitHub: a fine-grained token that reads the repository's contents. GitLab: a project access token with{' '}
              <code>read_repository</code>.
            </p>
          </div>
          <div className="field">
            <label htmlFor="repo-username">User name (optional)</label>
            <input
              id="repo-username"
              value={username}
              onChange={(e) => setUsername(e.currentTarget.value)}
              autoComplete="off"
              spellCheck={false}
              aria-describedby="repo-username-hint"
            />
            <p id="repo-username-hint" className="hint">
              Empty: <code>oauth2</code> on GitLab, <code>x-access-token</code> elsewhere.
            </p>
          </div>
        </div>
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy}>
            {site.repositoryTokenSet ? 'Replace token' : 'Set token'}
          </button>
          {site.repositoryTokenSet ? (
            <ConfirmButton
              small={false}
              label="Clear token"
              confirmLabel="Clear the token"
              disabled={busy}
              onConfirm={() => void clear()}
            />
          ) : null}
        </div>
      </form>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
    </section>
  );
}
