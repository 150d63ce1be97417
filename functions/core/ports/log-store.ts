/**
 * Where deploy logs live: outside DynamoDB items (400 KB at most), as one
 * text per deploy, rewritten whole as it grows (a log is at most
 * MAX_LOG_BYTES, see core/logs/deploy-log.ts). Files under the data
 * directory on one machine (functions/local/file-log-store.ts), objects in
 * the stack's bucket in AWS.
 */
export interface LogStore {
  /** Replaces the log stored under `key`. */
  write(key: string, text: string): Promise<void>;
  /** The log, or undefined if none was written. */
  read(key: string): Promise<string | undefined>;
  /**
   * The log's bytes (UTF-8), read only after `admit` has accepted their
   * number, or undefined if none was written. `admit` throws to refuse it,
   * and then nothing more is read: a reader with a byte budget (the GraphQL
   * API's answers) decides before the log is in memory, and can write it out
   * in pieces without ever making it one string. Both stores have it; a
   * store without it (a test's) is read whole and then admitted.
   */
  readAdmitted?(key: string, admit: (bytes: number) => void): Promise<Buffer | undefined>;
  delete(key: string): Promise<void>;
}

/** A deploy's log key. */
export const deployLogKey = (siteId: string, deployId: string) => `${siteId}/${deployId}`;
