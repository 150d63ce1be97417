/**
 * The one error of the clone step the pipeline tells apart (its message is
 * the deploy's reason). A module of its own, without git: the pipeline
 * checks for it on every failed deploy, and importing it from errors.ts
 * would load isomorphic-git with the pipeline, while the clone step itself
 * is imported when a deploy first clones (pipeline.ts).
 */

/** Why a clone failed, in one line the deploy log can end with. */
export class CloneError extends Error {
  override name = 'CloneError';
}
