/**
 * The upload gate in one process (the local server owns its data
 * directory): a shared/exclusive lock in which a waiting collection holds
 * back new uploads, so it does not starve.
 */
import type { UploadGate } from '../core/ports/upload-gate.js';

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
