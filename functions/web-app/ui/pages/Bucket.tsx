/** One bucket's files, folder by folder: their CIDs and public URLs, uploads with progress, deletes. */
import { useRef, useState, type FormEvent } from 'react';
import { messageOf } from '../api.js';
import { gatewayLink, useApp } from '../app-context.js';
import {
  ActionNotice,
  ConfirmButton,
  CopyButton,
  EmptyState,
  ErrorNotice,
  ExternalLink,
  Loading,
  MoreButton,
  PageHeader,
  TimeAgo,
} from '../components.js';
import { formatAgo, formatBytes } from '../format.js';
import { useActions, useLoad, useMore, useTitle } from '../hooks.js';
import { href } from '../router.js';
import { encodeKey } from '../sigv4.js';
import type { Listing } from '../s3.js';
import { StorageKeysForm, useStorage } from './Storage.js';

interface Upload {
  id: number;
  name: string;
  size: number;
  sent: number;
  state: 'uploading' | 'done' | 'failed';
  message?: string;
  cid?: string;
}

export function Bucket({ bucket, prefix }: { bucket: string; prefix: string }) {
  useTitle(`${bucket}${prefix ? `/${prefix}` : ''}`);
  const storage = useStorage();
  const back = { href: href({ name: 'storage' }), label: 'Storage' };
  return (
    <>
      <PageHeader
        title={prefix ? prefix.replace(/\/$/, '').split('/').pop() : bucket}
        back={back}
        subtitle={prefix ? <Breadcrumbs bucket={bucket} prefix={prefix} /> : 'Bucket'}
      />
      {storage ? <Files bucket={bucket} prefix={prefix} /> : <StorageKeysForm />}
    </>
  );
}

function Breadcrumbs({ bucket, prefix }: { bucket: string; prefix: string }) {
  const parts = prefix.split('/').filter(Boolean);
  return (
    <nav aria-label="Folder" className="breadcrumbs">
      <a href={href({ name: 'bucket', bucket, prefix: '' })}>{bucket}</a>
      {parts.map((part, i) => (
        <span key={i}>
          {' / '}
          {i === parts.length - 1 ? (
            <span aria-current="page">{part}</span>
          ) : (
            <a href={href({ name: 'bucket', bucket, prefix: `${parts.slice(0, i + 1).join('/')}/` })}>{part}</a>
          )}
        </span>
      ))}
    </nav>
  );
}

