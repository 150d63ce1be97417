/**
 * Collection must never race an upload in flight: an upload's blocks exist,
 * unpinned, between the import and the pin, and an upload may also re-use
 * blocks a collection is about to delete. So every upload holds the gate
 * shared from the start of its import until its record is committed, and a
 * collection holds it exclusively. Locally one process owns the data
 * directory, so an in-process gate is exact (functions/local/upload-gate.ts);
 * in AWS the gate lives in DynamoDB (functions/aws/dynamo-gate.ts).
 */

/** Uploads hold it shared from import to commit; garbage collection holds it alone. */
export interface UploadGate {
  /** Enters shared; returns the release function (idempotent). */
  enterShared(): Promise<() => void>;
  /** Runs `fn` with no upload in flight, or throws GateBusyError if that cannot be had now. */
  withExclusive<T>(fn: () => Promise<T>): Promise<T>;
  /** Uploads in flight in this process. */
  readonly uploadsInFlight: number;
}

export class GateBusyError extends Error {
  override name = 'GateBusyError';
}
