/**
 * The command line's browser login (RFC 8628, the Device Authorization
 * Grant): the rules, called with plain values (functions/graphql/device-http.ts
 * is the HTTP side, data/device-grants.ts the records).
 *
 * - `cairn login` asks for a grant, naming its machine; it shows the
 *   person a user code and the web app's page, and polls with the device
 *   code.
 * - The person, signed in to the web app, looks the code up (the page
 *   shows which machine asks, when and from which address), picks one of
 *   their teams and approves, or denies.
 * - The next poll after approval receives, once, what the grant is turned
 *   into: an API key of that team acting for the approver, and a storage
 *   key pair of the approver's account, both named "cairn login on
 *   <machine>". They are made then, not at approval, in the transaction
 *   that marks the grant issued: no secret waits in the table for a poll,
 *   and two polls at once cannot both get them.
 */
import { apiKeyItems, newApiKeyRecord } from '../data/api-keys.js';
import type { DeviceGrant, GuessKey } from '../data/device-grants.js';
import { DeviceGrantStore, formatUserCode, normaliseUserCode } from '../data/device-grants.js';
import { newAccessKeyId, newApiToken, newSecretAccessKey } from '../ids.js';
import type { Services } from '../services.js';

export type DeviceLoginServices = Pick<Services, 'accounts' | 'config' | 'db' | 'logger' | 'storageKeys' | 'teams'>;

/** The one client: the command line. Another client id is refused (RFC 6749 invalid_client). */
export const DEVICE_CLIENT_ID = 'cairn-cli';

/** The longest machine name kept; it names keys, whose names may be 100 characters. */
export const MACHINE_NAME_MAX = 64;

/** The name of what a login on a machine is given. */
export const credentialName = (machine: string): string => `cairn login on ${machine}`;

/** One store per database: the side routes are handed the services, not this store. */
const stores = new WeakMap<object, DeviceGrantStore>();
export function deviceGrants(services: Pick<Services, 'db'>): DeviceGrantStore {
  let store = stores.get(services.db);
  if (!store) stores.set(services.db, (store = new DeviceGrantStore(services.db)));
  return store;
}

/** The machine's name as given, trimmed, or an error message. */
export function checkMachineName(value: unknown): { machine: string } | { problem: string } {
  if (value === undefined || value === null || value === '') return { machine: 'an unnamed machine' };
  if (typeof value !== 'string') return { problem: 'machine must be a string' };
  const machine = value.trim();
  if (!machine || machine.length > MACHINE_NAME_MAX || /[\u0000-\u001f\u007f]/.test(machine))
    return { problem: `machine must be 1 to ${MACHINE_NAME_MAX} characters, without control characters` };
  return { machine };
}

/** Where the person goes to approve: the web app's page on the API's own origin. */
export function verificationUri(services: Pick<Services, 'config'>, userCode?: string): string {
  const page = `${services.config.urls.baseUrl.replace(/\/+$/, '')}/app/device`;
  return userCode ? `${page}?user_code=${encodeURIComponent(formatUserCode(userCode))}` : page;
}

/** Keys wrong user codes are counted by: the signed-in account, and the address. */
export function guessKeys(accountId: string, address: string | null | undefined): GuessKey[] {
  return [{ scope: 'account', value: accountId }, ...(address ? [{ scope: 'address' as const, value: address }] : [])];
}

export type LookUp = { grant: DeviceGrant } | { refused: 'malformed' | 'unknown' } | { refused: 'locked'; retryAfter: number };

/**
 * The live grant a typed user code names, for a signed-in account. A code
 * that names none counts against the account and the address; at their
 * limit no code is looked up (not even a right one) for the rest of the
 * window, so guessing costs a lockout long before it finds anything.
 */
export async function lookUpUserCode(
  services: DeviceLoginServices,
  typed: unknown,
  who: { accountId: string; address?: string | null },
): Promise<LookUp> {
  const store = deviceGrants(services);
  const keys = guessKeys(who.accountId, who.address);
  const wait = await store.retryAfter(keys);
  if (wait > 0) return { refused: 'locked', retryAfter: wait };
  const userCode = normaliseUserCode(typed);
  const grant = userCode ? await store.byUserCode(userCode) : undefined;
  if (grant) return { grant };
  await store.count(keys);
  return { refused: userCode ? 'unknown' : 'malformed' };
}

/** What the token endpoint hands the command line once its grant is approved. */
export interface IssuedCredentials {
  apiKey: string;
  apiKeyId: string;
  accessKeyId: string;
  secretAccessKey: string;
  team: { id: string; name: string };
  account: { id: string; name: string };
}

/**
 * Turns an approved grant into its credentials, or undefined when it
 * cannot be any more: another poll issued it, or the approver has left
 * the team since.
 */
export async function issueCredentials(services: DeviceLoginServices, grant: DeviceGrant): Promise<IssuedCredentials | undefined> {
  if (!grant.accountId || !grant.teamId) return undefined;
  const [account, team] = await Promise.all([services.accounts.getAccount(grant.accountId), services.teams.get(grant.teamId)]);
  if (!account || !team) return undefined;
  const name = credentialName(grant.machine);
  const createdAt = new Date().toISOString();
  const key = newApiToken();
  const apiKey = newApiKeyRecord(key, { teamId: team.id, createdBy: account.id, createdAt, name });
  const secretAccessKey = newSecretAccessKey();
  const keyPair = { accessKeyId: newAccessKeyId(), accountId: account.id, createdAt };
  const pairItem = { ...(await services.storageKeys.item(keyPair, secretAccessKey)), name };
  const issued = await deviceGrants(services).issue(grant, { apiKeyId: apiKey.id, accessKeyId: keyPair.accessKeyId }, [
    ...apiKeyItems(apiKey, key),
    pairItem,
  ]);
  if (!issued) return undefined;
  services.logger.info('device login issued credentials', {
    accountId: account.id,
    teamId: team.id,
    apiKeyId: apiKey.id,
    accessKeyId: keyPair.accessKeyId,
    machine: grant.machine,
  });
  return {
    apiKey: key,
    apiKeyId: apiKey.id,
    accessKeyId: keyPair.accessKeyId,
    secretAccessKey,
    team: { id: team.id, name: team.name },
    account: { id: account.id, name: account.name },
  };
}
