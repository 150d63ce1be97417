/**
 * Storage: the account's buckets, through the S3 API itself, signed in this
 * tab with a storage key pair the user gives (or makes here). The pair is
 * kept in this tab's session storage like the API key.
 */
import { useMemo, useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton, EmptyState, ErrorNotice, Loading, PageHeader, ShownOnce, TimeAgo } from '../components.js';
import { formatAgo } from '../format.js';
import { useActions, useLoad, useTitle } from '../hooks.js';
import { CREATE_STORAGE_KEY } from '../queries.js';
import { href } from '../router.js';
import { StorageClient } from '../s3.js';

/** The S3 client of this tab's key pair, or null without one. */
export function useStorage(): StorageClient | null {
  const { config, storageKeys } = useApp();
  return useMemo(
    () => (storageKeys ? new StorageClient(config.storageEndpoint, config.region, storageKeys, config.maxPutBytes) : null),
    [config, storageKeys],
  );
}

export function Storage() {
  useTitle('Storage');
  const storage = useStorage();
  return (
    <>
      <PageHeader title="Storage" subtitle="Buckets and files, stored on IPFS behind the S3-compatible API." />
      {storage ? <Buckets storage={storage} /> : <StorageKeysForm />}
    </>
  );
}

/** Asks for a storage key pair, or makes one. */
export function StorageKeysForm() {
  const { api, config, setStorageKeys } = useApp();
  const [accessKeyId, setAccessKeyId] = useState('');
  const [secret, setSecret] = useState('');
  const [made, setMade] = useState<{ accessKeyId: string; secretAccessKey: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const actions = useActions();

  const use = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!accessKeyId.trim() || !secret.trim()) return setError('Give both the access key id and the secret access key.');
    setStorageKeys({ accessKeyId: accessKeyId.trim(), secretAccessKey: secret.trim() });
  };
  const create = async () => {
    const result = await actions.run(
      'Creating a storage key pair',
      () => api.mutate<{ createStorageKeyPair: { secretAccessKey: string; keyPair: { accessKeyId: string } } }>(CREATE_STORAGE_KEY),
      () => 'A new storage key pair was made for your account.',
    );
    if (result)
      setMade({
        accessKeyId: result.createStorageKeyPair.keyPair.accessKeyId,
        secretAccessKey: result.createStorageKeyPair.secretAccessKey,
      });
  };

  return (
    <section className="card narrow" aria-labelledby="keys-needed">
      <h2 id="keys-needed">Storage key pair</h2>
      <p>
        Files are read and written through the S3-compatible API at <code>{config.storageEndpoint}</code>, with a storage key pair of your
        account, as any S3 tool does. Its secret stays in this tab (session storage) and signs the requests here; it is never sent.
      </p>
      {made ? (
        <div className="shown-once-group">
          <ShownOnce label="Access key id" value={made.accessKeyId} />
          <ShownOnce label="Secret access key" value={made.secretAccessKey}>
            <p className="hint">The secret is shown only now. Copy it if you want to use the pair with other tools too.</p>
          </ShownOnce>
          <button type="button" className="button button-primary" onClick={() => setStorageKeys(made)}>
            Continue to storage
          </button>
        </div>
      ) : (
        <>
          <form className="form" onSubmit={use} noValidate>
            <div className="field">
              <label htmlFor="access-key-id">Access key id</label>
              <input
                id="access-key-id"
                className="mono"
                value={accessKeyId}
                onChange={(e) => setAccessKeyId(e.currentTarget.value)}
                autoComplete="off"
                spellCheck={false}
              />
            </div>
            <div className="field">
              <label htmlFor="secret-access-key">Secret access key</label>
              <input
                id="secret-access-key"
                className="mono"
                type="password"
                value={secret}
                onChange={(e) => setSecret(e.currentTarget.value)}
                autoComplete="off"
                spellCheck={false}
              />
            </div>
            {error ? (
              <p className="notice notice-error" role="alert">
                {error}
              </p>
            ) : null}
            <div className="form-actions">
              <button type="submit" className="button button-primary">
                Use this key pair
              </button>
            </div>
          </form>
          <div className="or">
            <span>or</span>
          </div>
          <p>Make a new key pair for this browser (you can revoke it in Settings):</p>
          <button type="button" className="button" disabled={actions.pending !== null} onClick={() => void create()}>
            Create a key pair for this browser
          </button>
          <ActionNotice result={actions.result} pending={actions.pending} />
        </>
      )}
    </section>
  );
}

function Buckets({ storage }: { storage: StorageClient }) {
  const { storageKeys, setStorageKeys } = useApp();
  const buckets = useLoad(() => storage.listBuckets(), [storage]);
  const actions = useActions();
  const [name, setName] = useState('');
  const create = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const n = name.trim();
    if (!n) return;
    const ok = await actions.run(
      `Creating bucket ${n}`,
      () => storage.createBucket(n).then(() => true),
      () => `Bucket ${n} created.`,
    );
    if (ok) {
      setName('');
      void buckets.reload(true);
    }
  };
  const remove = async (bucket: string) => {
    await actions.run(
      `Deleting bucket ${bucket}`,
      () => storage.deleteBucket(bucket),
      () => `Bucket ${bucket} deleted.`,
    );
    void buckets.reload(true);
  };
  const list = buckets.data ?? [];
  return (
    <div className="stack">
      <section className="card" aria-labelledby="buckets-title">
        <div className="section-header">
          <h2 id="buckets-title">Buckets</h2>
          <form className="inline-form" onSubmit={(e) => void create(e)}>
            <label htmlFor="bucket-name" className="visually-hidden">
              New bucket's name
            </label>
            <input
              id="bucket-name"
              className="mono"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              placeholder="new-bucket-name"
              autoComplete="off"
              spellCheck={false}
            />
            <button type="submit" className="button button-primary" disabled={actions.pending !== null}>
              Create bucket
            </button>
          </form>
        </div>
        <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
        {buckets.loading && !buckets.data ? <Loading label="Loading buckets…" /> : null}
        {buckets.error ? <ErrorNotice retry={() => void buckets.reload()}>Could not list the buckets: {buckets.error}</ErrorNotice> : null}
        {buckets.data && list.length === 0 ? (
          <EmptyState title="No buckets yet">Create one above; names are 3 to 63 lowercase letters, digits, dots and hyphens.</EmptyState>
        ) : null}
        {list.length ? (
          <ul className="bucket-list">
            {list.map((b) => (
              <li key={b.name} className="bucket-row" data-bucket={b.name}>
                <a className="bucket-name" href={href({ name: 'bucket', bucket: b.name, prefix: '' })}>
                  {b.name}
                </a>
                <span className="muted">
                  created <TimeAgo iso={b.createdAt} formatted={formatAgo(b.createdAt)} />
                </span>
                <ConfirmButton
                  label="Delete"
                  confirmLabel="Delete bucket"
                  disabled={actions.pending !== null}
                  onConfirm={() => void remove(b.name)}
                />
              </li>
            ))}
          </ul>
        ) : null}
      </section>
      <section className="card" aria-labelledby="pair-title">
        <h2 id="pair-title">Key pair in use</h2>
        <p>
          Signing as <code>{storageKeys?.accessKeyId}</code> in this tab.{' '}
          <button type="button" className="link-button" onClick={() => setStorageKeys(null)}>
            Use another key pair
          </button>
        </p>
      </section>
    </div>
  );
}
