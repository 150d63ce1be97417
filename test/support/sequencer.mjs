/**
 * The order Jest hands test files to its workers: the slowest first, so
 * that with two workers the long suites start at once and the short ones
 * fill in around them (started last, a two-minute suite alone would make
 * the run two minutes longer). Jest orders by the durations it recorded on
 * this machine, but a fresh checkout (CI) has none and Jest falls back to
 * file size, which puts small slow suites (a soak, a git server) last.
 * So the seconds measured in a full run are kept here; a file not listed
 * takes Jest's own record, and one with neither counts as a second (Jest
 * would run it first; the suites not listed take under 5 s). Files that
 * failed last time still go first (Jest's rule).
 */
import { relative } from 'node:path';
import Sequencer from '@jest/test-sequencer';

/** Seconds per file in a full run; update them when a suite's time moves a lot. */
const SECONDS = {
  'test/api/git-hooks.test.ts': 78,
  'test/system/storage-soak.test.ts': 75,
  'test/components/clone.test.ts': 101,
  'test/api/deploys.test.ts': 78,
  'test/clients/s3-clients-cli.test.ts': 67,
  'test/web-app/web-app-browser.test.ts': 62,
  'test/api/sites.test.ts': 51,
  'test/api/commit-status.test.ts': 40,
  'test/api/bounded-work.test.ts': 39,
  'test/system/graphql-memory.test.ts': 37,
  'test/components/import-directory.test.ts': 37,
  'test/infra/cairn-stack.test.ts': 37,
  'test/components/ancestry.test.ts': 37,
  'test/api/notifications.test.ts': 36,
  'test/cli/account-sites.test.ts': 35,
  'test/api/imports.test.ts': 32,
  'test/api/graphql-api.test.ts': 32,
  'test/api/outbound-policy.test.ts': 28,
  'test/clients/s3-clients-rclone-s3cmd.test.ts': 28,
  'test/system/local-service.test.ts': 27,
  'test/cli/deploy.test.ts': 27,
  'test/sdk/stream-upload.test.ts': 26,
  'test/api/site-variables.test.ts': 25,
  'test/aws/deploy-pipeline.test.ts': 25,
  'test/components/admin-command.test.ts': 24,
  'test/cli/storage.test.ts': 24,
  'test/infra/nag.test.ts': 24,
  'test/components/bwrap-runner.test.ts': 24,
  'test/components/storage-fsck.test.ts': 22,
  'test/clients/s3-cors-browser.test.ts': 21,
  'test/api/s3-multipart.test.ts': 21,
  'test/api/graphql-playground.test.ts': 21,
  'test/aws/preview.test.ts': 21,
  'test/aws/git-hooks.test.ts': 21,
  'test/clients/s3-clients-python.test.ts': 20,
  'test/system/s3-streaming.test.ts': 20,
  'test/infra/monitoring.test.ts': 19,
  'test/components/chromium-screenshotter.test.ts': 19,
  'test/components/s3-lent-reads.test.ts': 16,
  'test/cli/deploy-dir.test.ts': 15,
  'test/system/s3-crash.test.ts': 15,
  'test/components/build-sandbox.test.ts': 15,
  'test/api/s3-acl.test.ts': 12,
  'test/unit/cdn-viewer-request.test.ts': 12,
  'test/infra/stack-options.test.ts': 11,
  'test/api/s3-long-keys.test.ts': 10,
  'test/api/gateway-trustless.test.ts': 10,
  'test/sdk/methods.test.ts': 10,
  'test/sdk/build.test.ts': 9,
  'test/api/sites-cdn-origin.test.ts': 9,
  'test/api/s3-conformance.test.ts': 9,
  'test/web-app/web-app-bundle.test.ts': 9,
  'test/components/dag-walk.test.ts': 8,
  'test/clients/s3-clients-fleek.test.ts': 8,
  'test/infra/first-account.test.ts': 8,
  'test/api/s3-operations.test.ts': 8,
  'test/api/s3-bad-input.test.ts': 8,
  'test/api/private-repos.test.ts': 7,
  'test/api/graphql-pagination.test.ts': 7,
  'test/aws/notifications.test.ts': 7,
  'test/components/build-limits-deploy.test.ts': 7,
  'test/clients/s3-clients-sdk.test.ts': 6,
  'test/api/s3-rest-api.test.ts': 6,
  'test/components/build-layer.test.ts': 6,
  'test/api/graphql-teams.test.ts': 5,
  'test/components/s3-pins.test.ts': 5,
  'test/api/gateway-graphql-worker.test.ts': 5,
  'test/components/gc-integrity.test.ts': 5,
};

export default class SlowestFirst extends (Sequencer.default ?? Sequencer) {
  time(test) {
    return SECONDS[relative(test.context.config.rootDir, test.path)] ?? super.time(test) ?? 1;
  }
}
