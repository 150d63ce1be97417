/**
 * A site's secrets and build hooks, in the sites table, apart from the site
 * item (so a Site handed around, logged or rendered never carries them):
 *
 *   SITE#<siteId> / SECRETS               webhookSecret (sealed), repositoryToken (sealed), repositoryUsername
 *   SITE#<siteId> / BUILDHOOK#<hookId>    a build hook: name, branch, tokenDigest (for the site's listing)
 *   BUILDHOOK#<hookId> / BUILDHOOK        the same hook by its id alone (what its URL names)
 *
 * The webhook secret and the repository token are sealed, not hashed: an
 * HMAC is computed with the secret itself and the clone sends the token
 * itself. A build hook's token is only ever compared, so it is kept as a
 * SHA-256 digest. The context each value is sealed under binds it to its
 * site and use, so a sealed value copied to another site does not open.
 */
import { timingSafeEqual } from 'node:crypto';
import { DeleteCommand, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SecretSealer } from '../auth/secrets.js';
import { newSortableId, tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { queryAll } from './pages.js';
import { writtenIf } from './tables.js';

export interface BuildHook {
  id: string;
  siteId: string;
  name: string;
  /** The branch it deploys; null: the site's branch. */
  branch: string | null;
  createdAt: string;
}

export interface RepositoryCredentials {
  username: string;
  token: string;
}

const SECRETS_SK = 'SECRETS';
const webhookContext = (siteId: string) => `site-webhook:${siteId}`;
const tokenContext = (siteId: string) => `site-repository-token:${siteId}`;

export class SiteSecretStore {
  constructor(
    private readonly db: Database,
    private readonly sealer: SecretSealer,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.sites;
  }

  private async secretsItem(siteId: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `SITE#${siteId}`, sk: SECRETS_SK }, ConsistentRead: true }),
    );
    return out.Item;
  }

  /** Which secrets the site has (never their values). */
  async status(siteId: string): Promise<{ webhookSecret: boolean; repositoryToken: boolean; repositoryUsername: string | null }> {
    const item = await this.secretsItem(siteId);
    return {
      webhookSecret: typeof item?.webhookSecret === 'string',
      repositoryToken: typeof item?.repositoryToken === 'string',
      repositoryUsername: typeof item?.repositoryToken === 'string' ? ((item.repositoryUsername as string | undefined) ?? null) : null,
    };
  }

  /** Sets (or replaces) the webhook secret. */
  async setWebhookSecret(siteId: string, secret: string): Promise<void> {
    await this.setAttributes(siteId, {
      webhookSecret: await this.sealer.seal(secret, webhookContext(siteId)),
      webhookSecretAt: this.now().toISOString(),
    });
  }

  async webhookSecret(siteId: string): Promise<string | undefined> {
    const sealed = (await this.secretsItem(siteId))?.webhookSecret;
    return typeof sealed === 'string' ? this.sealer.open(sealed, webhookContext(siteId)) : undefined;
  }

  async clearWebhookSecret(siteId: string): Promise<void> {
    await this.removeAttributes(siteId, ['webhookSecret', 'webhookSecretAt']);
  }

  async setRepositoryToken(siteId: string, credentials: RepositoryCredentials): Promise<void> {
    await this.setAttributes(siteId, {
      repositoryToken: await this.sealer.seal(credentials.token, tokenContext(siteId)),
      repositoryUsername: credentials.username,
    });
  }

  async clearRepositoryToken(siteId: string): Promise<void> {
    await this.removeAttributes(siteId, ['repositoryToken', 'repositoryUsername']);
  }

  /** The site's repository credentials, opened (for the clone only). */
  async repositoryCredentials(siteId: string): Promise<RepositoryCredentials | undefined> {
    const item = await this.secretsItem(siteId);
    if (typeof item?.repositoryToken !== 'string') return undefined;
    return {
      username: (item.repositoryUsername as string | undefined) ?? 'x-access-token',
      token: await this.sealer.open(item.repositoryToken, tokenContext(siteId)),
    };
  }

  private async setAttributes(siteId: string, values: Record<string, string>): Promise<void> {
    const names = Object.keys(values);
    await this.db.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: `SITE#${siteId}`, sk: SECRETS_SK },
        UpdateExpression: `SET ${names.map((n, i) => `#n${i} = :v${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#n${i}`, n])),
        ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:v${i}`, values[n]])),
      }),
    );
  }

  private async removeAttributes(siteId: string, names: string[]): Promise<void> {
    await this.db.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: `SITE#${siteId}`, sk: SECRETS_SK },
        UpdateExpression: `REMOVE ${names.map((_, i) => `#n${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#n${i}`, n])),
      }),
    );
  }

  /** A new build hook; `token` (what its URL carries) is known only to the caller from here on. */
  async createBuildHook(siteId: string, init: { name: string; branch: string | null; token: string }): Promise<BuildHook> {
    const hook: BuildHook = {
      id: newSortableId(this.now().getTime()),
      siteId,
      name: init.name,
      branch: init.branch,
      createdAt: this.now().toISOString(),
    };
    const digest = tokenDigest(init.token);
    await this.db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.table,
              Item: { pk: `SITE#${siteId}`, sk: `BUILDHOOK#${hook.id}`, ...hook, tokenDigest: digest },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: this.table,
              Item: { pk: `BUILDHOOK#${hook.id}`, sk: 'BUILDHOOK', ...hook, tokenDigest: digest },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
    return hook;
  }

  /** The hook when `token` is its token; undefined for an unknown hook or a wrong token alike. */
  async buildHookFor(hookId: string, token: string): Promise<BuildHook | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `BUILDHOOK#${hookId}`, sk: 'BUILDHOOK' }, ConsistentRead: true }),
    );
    const item = out.Item;
    if (!item || typeof item.tokenDigest !== 'string') return undefined;
    const expected = Buffer.from(item.tokenDigest, 'hex');
    const given = Buffer.from(tokenDigest(token), 'hex');
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    return hookOf(item);
  }

  async listBuildHooks(siteId: string): Promise<BuildHook[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :hook)',
      ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':hook': 'BUILDHOOK#' },
      ConsistentRead: true,
    });
    return items.map(hookOf);
  }

  /** Deletes one of the site's hooks; false when the site has no such hook. */
  async deleteBuildHook(siteId: string, hookId: string): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.table,
                Key: { pk: `SITE#${siteId}`, sk: `BUILDHOOK#${hookId}` },
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            {
              Delete: {
                TableName: this.table,
                Key: { pk: `BUILDHOOK#${hookId}`, sk: 'BUILDHOOK' },
                ConditionExpression: 'siteId = :site',
                ExpressionAttributeValues: { ':site': siteId },
              },
            },
          ],
        }),
      ),
    );
  }

  /** Everything of a deleted site kept here. */
  async deleteAllOfSite(siteId: string): Promise<void> {
    for (const hook of await this.listBuildHooks(siteId)) await this.deleteBuildHook(siteId, hook.id);
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: { pk: `SITE#${siteId}`, sk: SECRETS_SK } }));
  }
}

function hookOf(item: Record<string, unknown>): BuildHook {
  return {
    id: item.id as string,
    siteId: item.siteId as string,
    name: item.name as string,
    branch: (item.branch as string | null | undefined) ?? null,
    createdAt: item.createdAt as string,
  };
}
