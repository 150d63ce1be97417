/**
 * `cairn login`, `cairn whoami`, `cairn logout`: the API key and endpoints
 * kept in the user's config file, and the storage key pair the storage
 * commands sign with.
 *
 * Storage credentials: given to login (`--access-key-id` and
 * `--secret-access-key`, or CAIRN_ACCESS_KEY_ID/CAIRN_SECRET_ACCESS_KEY),
 * they are checked and kept; otherwise login makes a key pair of the
 * account for this machine (createStorageKeyPair), keeps it, and logout
 * revokes it, so a machine's access ends with its logout.
 *
 * Without an API key, in a terminal (not in CI) or with `--device`, login
 * is the browser login (device-login.ts): the person approves this machine
 * in the web app, and the service makes its API key and storage key pair;
 * both are kept, marked as login's, and logout revokes both. `whoami`
 * reports the storage pair as `apiKey` and `apiSecret`, the names the
 * storage SDK (and Fleek's) give them.
 */
import type { Command } from 'commander';
import {
  apiBase,
  checkDomain,
  checkUrl,
  DEFAULTS,
  ENV_NAMES,
  readStoredConfig,
  configPath,
  removeStoredConfig,
  writeStoredConfig,
  type StoredConfig,
} from './config-store.js';
import type { Context } from './context.js';
import { deviceLogin, machineName } from './device-login.js';
import { GraphqlClient } from './graphql-client.js';
import { CliError, reasonOf } from './output.js';

interface LoginOptions {
  apiKey?: string;
  apiKeyStdin?: boolean;
  apiUrl?: string;
  storageEndpoint?: string;
  gatewayUrl?: string;
  storagePublicDomain?: string;
  sitesDomain?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  storageKey?: boolean;
  device?: boolean;
  browser?: boolean;
}

