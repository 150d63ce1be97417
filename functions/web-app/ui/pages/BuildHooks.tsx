/** A site's build hooks: secret URLs that deploy a branch's head on POST (for CI and content systems). */
import { useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton, EmptyState, ShownOnce, TimeAgo } from '../components.js';
import { formatAgo } from '../format.js';
import { useActions } from '../hooks.js';
import { CREATE_BUILD_HOOK, DELETE_BUILD_HOOK, type BuildHook } from '../queries.js';
import type { SectionProps } from './section-props.js';

/** A shell line that triggers the hook; single quotes keep the shell off the URL's `?` and `&`. */
export const curlLine = (url: string): string => `curl -X POST '${url.replace(/'/g, `'\\''`)}'`;

export function BuildHooks({ site, onChanged }: SectionProps) {
  const { api } = useApp();
  const actions = useActions();
  const [name, setName] = useState('');
  const [branch, setBranch] = useState('');
  const [made, setMade] = useState<{ name: string; url: string } | null>(null);
  const busy = actions.pending !== null;
  const siteBranch = site.deploySettings.source.branch;

  const create = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const hookName = name.trim();
    if (!hookName) return;
    setMade(null);
    const r = await actions.run(
      `Creating the build hook ${hookName}`,
      () =>
        api.mutate<{ createBuildHook: { url: string } }>(CREATE_BUILD_HOOK, {
          siteId: site.id,
          name: hookName,
          branch: branch.trim() || null,
        }),
      () => `Build hook "${hookName}" made. Copy its URL now: it is not shown again.`,
    );
    if (r) {
      setMade({ name: hookName, url: r.createBuildHook.url });
      setName('');
      setBranch('');
      onChanged();
    }
  };
  const remove = async (hook: BuildHook) => {
    setMade(null);
    const done = await actions.run(
      `Deleting ${hook.name}`,
      () => api.mutate(DELETE_BUILD_HOOK, { siteId: site.id, buildHookId: hook.id }),
      () => `Build hook "${hook.name}" deleted: its URL answers 404 from now on.`,
    );
    if (done) onChanged();
  };

  return (
    <section className="card" aria-labelledby="hooks-title">
      <h2 id="hooks-title">Build hooks</h2>
      <p className="muted">
        A POST to a build hook's URL deploys the head of its branch. The URL is the credential: it is shown once, when the hook is made.
      </p>
      <form className="form" onSubmit={(e) => void create(e)}>
        <div className="field-row">
          <div className="field grow">
            <label htmlFor="hook-name">Hook name</label>
            <input
              id="hook-name"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              placeholder="e.g. CMS publish"
              autoComplete="off"
              required
            />
          </div>
          {siteBranch ? (
            <div className="field">
              <label htmlFor="hook-branch">Branch (optional)</label>
              <input
                id="hook-branch"
                className="mono"
                value={branch}
                onChange={(e) => setBranch(e.currentTarget.value)}
                placeholder={siteBranch}
                autoComplete="off"
                spellCheck={false}
                aria-describedby="hook-branch-hint"
              />
              <p id="hook-branch-hint" className="hint">
                Empty: the site's branch. Another branch deploys as a preview, never published.
              </p>
            </div>
          ) : null}
        </div>
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy}>
            Create build hook
          </button>
        </div>
      </form>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {made ? (
        <div className="shown-once-group">
          <ShownOnce label={`URL of build hook "${made.name}"`} value={made.url} />
          <ShownOnce label="Command that triggers it" value={curlLine(made.url)}>
            <p className="hint">The URL is shown only now. Anyone with it can start deploys; delete the hook to stop it.</p>
          </ShownOnce>
        </div>
      ) : null}
      {site.buildHooks.length === 0 ? (
        <EmptyState title="No build hooks yet." />
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Branch</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {site.buildHooks.map((hook) => (
              <tr key={hook.id} data-hook={hook.name}>
                <td data-label="Name">{hook.name}</td>
                <td data-label="Branch">
                  {hook.branch ? (
                    <code>{hook.branch}</code>
                  ) : (
                    <span className="muted">
                      the site's
                      {siteBranch ? (
                        <>
                          {' '}
                          (<code>{siteBranch}</code>)
                        </>
                      ) : null}
                    </span>
                  )}
                </td>
                <td data-label="Created">
                  <TimeAgo iso={hook.createdAt} formatted={formatAgo(hook.createdAt)} />
                </td>
                <td className="actions">
                  <ConfirmButton label="Delete" confirmLabel="Delete hook" disabled={busy} onConfirm={() => void remove(hook)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
