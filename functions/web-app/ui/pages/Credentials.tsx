/**
 * Credentials, as sections of a page: a team's hosting API keys (on the
 * Team page, and the person's own in Settings) and the account's storage
 * key pairs (Settings, the service description's "API section"). A new
 * key's or pair's secret is shown once, here, and never read back: the API
 * has no way to, and the page forgets it on the next action or load.
 */
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton, EmptyState, Mono, ShownOnce, TimeAgo } from '../components.js';
import { formatAgo } from '../format.js';
import { useActions } from '../hooks.js';
import { CREATE_API_KEY, CREATE_STORAGE_KEY, REVOKE_API_KEY, REVOKE_STORAGE_KEY, type ApiKey, type StorageKeyPair } from '../queries.js';

/** Focus on the block that holds a secret just shown, so that a keyboard or screen reader user lands on it. */
function useFocusOnShow(shown: unknown) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (shown) ref.current?.querySelector('input')?.focus();
  }, [shown]);
  return ref;
}

export function ApiKeysSection({
  keys,
  memberName,
  intro,
  heading: Heading = 'h2',
  onChanged,
}: {
  keys: ApiKey[];
  /** The maker's name by account id; without it, there is no "Made by" column (a list of one's own keys). */
  memberName?: (accountId: string) => string;
  intro: ReactNode;
  heading?: 'h2' | 'h3';
  onChanged(): void;
}) {
  const { api, team, apiKey, signOut } = useApp();
  const actions = useActions();
  const [keyName, setKeyName] = useState('');
  const [newKey, setNewKey] = useState<{ key: string; name: string } | null>(null);
  const shownRef = useFocusOnShow(newKey);
  const isCurrent = (k: ApiKey) => !!apiKey && !!k.keyPrefix && apiKey.startsWith(k.keyPrefix);

  const createKey = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const name = keyName.trim();
    setNewKey(null);
    const made = await actions.run(
      'Creating an API key',
      () => api.mutate<{ createApiKey: { key: string; apiKey: { id: string } } }>(CREATE_API_KEY, { teamId: team.id, name: name || null }),
      () => 'API key created. Copy it now: it is not shown again.',
    );
    if (made) {
      setNewKey({ key: made.createApiKey.key, name });
      setKeyName('');
      onChanged();
    }
  };
  const revokeKey = async (k: ApiKey) => {
    const current = isCurrent(k);
    const done = await actions.run(
      `Revoking ${k.name ?? k.keyPrefix ?? 'the key'}`,
      () => api.mutate(REVOKE_API_KEY, { teamId: team.id, apiKeyId: k.id }),
      () => `The key ${k.name ? `"${k.name}"` : (k.keyPrefix ?? '')} is revoked: it no longer works.`,
    );
    if (done && current) return signOut('You revoked the API key this browser was signed in with.');
    setNewKey(null);
    onChanged();
  };

  return (
    <section className="card" aria-labelledby="keys-title">
      <Heading id="keys-title">API keys</Heading>
      <p className="muted">{intro}</p>
      <form className="inline-form" onSubmit={(e) => void createKey(e)}>
        <label htmlFor="key-name">New key's name</label>
        <input
          id="key-name"
          value={keyName}
          onChange={(e) => setKeyName(e.currentTarget.value)}
          placeholder="e.g. CI deploys"
          autoComplete="off"
        />
        <button type="submit" className="button button-primary" disabled={actions.pending !== null}>
          Create API key
        </button>
      </form>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {newKey ? (
        <div ref={shownRef}>
          <ShownOnce label={`New API key${newKey.name ? ` "${newKey.name}"` : ''}`} value={newKey.key}>
            <p className="hint">
              This is the only time the key is shown. Keep it somewhere safe; anyone with it acts as you in {team.name}.
            </p>
          </ShownOnce>
        </div>
      ) : null}
      {keys.length === 0 ? (
        <EmptyState title={memberName ? 'No API keys you can see.' : 'You have no API keys for this team.'} />
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Name</th>
              {memberName ? <th scope="col">Made by</th> : null}
              <CredentialColumns />
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id} data-key={k.id} className={k.revokedAt ? 'revoked' : ''}>
                <td data-label="Key">
                  <span>
                    <code>{k.keyPrefix ?? k.id}…</code>
                    {isCurrent(k) ? <span className="tag tag-current">this browser</span> : null}
                  </span>
                </td>
                <td data-label="Name">{k.name ?? <span className="muted">—</span>}</td>
                {memberName ? <td data-label="Made by">{memberName(k.createdBy)}</td> : null}
                <CredentialCells
                  createdAt={k.createdAt}
                  revokedAt={k.revokedAt}
                  busy={actions.pending !== null}
                  onRevoke={() => void revokeKey(k)}
                />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function StorageKeyPairsSection({
  pairs,
  heading: Heading = 'h2',
  onChanged,
}: {
  pairs: StorageKeyPair[];
  heading?: 'h2' | 'h3';
  onChanged(): void;
}) {
  const { api, storageKeys, setStorageKeys } = useApp();
  const actions = useActions();
  const [newPair, setNewPair] = useState<{ accessKeyId: string; secretAccessKey: string } | null>(null);
  const shownRef = useFocusOnShow(newPair);

  const createPair = async () => {
    setNewPair(null);
    const made = await actions.run(
      'Creating a storage key pair',
      () => api.mutate<{ createStorageKeyPair: { secretAccessKey: string; keyPair: { accessKeyId: string } } }>(CREATE_STORAGE_KEY),
      () => 'Storage key pair created. Copy the secret now: it is not shown again.',
    );
    if (made) {
      setNewPair({
        accessKeyId: made.createStorageKeyPair.keyPair.accessKeyId,
        secretAccessKey: made.createStorageKeyPair.secretAccessKey,
      });
      onChanged();
    }
  };
  const revokePair = async (p: StorageKeyPair) => {
    const done = await actions.run(
      `Revoking ${p.accessKeyId}`,
      () => api.mutate(REVOKE_STORAGE_KEY, { accessKeyId: p.accessKeyId }),
      () => `The key pair ${p.accessKeyId} is revoked.`,
    );
    if (done && storageKeys?.accessKeyId === p.accessKeyId) setStorageKeys(null);
    setNewPair(null);
    onChanged();
  };

  return (
    <section className="card" aria-labelledby="pairs-title">
      <Heading id="pairs-title">Storage key pairs</Heading>
      <p className="muted">
        Your account's access keys for the S3-compatible API: any S3 tool (the AWS CLI, an SDK, rclone) and the Storage page of this app.
      </p>
      <button type="button" className="button button-primary" disabled={actions.pending !== null} onClick={() => void createPair()}>
        Create storage key pair
      </button>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {newPair ? (
        <div className="shown-once-group" ref={shownRef}>
          <ShownOnce label="Access key id" value={newPair.accessKeyId} />
          <ShownOnce label="Secret access key" value={newPair.secretAccessKey}>
            <p className="notice notice-warn">
              This secret will not be shown again: copy it now to your S3 tool's configuration. If it is lost, revoke the pair and make
              another.
            </p>
          </ShownOnce>
          <button
            type="button"
            className="button"
            onClick={() => setStorageKeys(newPair)}
            disabled={storageKeys?.accessKeyId === newPair.accessKeyId}
          >
            {storageKeys?.accessKeyId === newPair.accessKeyId ? 'In use on the Storage page' : 'Use it on the Storage page in this tab'}
          </button>
        </div>
      ) : null}
      {pairs.length === 0 ? (
        <EmptyState title="No storage key pairs yet." />
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Access key id</th>
              <CredentialColumns />
            </tr>
          </thead>
          <tbody>
            {pairs.map((p) => (
              <tr key={p.accessKeyId} data-pair={p.accessKeyId} className={p.revokedAt ? 'revoked' : ''}>
                <td data-label="Access key id">
                  <span>
                    <Mono>{p.accessKeyId}</Mono>
                    {storageKeys?.accessKeyId === p.accessKeyId ? <span className="tag tag-current">this browser</span> : null}
                  </span>
                </td>
                <CredentialCells
                  createdAt={p.createdAt}
                  revokedAt={p.revokedAt}
                  busy={actions.pending !== null}
                  onRevoke={() => void revokePair(p)}
                />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The last three column heads of a credentials table: Created, Status and the actions. */
export function CredentialColumns() {
  return (
    <>
      <th scope="col">Created</th>
      <th scope="col">Status</th>
      <th scope="col">
        <span className="visually-hidden">Actions</span>
      </th>
    </>
  );
}

/** An API key's or key pair's Created, Status and Revoke cells. */
export function CredentialCells(props: { createdAt: string; revokedAt?: string | null; busy: boolean; onRevoke: () => void }) {
  const { createdAt, revokedAt, busy, onRevoke } = props;
  return (
    <>
      <td data-label="Created">
        <TimeAgo iso={createdAt} formatted={formatAgo(createdAt)} />
      </td>
      <td data-label="Status">
        {revokedAt ? (
          <span className="tag tag-revoked">Revoked {formatAgo(revokedAt)}</span>
        ) : (
          <span className="tag tag-active">Active</span>
        )}
      </td>
      <td className="actions">
        {revokedAt ? null : <ConfirmButton label="Revoke" confirmLabel="Revoke now" disabled={busy} onConfirm={onRevoke} />}
      </td>
    </>
  );
}
