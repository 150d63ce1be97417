/**
 * Which tests a run holds. `npm test`, the everyday run, runs every suite
 * but the long ones (jest.config.js lists them: the soak, the big streams,
 * the browsers, the real clients, the bundling), takes each API suite
 * through one door, the node:http server, and a component with two ways
 * of working through its first; `npm run test:full` (CAIRN_TEST_SET=full),
 * which CI runs, holds every suite and takes every door and way.
 *
 * Where a door is reached is the one thing doors differ in: each door's
 * own translation (events of both payload versions, base64 bodies, the
 * REST stage, streamed answers, the Lambda runtime's limits) has suites of
 * its own that always run (s3-operations, s3-rest-api, graphql-teams,
 * gateway-public, gateway-graphql-worker, lambda-runtime and the aws
 * suites); behind the door the same code answers, which one door shows in
 * the everyday run and every door in the full one.
 */
export const FULL_RUN = process.env.CAIRN_TEST_SET === 'full';

/** The doors a suite's tests go through in this run: all of them in the full run, the first (node:http) otherwise. */
export function doorsFor<T>(doors: readonly T[]): T[] {
  return FULL_RUN ? [...doors] : doors.slice(0, 1);
}

/**
 * The same for the second way of doing one thing: git's own commands and
 * isomorphic-git (what a Lambda worker, which has no git binary, clones
 * with), a build in bubblewrap and one without a sandbox. The first is
 * what the local service uses; the full run takes every one.
 */
export const variantsFor = doorsFor;
