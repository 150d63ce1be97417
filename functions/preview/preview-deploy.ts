/**
 * The preview function's work for one deploy: check the request against
 * the deploy's record, then run the preview step (take-preview.ts, the same
 * code the pipeline runs on one machine) on the deploy's DAG, its lines
 * going on at the end of the deploy's log.
 *
 * Only a DEPLOYED deploy whose root is the one asked for, and which has no
 * picture yet, is pictured: a repeated or stale request does nothing.
 */
import type { Services } from '../core/services.js';
import { parseCid } from '../core/ipfs/cid.js';
import { deployLogKey } from '../core/ports/log-store.js';
import type { PreviewInput, Screenshotter } from '../core/ports/screenshotter.js';
import { DeployLog } from '../core/logs/deploy-log.js';
import { takePreview, type PreviewServices } from './take-preview.js';
import { deployContent, type DeployContentServices } from './deploy-content.js';

const ID = /^[0-9A-Za-z-]{1,64}$/;

/** The request, when it is one; undefined for anything else. */
export function previewInputOf(event: unknown): PreviewInput | undefined {
  const e = event as Partial<Record<keyof PreviewInput, unknown>> | null;
  if (!e || typeof e !== 'object') return undefined;
  const { siteId, deployId, root } = e;
  if (typeof siteId !== 'string' || typeof deployId !== 'string' || typeof root !== 'string') return undefined;
  if (!ID.test(siteId) || !ID.test(deployId) || !parseCid(root)) return undefined;
  return { siteId, deployId, root };
}

export type PreviewOutcome = { outcome: 'taken'; previewImage: string } | { outcome: 'none' } | { outcome: 'skipped'; why: string };

/** What the preview function reads and writes for one deploy: its record and log, and what taking and serving the picture need. */
export type PreviewDeployServices = PreviewServices & DeployContentServices & Pick<Services, 'deployLogs'>;

export async function previewDeploy(
  services: PreviewDeployServices,
  screenshotter: Screenshotter,
  input: PreviewInput,
  signal: AbortSignal,
): Promise<PreviewOutcome> {
  const { siteId, deployId, root } = input;
  const deploy = await services.deploys.get(siteId, deployId);
  if (!deploy) return { outcome: 'skipped', why: 'no such deploy (deleted meanwhile)' };
  if (deploy.status !== 'DEPLOYED' || !deploy.ipfsHash) return { outcome: 'skipped', why: `the deploy is ${deploy.status}` };
  if (parseCid(deploy.ipfsHash)?.toV1().toString() !== parseCid(root)?.toV1().toString())
    return { outcome: 'skipped', why: 'the deploy has another root' };
  if (deploy.previewImage) return { outcome: 'skipped', why: 'the deploy has its picture already' };

  // The deploy ended before this was asked: its log is complete, and this goes on after it.
  const log = await DeployLog.continued(services.deployLogs, deployLogKey(siteId, deployId), services.logger);
  try {
    const previewImage = await takePreview(services, {
      siteId,
      deployId,
      publish: deployContent(services, siteId, deployId, deploy.ipfsHash),
      screenshotter,
      timeoutMs: services.config.preview.timeoutMs,
      signal,
      log: (line) => log.line(line),
    });
    return previewImage ? { outcome: 'taken', previewImage } : { outcome: 'none' };
  } finally {
    await log.close();
  }
}
