/**
 * Lambda door of the preview function: `{ siteId, deployId, root }`, sent
 * asynchronously by the deploy worker once a deploy ended DEPLOYED
 * (lambda-preview-taker.ts).
 *
 * Why a Lambda of its own, asked without waiting, rather than a
 * Screenshotter inside the worker: Chromium needs x86_64 (@sparticuz/chromium
 * has no ARM build), memory and a 64 MB package the worker has no use for,
 * and a deploy must not wait on its picture. What runs here is still the
 * pipeline's one preview step (take-preview.ts: serve, shoot, store, set
 * previewImage); only its content differs, the deploy's DAG from the
 * blockstore (deploy-content.ts) instead of a publish directory on disk.
 *
 * The browser is @sparticuz/chromium's (lambda-chromium.ts), or the one
 * CAIRN_CHROMIUM_PATH names. It is closed at the end of each invocation: a
 * frozen instance must not keep a browser whose connection may not survive
 * the thaw; the unpacked binary stays in /tmp for the next one.
 */
import { sourceMappedStacks } from '../aws/source-mapped-stacks.js';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { loadConfig } from '../core/config.js';
import { createObservability, observe } from '../core/observability.js';
import { createServices, type Services } from '../core/services.js';
import { onceUntilFailure } from '../core/once-until-failure.js';
import { awsAdapters } from '../aws/adapters.js';
import { ChromiumScreenshotter, installedChromium, type ChromiumBuild } from './chromium.js';
import { sparticuzChromium } from '../aws/lambda-chromium.js';
import { previewDeploy, previewInputOf, type PreviewOutcome } from './preview-deploy.js';

// Stack traces in the sources' lines, the map read only when one is printed (lib/functions.ts says why).
sourceMappedStacks();

/** Time kept back from the invocation's own limit to give the shot up, close the browser and write the log. */
const WIND_DOWN_MS = 8000;

const observability = createObservability('preview');

/** The container's services and browser, built on its first event; built again after a failure (see onceUntilFailure). */
const ready = onceUntilFailure(async (): Promise<{ services: Services; build: ChromiumBuild }> => {
  const config = loadConfig();
  const logger = observability.logger;
  const services = await createServices(config, await awsAdapters(config, logger), { logger });
  const { preview } = services.config;
  return {
    services,
    build:
      preview.bundledChromium === false || services.config.runtime === 'local'
        ? installedChromium(preview.chromiumPath, { sandbox: services.config.runtime === 'local' })
        : await sparticuzChromium(),
  };
});

export const handler = observe(
  middy(async (event: unknown, context?: Partial<Pick<Context, 'getRemainingTimeInMillis'>>): Promise<PreviewOutcome> => {
    const { services, build } = await ready();
    const input = previewInputOf(event);
    if (!input) {
      services.logger.warn('a preview request that names no deploy; dropped');
      return { outcome: 'skipped', why: 'not a preview request' };
    }
    const remaining = context?.getRemainingTimeInMillis?.();
    const signal = remaining === undefined ? new AbortController().signal : AbortSignal.timeout(Math.max(1000, remaining - WIND_DOWN_MS));
    const screenshotter = new ChromiumScreenshotter(build);
    try {
      const outcome = await previewDeploy(services, screenshotter, input, signal);
      services.logger.info('preview request done', { ...input, ...outcome });
      return outcome;
    } finally {
      await screenshotter.close();
    }
  }),
  observability,
);
