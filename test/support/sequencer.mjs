/**
 * The order Jest hands test files to its workers: the slowest first, so
 * that with two workers the long suites start at once and the short ones
 * fill in around them (started last, a two-minute suite alone would make
 * the run two minutes longer). Jest orders by the durations it recorded on
 * this machine, but a fresh checkout (CI) has none and Jest falls back to
 * file size, which puts small slow suites (a soak, a git server) last.
 * So the seconds measured in a full run are kept here; a file not listed
 * takes Jest's own record (in milliseconds, as these are
 * compared in), and one with neither counts as a second (Jest
 * would run it first; the suites not listed take under 5 s). Files that
 * failed last time still go first (Jest's rule).
 */
import { relative } from 'node:path';
import Sequencer from '@jest/test-sequencer';

/** Seconds per file, two workers (the everyday run's, and the long suites' in a full run); update them when a suite's time moves a lot. */
const SECONDS = {
  'test/clients/s3-clients-cli.test.ts': 126,
  'test/web-app/web-app-browser.test.ts': 92,
  'test/components/clone.test.ts': 87,
  'test/system/storage-soak.test.ts': 79,
  'test/api/git-hooks.test.ts': 77,
  'test/components/import-directory.test.ts': 76,
  'test/aws/deploy-pipeline.test.ts': 65,
  'test/sdk/stream-upload.test.ts': 63,
  'test/infra/stack-bundles.test.ts': 60,
  'test/web-app/web-app-accounts-browser.test.ts': 60,
  'test/api/deploys.test.ts': 58,
  'test/cli/account-sites.test.ts': 27,
  'test/api/commit-status.test.ts': 50,
  'test/web-app/device-login-browser.test.ts': 50,
  'test/components/bwrap-runner.test.ts': 48,
  'test/api/bounded-work.test.ts': 46,
  'test/clients/s3-clients-python.test.ts': 41,
  'test/aws/git-hooks.test.ts': 41,
  'test/components/s3-lent-reads.test.ts': 40,
  'test/components/listing-cost.test.ts': 12,
  'test/api/s3-list-buckets.test.ts': 6,
  'test/cli/device-login.test.ts': 75,
  'test/web-app/web-app-oidc-browser.test.ts': 30,
  'test/api/oidc-sign-in.test.ts': 20,
  'test/api/s3-part-size.test.ts': 15,
  'test/api/s3-tagging.test.ts': 6,
  'test/api/s3-bucket-policy.test.ts': 10,
  'test/unit/bucket-policy.test.ts': 2,
  'test/api/s3-conditional-writes.test.ts': 6,
  'test/api/s3-versioning.test.ts': 7,
  'test/cli/storage.test.ts': 16,
  'test/api/notifications.test.ts': 37,
  'test/system/s3-streaming.test.ts': 36,
  'test/components/ancestry.test.ts': 36,
  'test/api/graphql-playground.test.ts': 36,
  'test/cli/deploy.test.ts': 22,
  'test/clients/s3-cors-browser.test.ts': 33,
  'test/api/imports.test.ts': 33,
  'test/components/chromium-screenshotter.test.ts': 30,
  'test/components/admin-command.test.ts': 45,
  'test/api/s3-acl.test.ts': 30,
  'test/api/site-variables.test.ts': 29,
  'test/components/build-sandbox.test.ts': 28,
  'test/sdk/methods.test.ts': 27,
  'test/infra/cold-bundles.test.ts': 27,
  'test/clients/s3-clients-rclone-s3cmd.test.ts': 27,
  'test/api/sites.test.ts': 26,
  'test/system/graphql-memory.test.ts': 25,
  'test/api/graphql-api.test.ts': 25,
  'test/web-app/invitation-browser.test.ts': 35,
  'test/web-app/passkey-browser.test.ts': 50,
  'test/cli/deploy-dir.test.ts': 17,
  'test/api/password-reset.test.ts': 24,
  'test/api/accounts-sign-in.test.ts': 23,
  'test/api/passkeys.test.ts': 36,
  'test/api/recovery-codes.test.ts': 46,
  'test/api/oidc-linking.test.ts': 30,
  'test/system/s3-crash.test.ts': 22,
  'test/components/storage-fsck.test.ts': 21,
  'test/aws/preview.test.ts': 21,
  'test/system/local-service.test.ts': 20,
  'test/api/s3-multipart.test.ts': 20,
  'test/components/staged-parts.test.ts': 40,
  'test/aws/part-staging.test.ts': 40,
  'test/infra/cairn-stack.test.ts': 20,
  'test/api/deploy-previews.test.ts': 17,
  'test/web-app/web-app-bundle.test.ts': 15,
  'test/sdk/build.test.ts': 14,
  'test/api/outbound-policy.test.ts': 14,
  'test/api/gateway-codecs.test.ts': 14,
  'test/infra/stack-options.test.ts': 13,
  'test/infra/nag.test.ts': 13,
  'test/unit/path-resolve.test.ts': 11,
  'test/sdk/part-size.test.ts': 11,
  'test/cli/storage-lambda.test.ts': 8,
  'test/api/s3-long-keys.test.ts': 10,
  'test/api/invitations.test.ts': 10,
  'test/api/device-login.test.ts': 10,
  'test/infra/first-account.test.ts': 9,
  'test/components/dag-walk.test.ts': 9,
  'test/clients/s3-clients-fleek.test.ts': 8,
  'test/aws/notifications.test.ts': 8,
  'test/aws/commit-status.test.ts': 8,
  'test/api/s3-operations.test.ts': 8,
  'test/api/s3-cors.test.ts': 8,
  'test/api/s3-conformance.test.ts': 8,
  'test/unit/cdn-viewer-request.test.ts': 7,
  'test/unit/cdn-s3-viewer-request.test.ts': 2,
  'test/unit/run-command.test.ts': 3,
  'test/components/gc-integrity.test.ts': 7,
  'test/components/build-limits-deploy.test.ts': 7,
  'test/components/build-layer.test.ts': 7,
  'test/clients/s3-clients-sdk.test.ts': 7,
  'test/api/s3-rest-api.test.ts': 7,
  'test/api/s3-bad-input.test.ts': 7,
  'test/api/graphql-pagination.test.ts': 7,
  'test/sdk/fleek-compat.test.ts': 6,
  'test/aws/gateway.test.ts': 6,
  'test/aws/cdn.test.ts': 6,
  'test/api/graphql-teams.test.ts': 6,
  'test/api/gateway-trustless.test.ts': 6,
  'test/api/gateway-public.test.ts': 6,
  'test/infra/monitoring.test.ts': 5,
  'test/web-app/web-app-routes.test.ts': 5,
  'test/components/s3-pins.test.ts': 5,
  'test/components/log-stores.test.ts': 5,
  'test/aws/lambda-runtime.test.ts': 5,
  'test/api/sites-cdn-origin.test.ts': 5,
  'test/api/s3-slice.test.ts': 5,
  'test/api/private-repos.test.ts': 5,
};

export default class SlowestFirst extends (Sequencer.default ?? Sequencer) {
  /** Milliseconds, as Jest keeps its own records (a file's seconds here would rank below any recorded file's milliseconds). */
  time(test) {
    const seconds = SECONDS[relative(test.context.config.rootDir, test.path)];
    return seconds !== undefined ? seconds * 1000 : (super.time(test) ?? 1000);
  }
}
