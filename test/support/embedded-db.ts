/**
 * The embedded DynamoDB alone, in a temporary data directory, with its
 * tables created, and DynamoDB clients for it through either way in.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedDynamo } from '../../functions/local/embedded-dynamo/database.js';
import { startHelperThread } from '../../functions/local/helper.js';
import { createDatabase, ensureTables, type Database } from '../../functions/core/data/dynamo.js';
import { ItemReader } from '../../functions/core/data/item-reader.js';
import { loadConfig } from '../../functions/core/config.js';

export interface EmbeddedDb {
  /** Its HTTP endpoint (DYNAMODB_ENDPOINT), for a process of its own. */
  endpoint: string;
  /** A client through the HTTP endpoint, or (`inProcess`) the in-process transport; closed with the database. */
  client(inProcess: boolean): Database;
  close(): Promise<void>;
}

export async function startEmbeddedDb(): Promise<EmbeddedDb> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-db-'));
  const helper = startHelperThread();
  const dynamo = await startEmbeddedDynamo(helper, dir);
  const clients: Database[] = [];
  const client = (inProcess: boolean) => {
    const db = createDatabase(
      loadConfig({ DYNAMODB_ENDPOINT: dynamo.endpoint, CAIRN_DATA_DIR: dir }),
      inProcess ? dynamo.transport : undefined,
    );
    clients.push(db);
    return db;
  };
  await ensureTables(client(true));
  return {
    endpoint: dynamo.endpoint,
    client,
    async close() {
      for (const c of clients) c.client.destroy();
      await dynamo.close();
      await helper.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const READS = new Set(['GetCommand', 'QueryCommand', 'BatchGetCommand', 'ScanCommand']);

/**
 * The database with every call counted by command (the real client, each
 * call passed on; its batch reader sends through it too): what a cache
 * saves, in calls. `hold` makes the next read of an item whose key starts
 * so wait for a promise before it is answered, `holdWrite` the next write.
 */
export function countingDatabase(database: Database) {
  const calls = new Map<string, number>();
  let gets = 0;
  const send = database.doc.send.bind(database.doc) as (command: unknown) => Promise<unknown>;
  let held: { pk: string; release: Promise<void> } | undefined;
  let heldWrite: Promise<void> | undefined;
  const doc = Object.create(database.doc, {
    send: {
      value: async (command: { constructor: { name: string }; input?: { Key?: { pk?: string } } }) => {
        const name = command.constructor.name;
        calls.set(name, (calls.get(name) ?? 0) + 1);
        if (name === 'GetCommand') gets++;
        if (heldWrite && !READS.has(name)) {
          const release = heldWrite;
          heldWrite = undefined;
          const answer = await send(command);
          await release;
          return answer;
        }
        if (held && name === 'GetCommand' && command.input?.Key?.pk?.startsWith(held.pk)) {
          const { release } = held;
          held = undefined;
          const answer = send(command);
          await release;
          return answer;
        }
        return send(command);
      },
    },
  }) as Database['doc'];
  return {
    db: { ...database, doc, reader: new ItemReader(doc) } as Database,
    /** Calls by command since the last look. */
    calls(): Record<string, number> {
      const seen = Object.fromEntries(calls);
      calls.clear();
      return seen;
    },
    /** GetItem reads since the start. */
    gets: () => gets,
    /** The next GetItem of a key under `pk` is answered by the database at once, but handed back only when the promise is. */
    hold(pk: string, release: Promise<void>) {
      held = { pk, release };
    },
    /** The next write is done by the database at once, but its answer handed back only when the promise is. */
    holdWrite(release: Promise<void>) {
      heldWrite = release;
    },
  };
}
