/**
 * The step after publish: a deploy that ended DEPLOYED is made known. The
 * CDN forgets the site's old answers when the deploy went live; the log
 * says whether it did; notification deliveries are recorded (SUCCEEDED,
 * then PUBLISHED); the preview image is taken where a screenshotter is at
 * hand (the publish directory still on disk, or the deploy's DAG); the log
 * is closed; and the commit status is set last. In AWS the worker has no
 * browser: the preview is handed to the preview function after the run
 * (askForPreview).
 *
 * None of it can undo the deploy, and none of it fails it: the purge, the
 * notifications, the commit status and the preview each log what went
 * wrong (the service log, or a line of the deploy's) and the deploy stays
 * DEPLOYED. Only a failure to write the deploy's own log is the caller's.
 */
import type { Services, SiteEdgeServices } from '../../core/services.js';
import type { Deploy } from '../../core/data/deploys.js';
import { deployLogKey } from '../../core/ports/log-store.js';
import type { PreviewTaker, Screenshotter } from '../../core/ports/screenshotter.js';
import { purgeSite } from '../../core/hosting/deploys.js';
import { notifyDeploy, recordCommitStatus, type NotifyServices } from '../../core/hosting/notifications.js';
import { DeployLog } from '../../core/logs/deploy-log.js';
import { takePreview, type PreviewServices } from '../../preview/take-preview.js';
import { deployContent, type DeployContentServices } from '../../preview/deploy-content.js';

export interface Announcement {
  /** The deploy as it ended DEPLOYED, and whether that put it live (DeployStore.finish). */
  deploy: Deploy & { publishedNow?: boolean };
  /** Whether the publish step decided to publish it (done.publishedNow says whether it went live). */
  published: boolean;
  /** Why it was not published, when the publish step said. */
  notPublished?: string;
  log: DeployLog;
  /** The picture: taken when a screenshotter is given, of the built directory when it is still on disk. */
  preview?: { screenshotter: Screenshotter; publishDir?: string; timeoutMs: number; signal: AbortSignal };
}

/** What announcing reads and writes: the CDN purged, notifications and the commit status recorded, the picture taken. */
export type AnnounceServices = NotifyServices & SiteEdgeServices & PreviewServices & DeployContentServices;

/** Announces the deploy (see above); returns it with its preview image when one was taken. Closes the log. */
export async function announce(services: AnnounceServices, announcement: Announcement): Promise<Deploy> {
  const { deploy: done, log } = announcement;
  if (announcement.published) {
    // The site's address serves the new deploy from the next request on.
    if (done.publishedNow) await purgeSite(services, done.siteId);
    log.line(
      done.publishedNow ? 'Published: the site now serves this deploy' : 'Not published: a newer deploy of the site is already published',
    );
  } else {
    log.line(
      done.preview
        ? 'A preview: not published'
        : (announcement.notPublished ?? 'Auto-publishing is off: not published (publishDeploy publishes it)'),
    );
  }
  // After DEPLOYED, and before the workspace goes: the picture is of the
  // built directory. The log so far is written first, for readers of a
  // DEPLOYED deploy (who look for its publication line) while the
  // notifications are recorded and the picture is taken.
  await log.flush();
  // The commit status waits for the log's last write: its sender may add a line to the ended deploy's log.
  await notifyDeploy(services, 'SUCCEEDED', done, { commitStatus: false });
  if (done.publishedNow) await notifyDeploy(services, 'PUBLISHED', done, { commitStatus: false });
  let previewImage: string | undefined;
  const preview = announcement.preview;
  // Content deployed by CID has no directory on disk: its DAG is served for the picture, with the site's own rules.
  const content =
    preview && (preview.publishDir ?? (done.ipfsHash ? deployContent(services, done.siteId, done.id, done.ipfsHash) : undefined));
  if (preview && content) {
    previewImage = await takePreview(services, {
      siteId: done.siteId,
      deployId: done.id,
      publish: content,
      screenshotter: preview.screenshotter,
      signal: preview.signal,
      log: (l: string) => log.line(l),
      timeoutMs: preview.timeoutMs,
    });
  }
  await log.close();
  await recordCommitStatus(services, done.publishedNow ? 'PUBLISHED' : 'SUCCEEDED', done);
  return previewImage ? { ...done, previewImage } : done;
}

/**
 * Asks for the picture of a run's deploy if it ended DEPLOYED (a run handed
 * to CodeBuild has not ended yet). Never throws: a request that could not be
 * made leaves previewImage null, says so at the end of the deploy's log, and
 * the deploy is DEPLOYED all the same.
 */
export async function askForPreview(
  services: Pick<Services, 'deployLogs' | 'logger'>,
  previews: PreviewTaker | undefined,
  deploy: Deploy | undefined,
): Promise<void> {
  if (!previews || deploy?.status !== 'DEPLOYED' || !deploy.ipfsHash) return;
  const of = { siteId: deploy.siteId, deployId: deploy.id };
  try {
    await previews.deployed({ ...of, root: deploy.ipfsHash });
  } catch (err) {
    services.logger.warn('could not ask for a preview image', { ...of, previews: previews.name, err });
    const log = await DeployLog.continued(services.deployLogs, deployLogKey(deploy.siteId, deploy.id), services.logger);
    log.line('No preview image: it could not be asked for (the service log has the details)');
    await log.close();
  }
}
