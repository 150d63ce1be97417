/**
 * Creates the accounts a deployment starts with: the default account (from
 * CAIRN_BOOTSTRAP_* or freshly generated) and those listed in
 * CAIRN_BOOTSTRAP_FILE. Accounts that already exist are left alone. The
 * default account is made with a one-time welcome link for its first owner
 * (core/auth/first-owner.ts), in the same transaction.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from './config.js';
import { newAccessKeyId, newApiToken, newSecretAccessKey } from './ids.js';
import type { Services } from './services.js';
import { ACCOUNT_LINK_SECONDS, welcomeLink } from './data/account-links.js';

export interface BootstrapAccount {
  name: string;
  accessKeyId: string;
  secretAccessKey: string;
  apiToken: string;
}

export interface BootstrapResult {
  /** Set only when the default account was created just now with generated credentials. */
  generated?: BootstrapAccount;
  created: string[];
  /** Set when the default account was created just now: the link that gives it its owner's e-mail and password (shown once). */
  welcome?: { url: string; expiresAt: string };
}

export const DEFAULT_ACCOUNT = 'default';

/** Account names: 3-42 lowercase letters, digits or hyphens, so that `<name>-bucket` is a valid bucket name. */
export function isValidAccountName(name: string): boolean {
  return /^[a-z0-9][a-z0-9-]{1,40}[a-z0-9]$/.test(name);
}

/** An account with freshly generated credentials (shown once by whoever asked for it). */
export function withNewCredentials(name: string): BootstrapAccount {
  return { name, accessKeyId: newAccessKeyId(), secretAccessKey: newSecretAccessKey(), apiToken: newApiToken() };
}

async function readBootstrapFile(path: string): Promise<BootstrapAccount[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new ConfigError('CAIRN_BOOTSTRAP_FILE', `cannot read ${path} as JSON: ${(err as Error).message}`);
  }
  const list = Array.isArray(parsed) ? parsed : (parsed as { accounts?: unknown })?.accounts;
  if (!Array.isArray(list)) throw new ConfigError('CAIRN_BOOTSTRAP_FILE', 'must hold a JSON array of accounts');
  return list.map((entry, i) => {
    for (const field of ['name', 'accessKeyId', 'secretAccessKey', 'apiToken'] as const) {
      if (typeof entry?.[field] !== 'string' || entry[field] === '') {
        throw new ConfigError('CAIRN_BOOTSTRAP_FILE', `account ${i} needs a non-empty string "${field}"`);
      }
    }
    if (!isValidAccountName(entry.name)) {
      throw new ConfigError('CAIRN_BOOTSTRAP_FILE', `account ${i}: name must be 3-42 lowercase letters, digits or hyphens`);
    }
    return { name: entry.name, accessKeyId: entry.accessKeyId, secretAccessKey: entry.secretAccessKey, apiToken: entry.apiToken };
  });
}

export async function bootstrapAccounts(services: Pick<Services, 'accountLinks' | 'accounts' | 'config'>): Promise<BootstrapResult> {
  const { config, accounts } = services;
  const result: BootstrapResult = { created: [] };
  if (!(await accounts.getAccountByName(DEFAULT_ACCOUNT))) {
    const b = config.bootstrap;
    const account: BootstrapAccount = {
      name: DEFAULT_ACCOUNT,
      accessKeyId: b.accessKeyId ?? newAccessKeyId(),
      secretAccessKey: b.secretAccessKey ?? newSecretAccessKey(),
      apiToken: b.apiToken ?? newApiToken(),
    };
    let token = '';
    await accounts.createAccount({
      ...account,
      alsoPut: ({ accountId }) => {
        const link = services.accountLinks.mint('WELCOME', { accountId });
        token = link.token;
        return [link.item];
      },
    });
    result.created.push(account.name);
    result.welcome = {
      url: welcomeLink(config.urls.baseUrl, token),
      expiresAt: new Date(Date.now() + ACCOUNT_LINK_SECONDS.WELCOME * 1000).toISOString(),
    };
    if (!b.accessKeyId || !b.secretAccessKey || !b.apiToken) result.generated = account;
  }
  if (config.bootstrap.file) {
    for (const account of await readBootstrapFile(config.bootstrap.file)) {
      if (await accounts.getAccountByName(account.name)) continue;
      await accounts.createAccount(account);
      result.created.push(account.name);
    }
  }
  return result;
}
