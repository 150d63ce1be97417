/** The buttons that act on one deploy (cancel, retry, publish or roll back), shared by the site and deploy pages. */
import type { Api } from './api.js';
import type { Actions } from './hooks.js';
import { CANCEL_DEPLOY, PUBLISH_DEPLOY, RETRY_DEPLOY, type DeploySummary } from './queries.js';
import { shortId } from './format.js';
import { navigate } from './router.js';

export function DeployActions({
  api,
  siteId,
  deploy,
  publishedId,
  actions,
  onChanged,
  openNew = false,
}: {
  api: Api;
  siteId: string;
  deploy: DeploySummary;
  /** The site's published deploy, to tell a rollback from a first publication. */
  publishedId: string | null;
  actions: Actions;
  onChanged(): void;
  /** Open the new deploy's page after a retry (the deploy page does). */
  openNew?: boolean;
}) {
  const id = shortId(deploy.id);
  const busy = actions.pending !== null;
  const cancel = async () => {
    await actions.run(
      `Cancelling deploy ${id}`,
      () => api.mutate<{ cancelDeploy: DeploySummary }>(CANCEL_DEPLOY, { siteId, deployId: deploy.id }),
      (r) =>
        r.cancelDeploy.status === 'CANCELLED'
          ? `Deploy ${id} is cancelled.`
          : `Deploy ${id} is being cancelled: it stops as soon as its build is stopped.`,
    );
    onChanged();
  };
  const retry = async () => {
    const made = await actions.run(
      `Retrying deploy ${id}`,
      () => api.mutate<{ retryDeploy: DeploySummary }>(RETRY_DEPLOY, { siteId, deployId: deploy.id }),
      (r) => `Deploy ${shortId(r.retryDeploy.id)} started: it builds the same commit again.`,
    );
    onChanged();
    if (made && openNew) navigate({ name: 'deploy', siteId, deployId: made.retryDeploy.id });
  };
  // Publishing an older deploy than the published one is a rollback.
  const rollback = publishedId !== null && deploy.id < publishedId;
  const publish = async () => {
    await actions.run(
      rollback ? `Rolling back to deploy ${id}` : `Publishing deploy ${id}`,
      () => api.mutate(PUBLISH_DEPLOY, { siteId, deployId: deploy.id }),
      () => (rollback ? `Rolled back: deploy ${id} is published.` : `Deploy ${id} is published.`),
    );
    onChanged();
  };
  return (
    <div className="deploy-actions">
      {deploy.status === 'IN_PROGRESS' ? (
        <button
          type="button"
          className="button button-small"
          disabled={busy}
          onClick={() => void cancel()}
          aria-label={`Cancel deploy ${id}`}
        >
          Cancel
        </button>
      ) : (
        <button
          type="button"
          className="button button-small"
          disabled={busy}
          onClick={() => void retry()}
          aria-label={`Retry deploy ${id}`}
        >
          Retry
        </button>
      )}
      {deploy.status === 'DEPLOYED' && !deploy.published && !deploy.preview ? (
        <button
          type="button"
          className="button button-small button-primary-outline"
          disabled={busy}
          onClick={() => void publish()}
          aria-label={`${rollback ? 'Roll back to' : 'Publish'} deploy ${id}`}
        >
          {rollback ? 'Roll back to this' : 'Publish'}
        </button>
      ) : null}
    </div>
  );
}