function Files({ bucket, prefix }: { bucket: string; prefix: string }) {
  const storage = useStorage()!;
  const { config } = useApp();
  const folder = prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix;
  const listing = useLoad(() => storage.listObjects(bucket, folder), [storage, bucket, folder]);
  const actions = useActions();
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [publicRead, setPublicRead] = useState(true);
  const more = useMore(async () => {
    const token = listing.data?.nextToken;
    if (!token) return;
    const next = await storage.listObjects(bucket, folder, token);
    listing.setData((prev): Listing => ({
      objects: [...(prev?.objects ?? []), ...next.objects],
      prefixes: [...(prev?.prefixes ?? []), ...next.prefixes],
      nextToken: next.nextToken,
    }));
  });
  const fileInput = useRef<HTMLInputElement>(null);
  const nextUpload = useRef(1);

  const publicUrl = (key: string) => `${config.publicFiles.scheme}//${bucket}.${config.publicFiles.domain}/${encodeKey(key)}`;

  const upload = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const files = Array.from(fileInput.current?.files ?? []);
    if (!files.length) return;
    if (fileInput.current) fileInput.current.value = '';
    const started = files.map((f) => ({ id: nextUpload.current++, name: f.name, size: f.size, sent: 0, state: 'uploading' as const }));
    setUploads((prev) => [...started, ...prev.filter((u) => u.state === 'uploading')]);
    const update = (id: number, change: Partial<Upload>) => setUploads((prev) => prev.map((u) => (u.id === id ? { ...u, ...change } : u)));
    // One at a time: the progress bars mean something and the endpoint is not flooded.
    for (const [i, file] of files.entries()) {
      const id = started[i]!.id;
      try {
        const result = await storage.upload(bucket, `${folder}${file.name}`, file, {
          publicRead,
          onProgress: (sent) => update(id, { sent }),
        });
        update(id, { state: 'done', sent: file.size, cid: result.cid });
      } catch (err) {
        update(id, { state: 'failed', message: messageOf(err) });
      }
    }
    void listing.reload(true);
  };

  const remove = async (key: string) => {
    await actions.run(
      `Deleting ${key}`,
      () => storage.deleteObject(bucket, key),
      () => `${key} deleted.`,
    );
    void listing.reload(true);
  };
  const togglePublic = async (key: string, makePublic: boolean) => {
    await actions.run(
      makePublic ? `Making ${key} public` : `Making ${key} private`,
      () => storage.setPublic(bucket, key, makePublic),
      () => (makePublic ? `${key} is public: anyone with its public URL can read it.` : `${key} is private: its public URL answers 403.`),
    );
  };

  const data = listing.data;
  const name = (key: string) => key.slice(folder.length);
  return (
    <div className="stack">
      <section className="card" aria-labelledby="upload-title">
        <h2 id="upload-title">Upload</h2>
        <form className="upload-form" onSubmit={(e) => void upload(e)}>
          <div className="field">
            <label htmlFor="upload-files">Files to upload{folder ? ` (into ${folder})` : ''}</label>
            <input id="upload-files" ref={fileInput} type="file" multiple />
          </div>
          <label className="checkbox">
            <input type="checkbox" checked={publicRead} onChange={(e) => setPublicRead(e.currentTarget.checked)} />
            Public: anyone can read them at their public URL
          </label>
          <button type="submit" className="button button-primary">
            Upload
          </button>
        </form>
        <p className="hint">
          Whatever the setting, a file's content can be fetched by anyone who knows its CID from the gateway: do not store secrets
          unencrypted.
        </p>
        {uploads.length ? (
          <ul className="uploads" aria-label="Uploads">
            {uploads.map((u) => (
              <li key={u.id} className={`upload upload-${u.state}`} data-upload={u.name} data-state={u.state}>
                <div className="upload-line">
                  <span className="upload-name">{u.name}</span>
                  <span className="muted">
                    {u.state === 'uploading'
                      ? `${formatBytes(u.sent)} of ${formatBytes(u.size)}`
                      : u.state === 'done'
                        ? `Uploaded, ${formatBytes(u.size)}`
                        : 'Failed'}
                  </span>
                </div>
                <progress max={u.size || 1} value={u.state === 'done' ? u.size || 1 : u.sent} aria-label={`Upload of ${u.name}`} />
                {u.message ? (
                  <p className="notice notice-error" role="alert">
                    {u.message}
                  </p>
                ) : null}
              </li>
            ))}
          </ul>
        ) : null}
      </section>

      <section className="card" aria-labelledby="files-title">
        <div className="section-header">
          <h2 id="files-title">Files</h2>
          <button type="button" className="button button-small" onClick={() => void listing.reload(true)}>
            Refresh
          </button>
        </div>
        <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
        {listing.loading && !data ? <Loading label="Listing files…" /> : null}
        {listing.error ? <ErrorNotice retry={() => void listing.reload()}>Could not list the files: {listing.error}</ErrorNotice> : null}
        {data && data.objects.length === 0 && data.prefixes.length === 0 ? (
          <EmptyState title={folder ? 'This folder is empty.' : 'This bucket is empty.'}>Upload files above.</EmptyState>
        ) : null}
        {data && (data.objects.length || data.prefixes.length) ? (
          <ul className="file-list">
            {data.prefixes.map((p) => (
              <li key={p} className="file-row folder">
                <a href={href({ name: 'bucket', bucket, prefix: p })} className="file-name">
                  <span aria-hidden="true">📁 </span>
                  {name(p)}
                </a>
              </li>
            ))}
            {data.objects.map((o) => (
              <li key={o.key} className="file-row" data-key={o.key}>
                <div className="file-head">
                  <span className="file-name">{name(o.key)}</span>
                  <span className="muted">
                    {formatBytes(o.size)} · <TimeAgo iso={o.lastModified} formatted={formatAgo(o.lastModified)} />
                  </span>
                </div>
                {o.cid ? (
                  <div className="file-cid copy-row">
                    <span className="muted">CID</span>
                    <code className="mono clip" title={o.cid}>
                      {o.cid}
                    </code>
                    <CopyButton text={o.cid} label="Copy CID" />
                  </div>
                ) : null}
                <div className="file-links">
                  <ExternalLink href={publicUrl(o.key)} className="public-url">
                    Public URL
                  </ExternalLink>
                  {o.cid ? (
                    <ExternalLink href={gatewayLink(config.gatewayUrl, o.cid).replace(/\/$/, '')}>On the gateway</ExternalLink>
                  ) : null}
                  <span className="file-actions">
                    <button
                      type="button"
                      className="button button-small"
                      disabled={actions.pending !== null}
                      onClick={() => void togglePublic(o.key, true)}
                    >
                      Make public
                    </button>
                    <button
                      type="button"
                      className="button button-small"
                      disabled={actions.pending !== null}
                      onClick={() => void togglePublic(o.key, false)}
                    >
                      Make private
                    </button>
                    <ConfirmButton
                      label="Delete"
                      confirmLabel="Delete file"
                      disabled={actions.pending !== null}
                      onConfirm={() => void remove(o.key)}
                    />
                  </span>
                </div>
              </li>
            ))}
          </ul>
        ) : null}
        {data?.nextToken ? <MoreButton more={more} label="More files" /> : null}
      </section>
    </div>
  );
}