async function readStdin(stdin: Context['stdin']): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a secret from the terminal without echoing it. */
async function promptSecret(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding('utf8');
  try {
    return await new Promise<string>((resolve, reject) => {
      let value = '';
      const onData = (chunk: string) => {
        for (const ch of chunk) {
          if (ch === '\r' || ch === '\n') {
            stdin.off('data', onData);
            process.stderr.write('\n');
            resolve(value);
            return;
          }
          if (ch === '\u0003') {
            stdin.off('data', onData);
            process.stderr.write('\n');
            reject(new CliError('cancelled', 130));
            return;
          }
          if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
          else value += ch;
        }
      };
      stdin.on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
  }
}

/** A person at a terminal: stdin and stderr are both the terminal (the process's own then, which promptSecret reads). */
const interactive = (ctx: Context) => ctx.stdin.isTTY === true && ctx.out.streams.stderr.isTTY === true;

/** The API key given (option, stdin, environment), or undefined when none was: then login is the browser's. */
async function givenApiKey(options: LoginOptions, ctx: Context): Promise<string | undefined> {
  let key = options.apiKey;
  // In a terminal, stdin is the person typing: ask without echoing rather than wait for end of input.
  if (!key && options.apiKeyStdin) key = (interactive(ctx) ? await promptSecret('API key: ') : await readStdin(ctx.stdin)).trim();
  return key || ctx.env[ENV_NAMES.apiKey] || undefined;
}

/** Whether a login without a key may open a browser: asked for (--device), or a person at a terminal, not CI. */
function browserLoginAllowed(options: LoginOptions, ctx: Context): boolean {
  if (options.device) return true;
  const ci = ctx.env.CI;
  return interactive(ctx) && !(ci && ci !== 'false' && ci !== '0');
}

const TEAM_QUERY = 'query { getCurrentTeam { id name } }';

/** The key pair a storage client can list buckets with, or a CliError saying it cannot. */
async function checkStoragePair(endpoint: string, gatewayUrl: string, accessKeyId: string, secretAccessKey: string): Promise<void> {
  const { createStorage } = await import('../../packages/storage-sdk/src/node.js');
  const storage = createStorage({ endpoint, gatewayUrl, apiKey: accessKeyId, apiSecret: secretAccessKey });
  try {
    await storage.listBuckets({});
  } catch (err) {
    throw new CliError(`the storage key pair ${accessKeyId} was refused by ${endpoint}: ${reasonOf(err)}`);
  } finally {
    storage.destroy();
  }
}

async function revokeCreatedPair(config: StoredConfig): Promise<void> {
  if (!config.storageKeyCreated || !config.accessKeyId || !config.apiKey) return;
  const api = new GraphqlClient(apiBase(config.apiUrl ?? DEFAULTS.apiUrl, 'apiUrl'), config.apiKey);
  await api.request('mutation ($id: ID!) { revokeStorageKeyPair(accessKeyId: $id) { accessKeyId } }', { id: config.accessKeyId });
}

/** Revokes the API key a browser login made, with itself (a member may revoke the keys they made). */
async function revokeCreatedApiKey(config: StoredConfig): Promise<void> {
  if (!config.apiKeyCreated || !config.apiKeyId || !config.teamId || !config.apiKey) return;
  const api = new GraphqlClient(apiBase(config.apiUrl ?? DEFAULTS.apiUrl, 'apiUrl'), config.apiKey);
  await api.request('mutation ($t: ID!, $k: ID!) { revokeApiKey(teamId: $t, apiKeyId: $k) { id } }', {
    t: config.teamId,
    k: config.apiKeyId,
  });
}

/** Revokes what an earlier login made and a new one replaced: its storage pair, then the API key it needs for that. */
async function revokeReplaced(previous: StoredConfig, config: StoredConfig, ctx: Context): Promise<void> {
  if (previous.storageKeyCreated && previous.accessKeyId && previous.accessKeyId !== config.accessKeyId) {
    // The pair an earlier login made for this machine is not used any more.
    await revokeCreatedPair(previous).catch((err: unknown) =>
      ctx.out.note(`could not revoke the storage key pair ${previous.accessKeyId} an earlier login made: ${reasonOf(err)}`),
    );
  }
  if (previous.apiKeyCreated && previous.apiKeyId && previous.apiKey !== config.apiKey) {
    await revokeCreatedApiKey(previous).catch((err: unknown) =>
      ctx.out.note(`could not revoke the API key ${previous.apiKeyId} an earlier login made: ${reasonOf(err)}`),
    );
  }
}

/**
 * The browser login: the approval gives the API key, the storage pair and
 * the service's endpoints (what is given on the command line or in the
 * environment still wins), all kept.
 */
async function browserLogin(options: LoginOptions, ctx: Context, apiUrl: string, previous: StoredConfig, path: string): Promise<void> {
  if (options.accessKeyId || options.secretAccessKey || options.storageKey === false)
    throw new CliError('--access-key-id, --secret-access-key and --no-storage-key go with --api-key: the browser login makes its own pair');
  const env = ctx.env;
  const issued = await deviceLogin(apiUrl, { browser: options.browser !== false }, ctx.out);
  const storageEndpoint = checkUrl(
    options.storageEndpoint ?? env[ENV_NAMES.storageEndpoint] ?? issued.endpoints.storage,
    '--storage-endpoint',
  );
  const gatewayUrl = checkUrl(options.gatewayUrl ?? env[ENV_NAMES.gatewayUrl] ?? issued.endpoints.gateway, '--gateway-url').replace(
    /\/ipfs$/,
    '',
  );
  const publicDomain = options.storagePublicDomain ?? env[ENV_NAMES.storagePublicDomain] ?? issued.endpoints.storage_public_domain;
  const sitesDomain = options.sitesDomain ?? env[ENV_NAMES.sitesDomain] ?? issued.endpoints.sites_domain;
  const team = issued.team;
  const config: StoredConfig = {
    apiUrl,
    apiKey: issued.access_token,
    apiKeyId: issued.api_key_id,
    apiKeyCreated: true,
    storageEndpoint,
    gatewayUrl,
    ...(publicDomain ? { storagePublicDomain: checkDomain(publicDomain, '--storage-public-domain') } : {}),
    ...(sitesDomain ? { sitesDomain: checkDomain(sitesDomain, '--sites-domain') } : {}),
    teamId: team.id,
    teamName: team.name,
    accessKeyId: issued.access_key_id,
    secretAccessKey: issued.secret_access_key,
    storageKeyCreated: true,
    createdBy: `cairn login in the browser, ${new Date().toISOString()}, for ${issued.account.name} on ${machineName()}: cairn logout revokes the API key and the storage key pair`,
  };
  await writeStoredConfig(path, config);
  await revokeReplaced(previous, config, ctx);
  const storage = { accessKeyId: issued.access_key_id, created: true };
  ctx.out.result(
    {
      apiUrl,
      team,
      account: issued.account,
      configPath: path,
      storage,
      storageEndpoint,
      gatewayUrl,
      sitesDomain: config.sitesDomain ?? null,
    },
    () => [
      `Logged in to ${apiUrl} as ${issued.account.name}, team ${team.name} (${team.id}).`,
      `Made for this machine: an API key and the storage key pair ${storage.accessKeyId} (cairn logout revokes both).`,
      `Settings saved in ${path} (readable by you only).`,
    ],
  );
}

async function login(options: LoginOptions, ctx: Context): Promise<void> {
  const path = configPath(ctx.env);
  const previous = await readStoredConfig(path);
  const env = ctx.env;
  const apiUrl = apiBase(options.apiUrl ?? env[ENV_NAMES.apiUrl] ?? previous.apiUrl ?? DEFAULTS.apiUrl, '--api-url');
  const sameService = previous.apiUrl === apiUrl;
  const kept = <K extends keyof StoredConfig>(name: K) => (sameService ? previous[name] : undefined);
  const storageEndpoint = checkUrl(
    options.storageEndpoint ??
      env[ENV_NAMES.storageEndpoint] ??
      (kept('storageEndpoint') as string | undefined) ??
      DEFAULTS.storageEndpoint,
    '--storage-endpoint',
  );
  const gatewayUrl = checkUrl(
    options.gatewayUrl ?? env[ENV_NAMES.gatewayUrl] ?? (kept('gatewayUrl') as string | undefined) ?? DEFAULTS.gatewayUrl,
    '--gateway-url',
  ).replace(/\/ipfs$/, '');
  const publicDomain =
    options.storagePublicDomain ?? env[ENV_NAMES.storagePublicDomain] ?? (kept('storagePublicDomain') as string | undefined);
  const sitesDomain = options.sitesDomain ?? env[ENV_NAMES.sitesDomain] ?? (kept('sitesDomain') as string | undefined);
  const apiKey = await givenApiKey(options, ctx);
  if (!apiKey) {
    if (browserLoginAllowed(options, ctx)) return browserLogin(options, ctx, apiUrl, previous, path);
    throw new CliError(
      'no API key: pass --api-key <key>, --api-key-stdin, or set CAIRN_API_KEY (or log in in the browser: cairn login --device)',
    );
  }

  const api = new GraphqlClient(apiUrl, apiKey);
  const team = (await api.request<{ getCurrentTeam: { id: string; name: string } }>(TEAM_QUERY)).getCurrentTeam;

  const config: StoredConfig = {
    apiUrl,
    apiKey,
    storageEndpoint,
    gatewayUrl,
    ...(publicDomain ? { storagePublicDomain: checkDomain(publicDomain, '--storage-public-domain') } : {}),
    ...(sitesDomain ? { sitesDomain: checkDomain(sitesDomain, '--sites-domain') } : {}),
    teamId: team.id,
    teamName: team.name,
  };

  const givenId = options.accessKeyId ?? env[ENV_NAMES.accessKeyId];
  const givenSecret = options.secretAccessKey ?? env[ENV_NAMES.secretAccessKey];
  if (!!givenId !== !!givenSecret) throw new CliError('a storage key pair needs both --access-key-id and --secret-access-key');
  let storage: { accessKeyId: string; created: boolean } | null = null;
  let revokeOld = false;
  if (givenId && givenSecret) {
    await checkStoragePair(storageEndpoint, gatewayUrl, givenId, givenSecret);
    Object.assign(config, { accessKeyId: givenId, secretAccessKey: givenSecret });
    storage = { accessKeyId: givenId, created: false };
    revokeOld = true;
  } else if (options.storageKey !== false) {
    if (sameService && previous.apiKey === apiKey && previous.accessKeyId && previous.secretAccessKey) {
      // Logging in again with the same key: the pair this machine has stays.
      Object.assign(config, {
        accessKeyId: previous.accessKeyId,
        secretAccessKey: previous.secretAccessKey,
        storageKeyCreated: previous.storageKeyCreated,
      });
      storage = { accessKeyId: previous.accessKeyId, created: false };
    } else {
      const made = (
        await api.request<{ createStorageKeyPair: { keyPair: { accessKeyId: string }; secretAccessKey: string } }>(
          'mutation { createStorageKeyPair { keyPair { accessKeyId } secretAccessKey } }',
        )
      ).createStorageKeyPair;
      Object.assign(config, { accessKeyId: made.keyPair.accessKeyId, secretAccessKey: made.secretAccessKey, storageKeyCreated: true });
      storage = { accessKeyId: made.keyPair.accessKeyId, created: true };
      revokeOld = true;
    }
  } else {
    revokeOld = true;
  }

  await writeStoredConfig(path, config);
  if (revokeOld || previous.apiKeyCreated)
    await revokeReplaced(revokeOld ? previous : { ...previous, storageKeyCreated: false }, config, ctx);
  ctx.out.result({ apiUrl, team, configPath: path, storage, storageEndpoint, gatewayUrl, sitesDomain: config.sitesDomain ?? null }, () => [
    `Logged in to ${apiUrl} as team ${team.name} (${team.id}).`,
    storage
      ? storage.created
        ? `Storage: made the key pair ${storage.accessKeyId} for this machine (cairn logout revokes it).`
        : `Storage: key pair ${storage.accessKeyId}.`
      : 'Storage: no key pair (storage commands need CAIRN_ACCESS_KEY_ID and CAIRN_SECRET_ACCESS_KEY).',
    `Settings saved in ${path} (readable by you only).`,
  ]);
}

async function whoami(ctx: Context): Promise<void> {
  const settings = await ctx.settings();
  const api = await ctx.api();
  const team = (await api.request<{ getCurrentTeam: { id: string; name: string } }>(TEAM_QUERY)).getCurrentTeam;
  const value = {
    team,
    apiUrl: settings.apiUrl,
    apiKeyFrom: settings.apiKeyFrom,
    accessKeyId: settings.accessKeyId ?? null,
    // The storage key pair under the names the service description (and the storage SDK) give it.
    apiKey: settings.accessKeyId ?? null,
    apiSecret: settings.secretAccessKey ?? null,
    createdBy: settings.stored.createdBy ?? null,
    storageEndpoint: settings.storageEndpoint,
    gatewayUrl: settings.gatewayUrl,
    storagePublicDomain: settings.storagePublicDomain,
    sitesDomain: settings.sitesDomain ?? null,
    configPath: settings.configPath,
  };
  ctx.out.result(value, () => [
    `Team:     ${team.name} (${team.id})`,
    `API:      ${settings.apiUrl} (key from ${settings.apiKeyFrom === 'environment' ? 'CAIRN_API_KEY' : settings.configPath})`,
    `Storage:  ${settings.storageEndpoint}${settings.accessKeyId ? ` (key pair ${settings.accessKeyId})` : ' (no key pair)'}`,
    `apiKey:    ${settings.accessKeyId ?? '(none)'}`,
    `apiSecret: ${settings.secretAccessKey ?? '(none)'}`,
    `Gateway:  ${settings.gatewayUrl}`,
    `Sites:    ${settings.sitesDomain ?? 'unknown domain (cairn login --sites-domain <domain>)'}`,
  ]);
}

async function logout(options: { keepStorageKey?: boolean }, ctx: Context): Promise<void> {
  const path = configPath(ctx.env);
  const stored = await readStoredConfig(path);
  let revoked: string | null = null;
  let revokedApiKey: string | null = null;
  if (stored.storageKeyCreated && stored.accessKeyId && !options.keepStorageKey) {
    try {
      await revokeCreatedPair(stored);
      revoked = stored.accessKeyId;
    } catch (err) {
      ctx.out.note(`could not revoke the storage key pair ${stored.accessKeyId}: ${reasonOf(err)}; revoke it with revokeStorageKeyPair`);
    }
  }
  // Last: the pair was revoked with this key.
  if (stored.apiKeyCreated && stored.apiKeyId) {
    try {
      await revokeCreatedApiKey(stored);
      revokedApiKey = stored.apiKeyId;
    } catch (err) {
      ctx.out.note(`could not revoke the API key ${stored.apiKeyId}: ${reasonOf(err)}; revoke it with revokeApiKey`);
    }
  }
  const removed = await removeStoredConfig(path);
  ctx.out.result({ loggedOut: removed, configPath: path, revokedStorageKey: revoked, revokedApiKey }, () =>
    removed
      ? [
          `Logged out: removed ${path}.`,
          ...(revoked ? [`Revoked the storage key pair ${revoked}.`] : []),
          ...(revokedApiKey ? [`Revoked the API key ${revokedApiKey} login made.`] : []),
        ]
      : `Not logged in (no ${path}).`,
  );
}

export function registerLogin(program: Command, context: (command: Command) => Context): void {
  program
    .command('login')
    .description('log in in the browser (or with an API key) and keep the keys, with the endpoints, in your config file (mode 0600)')
    .option('--api-key <key>', 'the hosting API key (default: CAIRN_API_KEY, else the browser login)')
    .option('--api-key-stdin', 'read the API key from stdin (asked for, unechoed, in a terminal)')
    .option('--device', 'log in in the browser even where cairn would not start it itself (CI, no terminal)')
    .option('--no-browser', 'with the browser login: print the address, do not open a browser')
    .option('--api-url <url>', `the API's base URL (default: CAIRN_API_URL, else ${DEFAULTS.apiUrl})`)
    .option('--storage-endpoint <url>', `the S3-compatible endpoint (default ${DEFAULTS.storageEndpoint})`)
    .option('--gateway-url <url>', `the gateway (default ${DEFAULTS.gatewayUrl})`)
    .option('--storage-public-domain <domain>', 'public file URLs are <bucket>.<domain>/<key>')
    .option('--sites-domain <domain>', 'sites answer at <slug>.<domain>')
    .option('--access-key-id <id>', 'a storage key pair to use (with --secret-access-key) instead of making one')
    .option('--secret-access-key <secret>', 'the secret of that key pair')
    .option('--no-storage-key', 'do not make a storage key pair')
    .addHelpText(
      'after',
      `
Without an API key, in a terminal, cairn login opens the web app in your
browser: approve this machine there, and cairn receives an API key of the
team you pick and a storage key pair of your own, both named after this
machine ("cairn login on <host>"); cairn logout revokes them.

Examples:
  cairn login                                              # the local server (npm start), in the browser
  cairn login --api-url https://api.example.com --no-browser   # a stack on AWS: open the printed address yourself
  cairn login --api-key cairn_...                          # with a key, for scripts
  echo "$KEY" | cairn login --api-key-stdin --api-url https://api.example.com \\
    --storage-endpoint https://s3.example.com --gateway-url https://ipfs.example.com --sites-domain sites.example.com`,
    )
    .action(async (options: LoginOptions, command: Command) => login(options, context(command)));

  program
    .command('whoami')
    .description('the team the API key acts in, the endpoints in use, and the storage key pair (apiKey, apiSecret)')
    .action(async (_options: unknown, command: Command) => whoami(context(command)));

  program
    .command('logout')
    .description('forget the stored keys and revoke the API key and storage key pair login made')
    .option('--keep-storage-key', 'do not revoke the storage key pair login made')
    .action(async (options: { keepStorageKey?: boolean }, command: Command) => logout(options, context(command)));
}
