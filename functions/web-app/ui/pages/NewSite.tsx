/** Creating a site, and changing one: its source (a git repository or a CID), build settings and environment. */
import { useRef, useState, type FormEvent } from 'react';
import { ApiError, messageOf } from '../api.js';
import { useApp } from '../app-context.js';
import { PageHeader, siteNotReady } from '../components.js';
import { useLoad, useTitle } from '../hooks.js';
import { CREATE_SITE, SITE, TRIGGER_DEPLOY, UPDATE_SITE, type Site, type VariableScope } from '../queries.js';
import { href, navigate } from '../router.js';

interface EnvRow {
  id: number;
  name: string;
  /** What was typed: for a secret already set, a replacement (empty: keep the one set). */
  value: string;
  secret: boolean;
  scope: VariableScope;
  /** The name of a secret the site already has: its value is never shown, only kept or replaced. */
  storedSecret?: string;
  /** The user chose to type a new value for a secret already set. */
  replacing?: boolean;
}

const SCOPES: Array<{ value: VariableScope; label: string }> = [
  { value: 'ALL', label: 'All deploys' },
  { value: 'PRODUCTION', label: 'Production only' },
  { value: 'PREVIEWS', label: 'Previews only' },
];

/** A secret value is masked in deploy logs; the API refuses shorter ones. */
const SECRET_MIN = 4;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export function NewSite() {
  useTitle('New site');
  const { api } = useApp();
  return (
    <>
      <PageHeader title="New site" back={{ href: href({ name: 'sites' }), label: 'Sites' }} />
      <SiteForm
        submitLabel="Create site"
        busyLabel="Creating…"
        cancelHref={href({ name: 'sites' })}
        onSubmit={async (input, deployNow) => {
          const { createSite } = await api.mutate<{ createSite: { id: string; slug: string } }>(CREATE_SITE, { input });
          if (deployNow) {
            try {
              await api.mutate(TRIGGER_DEPLOY, { siteId: createSite.id });
            } catch {
              // The site exists; its page offers to deploy again.
            }
          }
          navigate({ name: 'site', siteId: createSite.id });
        }}
      />
    </>
  );
}

export function EditSite({ siteId }: { siteId: string }) {
  const { api } = useApp();
  const site = useLoad(async () => (await api.query<{ getSiteById: Site | null }>(SITE, { siteId })).getSiteById, [siteId]);
  useTitle(site.data ? `Settings of ${site.data.name}` : 'Site settings');
  const back = { href: href({ name: 'site', siteId }), label: site.data?.name ?? 'Site' };
  const gate = siteNotReady(site);
  if (gate || !site.data) return gate;
  const s = site.data;
  return (
    <>
      <PageHeader
        title={`Settings of ${s.name}`}
        back={back}
        subtitle="Changes apply to the next deploy. A new name is also the new address, at once."
      />
      <SiteForm
        initial={s}
        submitLabel="Save settings"
        busyLabel="Saving…"
        cancelHref={back.href}
        onSubmit={async (input) => {
          await api.mutate(UPDATE_SITE, { siteId, input });
          navigate({ name: 'site', siteId });
        }}
      />
    </>
  );
}

type SiteInput = Record<string, unknown>;

