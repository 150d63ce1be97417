/**
 * Which mirrors (mirrors.ts) a deploy of this process holds: one deploy at a
 * time per mirror, and none removed while held. A module of its own,
 * without git: the deploy worker's handler waits for the holds to end
 * after every batch of deploys (mirrorsIdle), and importing mirrors.ts for
 * that would load isomorphic-git (through trees.ts) with the handler, at
 * every cold start, though only a deploy's clone uses it.
 */

/** Mirror directory -> the chain of the deploys holding it, in turn. */
export const held = new Map<string, Promise<void>>();

/** Resolves once no mirror is held: for tests and shutdown. */
export async function mirrorsIdle(): Promise<void> {
  while (held.size) await Promise.all([...held.values()]);
}
