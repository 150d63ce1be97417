/**
 * Collection must never race an upload in flight: an upload's blocks exist,
 * unpinned, between the import and the pin, and an upload may also re-use
 * blocks a collection is about to delete. So every upload holds the gate
 * shared from the start of its import until its record is committed, and a
 * collection holds it exclusively. Locally one process owns the data
 * directory, so an in-process gate is exact; in AWS the gate lives in
 * DynamoDB (dynamo-gate.ts).
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

/**
 * The gate in one process (the local server owns its data directory): a
 * shared/exclusive lock in which a waiting collection holds back new uploads,
 * so it does not starve.
 */
export class LocalUploadGate implements UploadGate {
  private shared = 0;
  private exclusive = false;
  private waitingExclusive = 0;
  private wakers: Array<() => void> = [];

  private wake() {
    const wakers = this.wakers;
    this.wakers = [];
    for (const w of wakers) w();
  }

  private wait(): Promise<void> {
    return new Promise((resolve) => this.wakers.push(resolve));
  }

  async enterShared(): Promise<() => void> {
    while (this.exclusive || this.waitingExclusive > 0) await this.wait();
    this.shared++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.shared--;
      if (this.shared === 0) this.wake();
    };
  }

  async withExclusive<T>(fn: () => Promise<T>): Promise<T> {
    this.waitingExclusive++;
    try {
      while (this.exclusive || this.shared > 0) await this.wait();
    } finally {
      this.waitingExclusive--;
    }
    this.exclusive = true;
    try {
      return await fn();
    } finally {
      this.exclusive = false;
      this.wake();
    }
  }

  get uploadsInFlight(): number {
    return this.shared;
  }
}
