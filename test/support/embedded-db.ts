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

/** The database with its GetItem reads counted (the real client, its calls passed through): what a cache saves, in reads. */
export function countingGets(database: Database): { db: Database; reads: () => number } {
  let reads = 0;
  const send = database.doc.send.bind(database.doc) as (command: unknown) => Promise<unknown>;
  const doc = Object.create(database.doc, {
    send: {
      value: (command: { constructor: { name: string } }) => {
        if (command.constructor.name === 'GetCommand') reads++;
        return send(command);
      },
    },
  }) as Database['doc'];
  return { db: { ...database, doc }, reads: () => reads };
}
