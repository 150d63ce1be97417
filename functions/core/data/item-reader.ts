/**
 * Strongly consistent reads of whole items by key, coalesced: the reads
 * asked for during one turn of the event loop go out together as one
 * BatchGetItem (a read alone stays a GetItem). Under load the local server
 * handles several requests per turn, and each makes the same two reads (the
 * access key, then the object), so this saves most of the AWS SDK's fixed
 * cost per call; a Lambda instance serves one request at a time and sees no
 * difference. Every table here is keyed by `pk` and `sk`.
 */
import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { untilNoneLeft, type RetryPolicy } from '../retry.js';

type Item = Record<string, unknown>;
type Key = { pk: string; sk: string };

interface Wanted {
  table: string;
  key: Key;
  waiters: Array<{ resolve: (item: Item | undefined) => void; reject: (err: unknown) => void }>;
}

/** DynamoDB's limit on keys per BatchGetItem. */
const BATCH_LIMIT = 100;
/** BatchGetItem rounds while DynamoDB hands back UnprocessedKeys (throttling), and the pauses between them, before giving up. */
const UNPROCESSED_RETRY: RetryPolicy = { attempts: 9, baseMs: 10 };

const idOf = (table: string, key: Key) => `${table}\0${key.pk}\0${key.sk}`;

export class ItemReader {
  private wanted = new Map<string, Wanted>();
  private scheduled = false;

  constructor(private readonly doc: DynamoDBDocumentClient) {}

  /** The item under `key` in `table` (strongly consistent), or undefined. */
  get(table: string, key: Key): Promise<Item | undefined> {
    return new Promise((resolve, reject) => {
      const id = idOf(table, key);
      let entry = this.wanted.get(id);
      if (!entry) this.wanted.set(id, (entry = { table, key: { pk: key.pk, sk: key.sk }, waiters: [] }));
      entry.waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = [...this.wanted.values()];
    this.wanted.clear();
    this.scheduled = false;
    for (let i = 0; i < batch.length; i += BATCH_LIMIT) {
      const part = batch.slice(i, i + BATCH_LIMIT);
      this.fetch(part).then(
        (found) => {
          for (const w of part) for (const waiter of w.waiters) waiter.resolve(found.get(idOf(w.table, w.key)));
        },
        (err: unknown) => {
          for (const w of part) for (const waiter of w.waiters) waiter.reject(err);
        },
      );
    }
  }

  private async fetch(part: Wanted[]): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    if (part.length === 1) {
      const { table, key } = part[0]!;
      const out = await this.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }));
      if (out.Item) found.set(idOf(table, key), out.Item);
      return found;
    }
    const request: Record<string, { Keys: Key[]; ConsistentRead: true }> = {};
    for (const { table, key } of part) (request[table] ??= { Keys: [], ConsistentRead: true }).Keys.push(key);
    await untilNoneLeft(
      request,
      async (pending) => {
        const out = await this.doc.send(new BatchGetCommand({ RequestItems: pending }));
        for (const [table, items] of Object.entries(out.Responses ?? {})) {
          for (const item of items) found.set(idOf(table, { pk: String(item.pk), sk: String(item.sk) }), item);
        }
        const left = out.UnprocessedKeys ?? {};
        return Object.keys(left).length ? (left as typeof pending) : undefined;
      },
      { ...UNPROCESSED_RETRY, what: 'a batch read' },
    );
    return found;
  }
}
