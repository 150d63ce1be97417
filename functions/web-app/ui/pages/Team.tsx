/** The team: its members and roles, its API keys, and this account's storage key pairs. */
import { useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton, EmptyState, ErrorNotice, Loading, Mono, PageHeader, ShownOnce, TimeAgo } from '../components.js';
import { formatAgo } from '../format.js';
import { useActions, useLoad, useTitle } from '../hooks.js';
import {
  CREATE_API_KEY,
  CREATE_STORAGE_KEY,
  REVOKE_API_KEY,
  REVOKE_STORAGE_KEY,
  TEAM,
  type ApiKey,
  type Member,
  type StorageKeyPair,
} from '../queries.js';
import { href } from '../router.js';
import { Members } from './TeamMembers.js';

interface TeamData {
  getCurrentMember: { accountId: string } | null;
  getMembersByTeam: Member[] | null;
  getApiKeysByTeam: ApiKey[] | null;
  getStorageKeyPairs: StorageKeyPair[];
}

export function Team() {
  useTitle('Team');
  const { api, team, apiKey, signOut, storageKeys, setStorageKeys } = useApp();
  const data = useLoad(() => api.query<TeamData>(TEAM, { teamId: team.id }), [team.id]);
  const keyActions = useActions();
  const pairActions = useActions();
  const [keyName, setKeyName] = useState('');
  const [newKey, setNewKey] = useState<{ key: string; name: string } | null>(null);
  const [newPair, setNewPair] = useState<{ accessKeyId: string; secretAccessKey: string } | null>(null);

  const members = data.data?.getMembersByTeam ?? [];
  const keys = data.data?.getApiKeysByTeam ?? [];
  const pairs = data.data?.getStorageKeyPairs ?? [];
  const memberName = (accountId: string) => members.find((m) => m.accountId === accountId)?.accountName ?? accountId;
  const isCurrent = (k: ApiKey) => !!k.keyPrefix && apiKey.startsWith(k.keyPrefix);

  const createKey = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const name = keyName.trim();
    setNewKey(null);
    const made = await keyActions.run(
      'Creating an API key',
      () => api.mutate<{ createApiKey: { key: string; apiKey: { id: string } } }>(CREATE_API_KEY, { teamId: team.id, name: name || null }),
      () => 'API key created. Copy it now: it is not shown again.',
    );
    if (made) {
      setNewKey({ key: made.createApiKey.key, name });
      setKeyName('');
      void data.reload(true);
    }
  };
  const revokeKey = async (k: ApiKey) => {
    const current = isCurrent(k);
    const done = await keyActions.run(
      `Revoking ${k.name ?? k.keyPrefix ?? 'the key'}`,
      () => api.mutate(REVOKE_API_KEY, { teamId: team.id, apiKeyId: k.id }),
      () => `The key ${k.name ? `"${k.name}"` : (k.keyPrefix ?? '')} is revoked: it no longer works.`,
    );
    if (done && current) return signOut('You revoked the API key this browser was signed in with.');
    setNewKey(null);
    void data.reload(true);
  };
  const createPair = async () => {
    setNewPair(null);
    const made = await pairActions.run(
      'Creating a storage key pair',
      () => api.mutate<{ createStorageKeyPair: { secretAccessKey: string; keyPair: { accessKeyId: string } } }>(CREATE_STORAGE_KEY),
      () => 'Storage key pair created. Copy the secret now: it is not shown again.',
    );
    if (made) {
      setNewPair({
        accessKeyId: made.createStorageKeyPair.keyPair.accessKeyId,
        secretAccessKey: made.createStorageKeyPair.secretAccessKey,
      });
      void data.reload(true);
    }
  };
  const revokePair = async (p: StorageKeyPair) => {
    const done = await pairActions.run(
      `Revoking ${p.accessKeyId}`,
      () => api.mutate(REVOKE_STORAGE_KEY, { accessKeyId: p.accessKeyId }),
      () => `The key pair ${p.accessKeyId} is revoked.`,
    );
    if (done && storageKeys?.accessKeyId === p.accessKeyId) setStorageKeys(null);
    setNewPair(null);
    void data.reload(true);
  };

  return (
    <>
      <PageHeader title={team.name} subtitle="Members, API keys and storage key pairs." />
      {data.loading && !data.data ? <Loading label="Loading the team…" /> : null}
      {data.error ? <ErrorNotice retry={() => void data.reload()}>Could not load the team: {data.error}</ErrorNotice> : null}
      {data.data ? (
        <div className="stack">
          <Members members={members} me={data.data?.getCurrentMember?.accountId ?? null} onChanged={() => void data.reload(true)} />

          <section className="card" aria-labelledby="keys-title">
            <h2 id="keys-title">API keys</h2>
            <p className="muted">
              Keys for the GraphQL API and this app. A key acts with the rights of the member who made it. Owners revoke any key, members
              their own.
            </p>
            <form className="inline-form" onSubmit={(e) => void createKey(e)}>
              <label htmlFor="key-name">New key's name</label>
              <input
                id="key-name"
                value={keyName}
                onChange={(e) => setKeyName(e.currentTarget.value)}
                placeholder="e.g. CI deploys"
                autoComplete="off"
              />
              <button type="submit" className="button button-primary" disabled={keyActions.pending !== null}>
                Create API key
              </button>
            </form>
            <ActionNotice result={keyActions.result} pending={keyActions.pending} onDismiss={keyActions.clear} />
            {newKey ? (
              <ShownOnce label={`New API key${newKey.name ? ` "${newKey.name}"` : ''}`} value={newKey.key}>
                <p className="hint">
                  This is the only time the key is shown. Keep it somewhere safe; anyone with it acts as you in this team.
                </p>
              </ShownOnce>
            ) : null}
            {keys.length === 0 ? (
              <EmptyState title="No API keys you can see." />
            ) : (
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Name</th>
                    <th scope="col">Made by</th>
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
                      <td data-label="Made by">{memberName(k.createdBy)}</td>
                      <CredentialCells
                        createdAt={k.createdAt}
                        revokedAt={k.revokedAt}
                        busy={keyActions.pending !== null}
                        onRevoke={() => void revokeKey(k)}
                      />
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>

          <section className="card" aria-labelledby="pairs-title">
            <h2 id="pairs-title">Storage key pairs</h2>
            <p className="muted">
              Your account's access keys for the S3-compatible API (any S3 tool, and the <a href={href({ name: 'storage' })}>Storage</a>{' '}
              page of this app).
            </p>
            <button
              type="button"
              className="button button-primary"
              disabled={pairActions.pending !== null}
              onClick={() => void createPair()}
            >
              Create storage key pair
            </button>
            <ActionNotice result={pairActions.result} pending={pairActions.pending} onDismiss={pairActions.clear} />
            {newPair ? (
              <div className="shown-once-group">
                <ShownOnce label="Access key id" value={newPair.accessKeyId} />
                <ShownOnce label="Secret access key" value={newPair.secretAccessKey}>
                  <p className="hint">The secret is shown only now. Copy it to your S3 tool's configuration.</p>
                </ShownOnce>
                <button
                  type="button"
                  className="button"
                  onClick={() => setStorageKeys(newPair)}
                  disabled={storageKeys?.accessKeyId === newPair.accessKeyId}
                >
                  {storageKeys?.accessKeyId === newPair.accessKeyId
                    ? 'In use on the Storage page'
                    : 'Use it on the Storage page in this tab'}
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
                        busy={pairActions.pending !== null}
                        onRevoke={() => void revokePair(p)}
                      />
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </div>
      ) : null}
    </>
  );
}

/** The last three column heads of a credentials table: Created, Status and the actions. */
function CredentialColumns() {
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
function CredentialCells(props: { createdAt: string; revokedAt?: string | null; busy: boolean; onRevoke: () => void }) {
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
