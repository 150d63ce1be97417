/**
 * `npm run admin -- <command>`: operator commands against Cairn's tables.
 *
 *   create-account <name> [--json]   a new account, its team (it owns it), its default bucket
 *                                    `<name>-bucket`, a storage key pair and a GraphQL API key;
 *                                    the credentials are printed once
 *   list-accounts [--json]           every account (never a secret)
 *   welcome-link <name> [--base-url <url>] [--json]
 *                                    a new one-time link (7 days) with which a person gives an
 *                                    account without one an e-mail and a password, and becomes
 *                                    its owner in the web app (the first start's link, again)
 *   lift-second-factor <email> [--json]
 *                                    stops asking the person for a passkey after the password
 *                                    (their passkeys and recovery codes stay) and signs them out
 *                                    everywhere: the way back for someone who lost both
 *
 * The commands and which tables they use: functions/admin/program.ts.
 */
import { runAdmin } from '../functions/admin/program.js';

runAdmin(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr }).then(
  (code) => process.stdout.write('', () => process.exit(code)),
  (err: unknown) => process.stderr.write(`cairn admin: ${(err as Error)?.stack ?? String(err)}\n`, () => process.exit(1)),
);
