/**
 * The Chromium of the preview Lambda: @sparticuz/chromium, an Amazon Linux
 * build (x86_64 only) whose brotli-packed binary is unpacked into /tmp on
 * an instance's first shot and found there by the next ones. The package
 * stays outside the esbuild bundle (it finds its packed files next to its
 * own code; lib/preview.ts copies it into the function's node_modules) and
 * is imported only here, when a picture is taken.
 */
import { ScreenshotError } from '../core/ports/screenshotter.js';
import type { ChromiumBuild } from '../preview/chromium.js';

/**
 * Flags of its list a picture does not need, and which would weaken the
 * page's own origin checks (the shot already refuses other hosts).
 */
const LEFT_OUT = new Set(['--disable-web-security', '--allow-running-insecure-content']);

/**
 * Its flags include --no-sandbox (with --no-zygote and --single-process), as
 * they must: Chromium's sandbox needs user namespaces (or a setuid helper),
 * and a Lambda function has neither. What stands in for it there: the
 * function's code runs as an unprivileged user (not root), in an execution
 * environment of its own (a Firecracker microVM, with its own namespaces,
 * cgroups, chroot and a seccomp-bpf filter on the whole environment) that
 * holds nothing but this function, one invocation at a time, and whose role
 * reaches only what the preview needs (lib/preview.ts). See "Lambda
 * isolation technologies":
 * https://docs.aws.amazon.com/whitepapers/latest/security-overview-aws-lambda/lambda-isolation-technologies.html
 * and the execution environment:
 * https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html
 * A renderer exploit there gets the microVM of one preview function. On one
 * machine, where it would get the service's host, Chromium keeps its own
 * sandbox (installedChromium, chromium.ts).
 */
export async function sparticuzChromium(): Promise<ChromiumBuild> {
  const { default: Chromium } = await import('@sparticuz/chromium');
  return {
    name: '@sparticuz/chromium',
    args: Chromium.args.filter((arg) => !LEFT_OUT.has(arg)),
    sandbox: false,
    async executablePath() {
      try {
        return await Chromium.executablePath();
      } catch (err) {
        throw new ScreenshotError(
          `@sparticuz/chromium could not be unpacked: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`,
        );
      }
    },
  };
}
