/**
 * The teams an account makes with createTeam (functions/core/data/teams.ts)
 * against the embedded DynamoDB: counted in the same transaction as the
 * team, so a burst of creates at once never passes the limit, and a
 * refused one leaves no team, membership or key behind.
 */
import type { Database } from '../../functions/core/data/dynamo.js';
import { ApiKeyStore } from '../../functions/core/data/api-keys.js';
import { TeamLimitError, TeamStore } from '../../functions/core/data/teams.js';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;
let db: Database;

beforeAll(async () => {
  embedded = await startEmbeddedDb();
  db = embedded.client(true);
});
afterAll(async () => {
  await embedded?.close();
});

test('a burst of creates at once makes exactly the limit; the rest are refused and leave nothing', async () => {
  const teams = new TeamStore(db, new ApiKeyStore(db));
  const owner = { accountId: 'account-burst', accountName: 'burst' };
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => teams.create(`Burst ${i}`, owner, 3)));
  const made = results.filter((r) => r.status === 'fulfilled');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  expect(made).toHaveLength(3);
  for (const r of refused) expect(r.reason).toBeInstanceOf(TeamLimitError);
  expect((await teams.listByAccount(owner.accountId)).length).toBe(3);
  // Refused again once the burst is over, with the limit in its words; another account is not held by it.
  await expect(teams.create('One more', owner, 3)).rejects.toThrow('an account makes at most 3 teams');
  await expect(teams.create('Theirs', { accountId: 'account-other' }, 3)).resolves.toMatchObject({ team: { name: 'Theirs' } });
  // Without a limit (the team an account is made with), nothing is counted.
  await teams.create('Uncounted', owner);
  expect((await teams.listByAccount(owner.accountId)).length).toBe(4);
});

test('a create DynamoDB cancels for another transaction on the count (TransactionConflict) is tried again, and made once', async () => {
  let sends = 0;
  const send = db.doc.send.bind(db.doc) as (command: unknown) => Promise<unknown>;
  const doc = Object.create(db.doc, {
    send: {
      value: async (command: unknown) => {
        // What DynamoDB answers when a burst's transactions meet on one item; the embedded database never does.
        if (++sends === 1)
          throw Object.assign(new Error('Transaction cancelled'), {
            name: 'TransactionCanceledException',
            CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }],
          });
        return send(command);
      },
    },
  }) as Database['doc'];
  const teams = new TeamStore({ ...db, doc }, new ApiKeyStore(db));
  const made = await teams.create('Contended', { accountId: 'account-contended' }, 3);
  expect(sends).toBe(2);
  expect((await teams.listByAccount('account-contended')).map((m) => m.teamId)).toEqual([made.team.id]);
});
