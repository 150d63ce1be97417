/**
 * Group commit for the LevelDB stores (the embedded DynamoDB's, and the
 * IPFS node's small blocks and pin records). Every asynchronous LevelDB
 * write is a thread-pool round trip whose cost is mostly the hand-off
 * (about 65 µs of CPU for one 4 KiB put here; a batch of three costs about
 * 95 µs), and on a busy machine each hand-off also wakes a thread that
 * competes for the cores. So writes are queued and written as one batch:
 * the writes asked for during a turn of the event loop, and, while a batch
 * is being written, every write asked for meanwhile, as the next batch. At
 * most one batch is in flight per store; under load the batches grow and
 * the round trips do not.
 *
 * A write resolves once its batch is written, and a batch is atomic, so
 * writes committed together (a transaction's) land together or not at all.
 */

export class GroupCommit<Op> {
  private queued: { ops: Op[]; settle: Array<(err?: unknown) => void> } = { ops: [], settle: [] };
  private busy = false;

  /** `write` writes one batch atomically. */
  constructor(private readonly write: (ops: Op[]) => Promise<void>) {}

  /** Resolves once `ops` are written, together, in some batch. */
  commit(ops: readonly Op[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const idle = !this.busy && this.queued.ops.length === 0;
      this.queued.ops.push(...ops);
      this.queued.settle.push((err) => (err === undefined ? resolve() : reject(err)));
      if (idle) {
        // The first write of a quiet moment waits for the rest of this turn's.
        this.busy = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const { ops, settle } = this.queued;
    this.queued = { ops: [], settle: [] };
    const done = (err?: unknown) => {
      for (const s of settle) s(err);
      if (this.queued.ops.length) this.flush();
      else this.busy = false;
    };
    this.write(ops).then(
      () => done(),
      (err: unknown) => done(err ?? new Error('batch write failed')),
    );
  }
}

type LevelOp = { type: 'put'; key: string; value: unknown } | { type: 'del'; key: string };

/** The part of classic-level that groupCommits changes. */
export interface GroupCommitLevel {
  put(key: string, value: unknown, options?: object): Promise<void>;
  del(key: string, options?: object): Promise<void>;
  batch(ops: LevelOp[]): Promise<void>;
  getSync(key: string, options?: object): unknown;
}

/**
 * Makes a classic-level database's put() and del() group-committed. Until
 * a write is written, the database's synchronous reads see it
 * (read-your-writes for the pin records, which Helia reads back while
 * pinning): a pending put reads as a copy of its value, a pending delete as
 * absent.
 */
export function groupCommits(db: GroupCommitLevel): void {
  const put = db.put.bind(db);
  const del = db.del.bind(db);
  const getSync = db.getSync.bind(db);
  const group = new GroupCommit<LevelOp>((ops) => db.batch(ops));
  /** Writes asked for but not yet written, latest per key. */
  const unsettled = new Map<string, LevelOp>();
  const enqueue = async (op: LevelOp) => {
    unsettled.set(op.key, op);
    try {
      await group.commit([op]);
    } finally {
      if (unsettled.get(op.key) === op) unsettled.delete(op.key);
    }
  };
  // Calls with options (encodings) keep their own way; the stores here pass none.
  db.put = (key, value, options) => (options ? put(key, value, options) : enqueue({ type: 'put', key, value }));
  db.del = (key, options) => (options ? del(key, options) : enqueue({ type: 'del', key }));
  db.getSync = (key, options) => {
    const op = unsettled.get(key);
    if (!op) return getSync(key, options);
    if (op.type === 'del') return undefined;
    return op.value instanceof Uint8Array ? op.value.slice() : op.value;
  };
}

/**
 * Writes in flight, by key, for a store whose reads see a write before it is
 * on disk (groupCommits): a second write of a key waits for the first
 * instead of taking what it reads as already stored.
 */
export class WritesInFlight {
  private readonly pending = new Map<string, Promise<void>>();

  /** Runs `write` unless the key is being written (then waits for that write) or `stored()` says it is on disk already. */
  once(key: string, stored: () => boolean, write: () => Promise<void>): Promise<void> {
    const pending = this.pending.get(key);
    if (pending) return pending;
    if (stored()) return Promise.resolve();
    const done = write().finally(() => this.pending.delete(key));
    this.pending.set(key, done);
    return done;
  }
}