function SiteForm({
  initial,
  submitLabel,
  busyLabel,
  cancelHref,
  onSubmit,
}: {
  initial?: Site;
  submitLabel: string;
  busyLabel: string;
  cancelHref: string;
  onSubmit(input: SiteInput, deployNow: boolean): Promise<void>;
}) {
  const source = initial?.deploySettings.source;
  const build = initial?.buildSettings;
  const editing = initial !== undefined;
  const [name, setName] = useState(initial?.name ?? '');
  const [description, setDescription] = useState(initial?.description ?? '');
  const [kind, setKind] = useState<'git' | 'ipfs'>(source?.__typename === 'IpfsSource' ? 'ipfs' : 'git');
  const [url, setUrl] = useState(source?.url ?? '');
  const [branch, setBranch] = useState(source?.branch ?? 'main');
  const [cid, setCid] = useState(source?.cid ?? '');
  const [buildCommand, setBuildCommand] = useState(build?.buildCommand ?? '');
  const [baseDirectory, setBaseDirectory] = useState(build?.baseDirectoryPath ?? '');
  const [publishDirectory, setPublishDirectory] = useState(build?.publishDirectoryPath ?? '');
  const nextRow = useRef(1);
  const [env, setEnv] = useState<EnvRow[]>(() =>
    (build?.environmentVariables ?? []).map((v) => ({
      id: nextRow.current++,
      name: v.name,
      value: v.secret ? '' : (v.value ?? ''),
      secret: v.secret,
      scope: v.scope,
      ...(v.secret ? { storedSecret: v.name } : {}),
    })),
  );
  const [forks, setForks] = useState(initial?.deploySettings.forkPullRequests === 'BUILT_WITHOUT_SECRETS');
  const [showValues, setShowValues] = useState(false);
  const [autoPublishing, setAutoPublishing] = useState(initial?.deploySettings.autoPublishing ?? true);
  const [previews, setPreviews] = useState(initial?.deploySettings.prDeployPreviews ?? false);
  const [deployNow, setDeployNow] = useState(!editing);
  const [error, setError] = useState<{ text: string; field?: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const errorRef = useRef<HTMLParagraphElement>(null);

  const fail = (text: string, field?: string) => {
    setError({ text, field });
    setBusy(false);
    setTimeout(() => errorRef.current?.focus(), 0);
  };

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (name && !SLUG.test(name))
      return fail('The name is its address: lowercase letters, digits and inner hyphens, at most 63 characters.', 'name');
    if (kind === 'git' && !/^https?:\/\/\S+$/.test(url.trim()))
      return fail('Give the repository as an https:// (or http://) clone URL.', 'url');
    if (kind === 'git' && !branch.trim()) return fail('Give the branch to deploy.', 'branch');
    if (kind === 'ipfs' && !cid.trim()) return fail('Give the CID of the content to publish.', 'cid');
    const bad = env.find((row) => !ENV_NAME.test(row.name));
    if (bad)
      return fail(
        `"${bad.name}" is not a variable name: letters, digits and underscores, not starting with a digit.`,
        'environmentVariables',
      );
    // A secret already set keeps its value when none is typed, but only under its own name.
    const keeps = (row: EnvRow) => row.secret && row.storedSecret === row.name && row.value === '';
    const unset = env.find((row) => row.secret && !keeps(row) && row.value.length < SECRET_MIN);
    if (unset) {
      return fail(
        unset.storedSecret
          ? `The secret ${unset.name} was renamed: type its value again (at least ${SECRET_MIN} characters).`
          : `The secret ${unset.name || 'variable'} needs a value of at least ${SECRET_MIN} characters.`,
        'environmentVariables',
      );
    }
    setBusy(true);
    setError(null);
    // Creating, an empty field is left out (the default); editing, it clears the setting (null).
    const optional = (v: string) => (v.trim() === '' ? (editing ? null : undefined) : v.trim());
    const input: SiteInput = {
      description: optional(description),
      buildSettings: {
        buildCommand: optional(buildCommand),
        baseDirectoryPath: optional(baseDirectory),
        publishDirectoryPath: optional(publishDirectory),
        // A secret left empty is sent without a value: the site keeps the one it has (the API never gives it back).
        environmentVariables: env.map((row) =>
          keeps(row)
            ? { name: row.name, secret: true, scope: row.scope }
            : { name: row.name, value: row.value, secret: row.secret, scope: row.scope },
        ),
      },
      deploySettings: {
        autoPublishing,
        prDeployPreviews: previews,
        forkPullRequests: forks ? 'BUILT_WITHOUT_SECRETS' : 'NOT_BUILT',
        source:
          kind === 'git' ? { repository: { type: 'GIT_HOST', url: url.trim(), branch: branch.trim() } } : { ipfs: { cid: cid.trim() } },
      },
    };
    // A site always has a name: editing, an empty one keeps the current name.
    if (name.trim() !== '') input.name = name.trim();
    try {
      await onSubmit(input, deployNow);
    } catch (err) {
      fail(messageOf(err), err instanceof ApiError ? err.field : undefined);
    }
  };

  const invalid = (field: string) => (error?.field === field ? true : undefined);

  return (
    <>
      <form className="form" onSubmit={(e) => void submit(e)} noValidate>
        {error ? (
          <p ref={errorRef} tabIndex={-1} className="notice notice-error" role="alert">
            {error.text}
          </p>
        ) : null}
        <section className="card">
          <h2>Site</h2>
          <div className="field">
            <label htmlFor="site-name">Name</label>
            <input
              id="site-name"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              autoComplete="off"
              spellCheck={false}
              aria-describedby="site-name-hint"
              aria-invalid={invalid('name')}
            />
            <p id="site-name-hint" className="hint">
              {editing
                ? 'Also its address: a new name moves the site at once, and the old address stops answering.'
                : 'Also its address. Lowercase letters, digits and hyphens. Leave it empty for a generated one.'}
            </p>
          </div>
          <div className="field">
            <label htmlFor="site-description">Description (optional)</label>
            <input id="site-description" value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
          </div>
        </section>

        <fieldset className="card">
          <legend>Source</legend>
          <div className="radio-row">
            <label className="radio">
              <input type="radio" name="source" value="git" checked={kind === 'git'} onChange={() => setKind('git')} />
              Git repository
            </label>
            <label className="radio">
              <input type="radio" name="source" value="ipfs" checked={kind === 'ipfs'} onChange={() => setKind('ipfs')} />
              Content on IPFS (a CID)
            </label>
          </div>
          {kind === 'git' ? (
            <div className="field-row">
              <div className="field grow">
                <label htmlFor="repo-url">Repository URL</label>
                <input
                  id="repo-url"
                  type="url"
                  inputMode="url"
                  value={url}
                  onChange={(e) => setUrl(e.currentTarget.value)}
                  placeholder="https://github.com/acme/site.git"
                  spellCheck={false}
                  autoComplete="off"
                  required
                  aria-invalid={invalid('url')}
                />
              </div>
              <div className="field">
                <label htmlFor="repo-branch">Branch</label>
                <input
                  id="repo-branch"
                  value={branch}
                  onChange={(e) => setBranch(e.currentTarget.value)}
                  spellCheck={false}
                  autoComplete="off"
                  required
                  aria-invalid={invalid('branch')}
                />
              </div>
            </div>
          ) : (
            <div className="field">
              <label htmlFor="source-cid">CID</label>
              <input
                id="source-cid"
                className="mono"
                value={cid}
                onChange={(e) => setCid(e.currentTarget.value)}
                spellCheck={false}
                autoComplete="off"
                placeholder="bafybei…"
                required
                aria-invalid={invalid('cid')}
                aria-describedby="source-cid-hint"
              />
              <p id="source-cid-hint" className="hint">
                A file or directory this service holds (upload it on the Storage page).
              </p>
            </div>
          )}
        </fieldset>

        <fieldset className="card">
          <legend>Build settings</legend>
          <div className="field">
            <label htmlFor="build-command">Build command (optional)</label>
            <input
              id="build-command"
              className="mono"
              value={buildCommand}
              onChange={(e) => setBuildCommand(e.currentTarget.value)}
              placeholder="npm run build"
              spellCheck={false}
              autoComplete="off"
              aria-describedby="build-command-hint"
            />
            <p id="build-command-hint" className="hint">
              Run with <code>sh -c</code>. Without one, the publish directory is published as it is.
            </p>
          </div>
          <div className="field-row">
            <div className="field grow">
              <label htmlFor="base-dir">Base directory</label>
              <input
                id="base-dir"
                className="mono"
                value={baseDirectory}
                onChange={(e) => setBaseDirectory(e.currentTarget.value)}
                placeholder="(repository root)"
                spellCheck={false}
                autoComplete="off"
              />
            </div>
            <div className="field grow">
              <label htmlFor="publish-dir">Publish directory</label>
              <input
                id="publish-dir"
                className="mono"
                value={publishDirectory}
                onChange={(e) => setPublishDirectory(e.currentTarget.value)}
                placeholder="(base directory)"
                spellCheck={false}
                autoComplete="off"
              />
            </div>
          </div>
          <div className="env" role="group" aria-labelledby="env-title">
            <div className="env-header">
              <h3 id="env-title">Environment variables</h3>
              {env.length ? (
                <button type="button" className="button button-small" aria-pressed={showValues} onClick={() => setShowValues(!showValues)}>
                  {showValues ? 'Hide values' : 'Show values'}
                </button>
              ) : null}
            </div>
            {env.length === 0 ? <p className="hint">None. The build always gets CI=true, CAIRN_DEPLOY_ID, COMMIT_REF and BRANCH.</p> : null}
            {env.map((row, i) => (
              <div className="env-row" key={row.id}>
                <div className="field grow">
                  <label htmlFor={`env-name-${row.id}`}>Name {i + 1}</label>
                  <input
                    id={`env-name-${row.id}`}
                    className="mono"
                    value={row.name}
                    spellCheck={false}
                    autoComplete="off"
                    aria-invalid={invalid('environmentVariables') && !ENV_NAME.test(row.name) ? true : undefined}
                    onChange={(e) => {
                      const v = e.currentTarget.value;
                      setEnv((rows) => rows.map((r) => (r.id === row.id ? { ...r, name: v } : r)));
                    }}
                  />
                </div>
                {row.secret && row.storedSecret === row.name && !row.replacing ? (
                  <div className="field grow">
                    <span className="field-label" id={`env-value-${row.id}`}>
                      Value {i + 1}
                    </span>
                    <p className="env-secret-set">
                      <span className="muted">secret (set)</span>{' '}
                      <button
                        type="button"
                        className="button button-small"
                        aria-label={`Replace ${row.name}`}
                        onClick={() => setEnv((rows) => rows.map((r) => (r.id === row.id ? { ...r, replacing: true, value: '' } : r)))}
                      >
                        Replace
                      </button>
                    </p>
                  </div>
                ) : (
                  <div className="field grow">
                    <label htmlFor={`env-value-${row.id}`}>Value {i + 1}</label>
                    <input
                      id={`env-value-${row.id}`}
                      className="mono"
                      // A secret is typed blind and never shown again.
                      type={showValues && !row.secret ? 'text' : 'password'}
                      value={row.value}
                      spellCheck={false}
                      autoComplete={row.secret ? 'new-password' : 'off'}
                      placeholder={row.replacing ? 'new value (empty: keep the one set)' : undefined}
                      onChange={(e) => {
                        const v = e.currentTarget.value;
                        setEnv((rows) => rows.map((r) => (r.id === row.id ? { ...r, value: v } : r)));
                      }}
                    />
                  </div>
                )}
                <div className="field">
                  <label htmlFor={`env-scope-${row.id}`}>Deploys {i + 1}</label>
                  <select
                    id={`env-scope-${row.id}`}
                    value={row.scope}
                    onChange={(e) => {
                      const v = e.currentTarget.value as VariableScope;
                      setEnv((rows) => rows.map((r) => (r.id === row.id ? { ...r, scope: v } : r)));
                    }}
                  >
                    {SCOPES.map((scope) => (
                      <option key={scope.value} value={scope.value}>
                        {scope.label}
                      </option>
                    ))}
                  </select>
                </div>
                <label className="checkbox env-secret">
                  <input
                    type="checkbox"
                    checked={row.secret}
                    onChange={(e) => {
                      const v = e.currentTarget.checked;
                      // Unmarking a secret already set drops its value (it is never shown): a plain value is typed anew.
                      setEnv((rows) =>
                        rows.map((r) =>
                          r.id === row.id ? { ...r, secret: v, ...(v ? {} : { storedSecret: undefined, replacing: false }) } : r,
                        ),
                      );
                    }}
                  />
                  Secret {i + 1}
                </label>
                <button
                  type="button"
                  className="button button-small env-remove"
                  onClick={() => setEnv((rows) => rows.filter((r) => r.id !== row.id))}
                  aria-label={`Remove variable ${row.name || i + 1}`}
                >
                  Remove
                </button>
              </div>
            ))}
            <p className="hint">
              A secret's value is never shown again, is masked as *** in deploy logs, and is not given to pull requests from forks.
            </p>
            <button
              type="button"
              className="button button-small"
              onClick={() => setEnv((rows) => [...rows, { id: nextRow.current++, name: '', value: '', secret: false, scope: 'ALL' }])}
            >
              Add a variable
            </button>
          </div>
        </fieldset>

        <fieldset className="card">
          <legend>Deploys</legend>
          <label className="checkbox">
            <input type="checkbox" checked={autoPublishing} onChange={(e) => setAutoPublishing(e.currentTarget.checked)} />
            Publish each successful deploy at once
          </label>
          {kind === 'git' ? (
            <label className="checkbox">
              <input type="checkbox" checked={previews} onChange={(e) => setPreviews(e.currentTarget.checked)} />
              Build a preview of each pull request (GitLab: merge request) the webhook reports
            </label>
          ) : null}
          {kind === 'git' && previews ? (
            <label className="checkbox">
              <input type="checkbox" checked={forks} onChange={(e) => setForks(e.currentTarget.checked)} />
              Also build pull requests from forks (someone else's code: without the site's secret variables and access token)
            </label>
          ) : null}
          {editing ? null : (
            <label className="checkbox">
              <input type="checkbox" checked={deployNow} onChange={(e) => setDeployNow(e.currentTarget.checked)} />
              Start the first deploy when the site is created
            </label>
          )}
        </fieldset>

        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? busyLabel : submitLabel}
          </button>
          <a className="button" href={cancelHref}>
            Cancel
          </a>
        </div>
      </form>
    </>
  );
}
