/** One deploy: its status, times, commit, CID with gateway links, preview image, and its log following live. */
import { useLayoutEffect, useRef, useState } from 'react';
import { gatewayLink, siteUrl, useApp } from '../app-context.js';
import {
  ActionNotice,
  CopyButton,
  PHASE_TEXT,
  EmptyState,
  ErrorNotice,
  ExternalLink,
  Loading,
  Mono,
  PageHeader,
  StatusBadge,
} from '../components.js';
import { DeployActions } from '../deploy-actions.js';
import { formatDuration, formatTime, shortId } from '../format.js';
import { useActions, useLoad, usePolling, useTitle } from '../hooks.js';
import { DEPLOY, SITE, type Deploy as DeployData, type Site } from '../queries.js';
import { href } from '../router.js';

/** How long after a deploy ends the page keeps asking for its preview image (taken after the deploy). */
const PREVIEW_WAIT_MS = 90_000;

export function Deploy({ siteId, deployId }: { siteId: string; deployId: string }) {
  const { api, config } = useApp();
  const site = useLoad(async () => (await api.query<{ getSiteById: Site | null }>(SITE, { siteId })).getSiteById, [siteId]);
  const deploy = useLoad(
    async () => (await api.query<{ getDeployById: DeployData | null }>(DEPLOY, { siteId, deployId })).getDeployById,
    [siteId, deployId],
  );
  const actions = useActions();
  useTitle(`Deploy ${shortId(deployId)}`);

  const d = deploy.data;
  // A deploy that ended a short while ago may still get its picture.
  const waitingForPreview =
    d?.status === 'DEPLOYED' && !d.previewImage && !!d.completedAt && Date.now() - Date.parse(d.completedAt) < PREVIEW_WAIT_MS;
  usePolling(
    async () => {
      await deploy.reload(true);
    },
    d?.status === 'IN_PROGRESS' ? 1000 : waitingForPreview ? 3000 : null,
  );

  if (deploy.loading && !d) return <Loading label="Loading the deploy…" />;
  if (deploy.error && !d) return <ErrorNotice retry={() => void deploy.reload()}>Could not load the deploy: {deploy.error}</ErrorNotice>;
  const s = site.data;
  const back = { href: href({ name: 'site', siteId }), label: s?.name ?? 'Site' };
  if (!d) {
    return (
      <>
        <PageHeader title="Deploy not found" back={back} />
        <EmptyState title="There is no such deploy of this site in your team." />
      </>
    );
  }
  const onChanged = () => {
    void deploy.reload(true);
    void site.reload(true);
  };
  const repo = d.repository;
  return (
    <>
      <PageHeader
        title={
          <>
            Deploy <span className="mono">{shortId(d.id)}</span>
          </>
        }
        back={back}
        subtitle={
          <span className="deploy-subtitle">
            <StatusBadge status={d.status} phase={d.phase} />
            {d.published ? <span className="tag tag-published">Published</span> : null}
            {d.preview ? <span className="tag">Preview</span> : null}
          </span>
        }
        actions={
          s ? (
            <DeployActions
              api={api}
              siteId={siteId}
              deploy={d}
              publishedId={s.publishedDeploy?.id ?? null}
              actions={actions}
              onChanged={onChanged}
              openNew
            />
          ) : null
        }
      />
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {deploy.error ? (
        <p className="notice notice-error" role="status">
          Could not refresh the deploy ({deploy.error}); trying again.
        </p>
      ) : null}
      <div className="deploy-layout">
        <section className="card" aria-labelledby="details-title">
          <h2 id="details-title">Details</h2>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <span data-testid="deploy-status">{d.status}</span>
              {d.status === 'IN_PROGRESS' && d.phase ? <span className="muted"> · {PHASE_TEXT[d.phase].toLowerCase()}</span> : null}
            </dd>
            <dt>Started</dt>
            <dd>{formatTime(d.startedAt)}</dd>
            <dt>Completed</dt>
            <dd>{d.status === 'IN_PROGRESS' ? <span className="muted">running…</span> : formatTime(d.completedAt)}</dd>
            <dt>Duration</dt>
            <dd>{formatDuration(d.totalTime)}</dd>
            {repo.commit || repo.branch ? (
              <>
                <dt>Commit</dt>
                <dd>
                  {repo.commit ? <Mono>{repo.commit}</Mono> : <span className="muted">the branch's latest</span>}
                  {repo.message ? <div className="commit-message">{repo.message}</div> : null}
                  {repo.branch ? (
                    <div className="muted">
                      {[repo.owner, repo.name].filter(Boolean).join('/')} · {repo.branch}
                    </div>
                  ) : null}
                </dd>
              </>
            ) : null}
            {d.pullRequest ? (
              <>
                <dt>Pull request</dt>
                <dd>
                  {d.pullRequest.url ? (
                    <ExternalLink href={d.pullRequest.url}>
                      #{d.pullRequest.number} {d.pullRequest.title ?? ''}
                    </ExternalLink>
                  ) : (
                    `#${d.pullRequest.number}`
                  )}
                </dd>
              </>
            ) : null}
            <dt>IPFS hash</dt>
            <dd>
              {d.ipfsHash ? (
                <div className="cid">
                  <div className="copy-row">
                    <Mono>{d.ipfsHash}</Mono>
                    <CopyButton text={d.ipfsHash} label="Copy CID" />
                  </div>
                  <div className="links">
                    <ExternalLink href={gatewayLink(config.gatewayUrl, d.ipfsHash)}>Open on the gateway</ExternalLink>
                    {config.publicGatewayUrl !== config.gatewayUrl ? (
                      <ExternalLink href={gatewayLink(config.publicGatewayUrl, d.ipfsHash)}>Public gateway</ExternalLink>
                    ) : null}
                    {s && d.status === 'DEPLOYED' ? (
                      <ExternalLink href={siteUrl(config, s.slug, d.id)}>This deploy's address</ExternalLink>
                    ) : null}
                  </div>
                </div>
              ) : (
                <span className="muted">{d.status === 'IN_PROGRESS' ? 'when the deploy is done' : 'none'}</span>
              )}
            </dd>
          </dl>
        </section>
        <section className="card" aria-labelledby="preview-title">
          <h2 id="preview-title">Preview</h2>
          {d.previewImage ? (
            <a href={d.previewImage} target="_blank" rel="noopener noreferrer">
              <img className="preview" src={d.previewImage} alt={`The deploy's index page, as rendered after the deploy`} />
              <span className="visually-hidden"> (opens in a new tab)</span>
            </a>
          ) : (
            <div className="preview preview-placeholder">
              {d.status === 'IN_PROGRESS' ? 'After the deploy' : waitingForPreview ? 'Taking a picture…' : 'No preview image'}
            </div>
          )}
        </section>
      </div>
      <LogPanel log={d.log ?? ''} live={d.status === 'IN_PROGRESS'} />
    </>
  );
}

/** The log, scrolled to its end as it grows while following; scrolling up stops following, back to the end resumes. */
function LogPanel({ log, live }: { log: string; live: boolean }) {
  const box = useRef<HTMLPreElement>(null);
  const [follow, setFollow] = useState(true);
  useLayoutEffect(() => {
    const el = box.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [log, follow]);
  const onScroll = () => {
    const el = box.current;
    if (!el) return;
    const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    if (atEnd !== follow) setFollow(atEnd);
  };
  const lines = log ? log.replace(/\n$/, '').split('\n').length : 0;
  return (
    <section className="card log-card" aria-labelledby="log-title">
      <div className="section-header">
        <h2 id="log-title">
          Log{' '}
          {live ? (
            <span className="live" aria-label="live">
              ● live
            </span>
          ) : null}
        </h2>
        <div className="toolbar">
          <span className="muted">{lines} lines</span>
          <label className="checkbox">
            <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} />
            Follow
          </label>
        </div>
      </div>
      <pre
        ref={box}
        className="log"
        tabIndex={0}
        role="log"
        aria-live="off"
        aria-label="Deploy log"
        onScroll={onScroll}
        data-testid="deploy-log"
      >
        {log || (live ? 'Waiting for the first lines…' : 'No log.')}
      </pre>
    </section>
  );
}
