/**
 * The settings of a stack that are secrets: the OpenID Connect client
 * secret (CAIRN_OIDC_CLIENT_SECRET) and the SMTP URL, which carries the
 * mail server's password (CAIRN_SMTP_URL). On one machine they are
 * environment variables; on AWS a Lambda function's environment is shown
 * to whoever may read its configuration (GetFunctionConfiguration) and
 * sits in the template, and AWS recommends Secrets Manager for such values
 * ("we recommend that you use AWS Secrets Manager instead of environment
 * variables to store database credentials and other sensitive information",
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html),
 * so the stack keeps them in one Secrets Manager
 * secret, a JSON object by variable name, and gives the GraphQL function
 * (the one that signs people in and sends mail) its ARN as
 * CAIRN_SETTINGS_SECRET_ARN and GetSecretValue on exactly it
 * (lib/sign-in-settings.ts):
 *
 *   {"CAIRN_OIDC_CLIENT_SECRET": "...", "CAIRN_SMTP_URL": "smtps://user:password@smtp.example.com:465"}
 *
 * The function reads it once per container, with the first request, and
 * the configuration is then read as locally from the environment with
 * these values added (loadConfig). A failed read fails that request and is
 * tried again with the next (onceUntilFailure, at the caller): a throttled
 * call must not leave the container without sign-in for its life.
 *
 * A setting the secret does not hold is off, the rest of the service on: a
 * stack makes the secret empty (`{}`) for the operator to fill after the
 * deploy, and the API must answer meanwhile. So without the client secret
 * the provider's other settings are dropped (OIDC sign-in off, logged),
 * where the local server would refuse to start; likewise an SMTP URL
 * without a sender (CAIRN_MAIL_FROM). A value that is there but
 * wrong (an SMTP URL that is no URL) fails as locally, by the variable's
 * name and never the value. Only the two names are taken: the secret
 * cannot change where the tables are.
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ConfigError, loadConfig, type Config } from '../core/config.js';
import type { Logger } from '../core/logger.js';

/** The variable naming the secret. */
export const SETTINGS_SECRET_VARIABLE = 'CAIRN_SETTINGS_SECRET_ARN';

/** What the secret may hold: the variables that are secrets, by their names on one machine. */
export const SECRET_SETTINGS = ['CAIRN_OIDC_CLIENT_SECRET', 'CAIRN_SMTP_URL'] as const;

type Env = Record<string, string | undefined>;

/** The provider's settings that go with its client secret (config.ts oidcSettings). */
const OIDC_SETTINGS = ['CAIRN_OIDC_ISSUER', 'CAIRN_OIDC_CLIENT_ID', 'CAIRN_OIDC_NAME'];

/**
 * The configuration from `env`, with the values of the secret it names
 * (none named: loadConfig(env) alone). `client` is made with the first
 * read when not given; the SDK's client is loaded only then, so a function
 * whose stack keeps no such secret never loads it.
 */
export async function loadConfigWithSecrets(env: Env, logger: Logger, client?: SecretsManagerClient): Promise<Config> {
  const arn = env[SETTINGS_SECRET_VARIABLE];
  if (arn === undefined || arn === '') return loadConfig(env);
  if (!/^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$/.test(arn))
    throw new ConfigError(SETTINGS_SECRET_VARIABLE, `must be a Secrets Manager secret ARN, got "${arn}"`);
  const { GetSecretValueCommand, SecretsManagerClient: Client } = await import('@aws-sdk/client-secrets-manager');
  const out = await (client ?? new Client({ region: env.AWS_REGION })).send(new GetSecretValueCommand({ SecretId: arn }));
  const values = secretSettings(arn, out.SecretString, logger);
  const merged: Env = { ...env, ...values };
  if (values.CAIRN_OIDC_CLIENT_SECRET === undefined && OIDC_SETTINGS.some((name) => opt(env, name) !== undefined)) {
    logger.warn(`OpenID Connect sign-in is off: the secret ${arn} holds no CAIRN_OIDC_CLIENT_SECRET yet (docs/aws.md)`);
    for (const name of [...OIDC_SETTINGS, 'CAIRN_OIDC_CLIENT_SECRET']) delete merged[name];
  }
  if (values.CAIRN_SMTP_URL === undefined && opt(env, 'CAIRN_MAIL_FROM') !== undefined && opt(env, 'CAIRN_SMTP_URL') === undefined)
    logger.warn(`no e-mail is sent: the secret ${arn} holds no CAIRN_SMTP_URL yet (docs/aws.md)`);
  if (values.CAIRN_SMTP_URL !== undefined && opt(env, 'CAIRN_MAIL_FROM') === undefined) {
    logger.warn(`no e-mail is sent: the secret ${arn} holds CAIRN_SMTP_URL, but CAIRN_MAIL_FROM (cairn:mailFrom) is unset`);
    delete merged.CAIRN_SMTP_URL;
  }
  return loadConfig(merged);
}

function opt(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

/** The settings the secret's value holds (a JSON object of strings); an error names the secret, never a value. */
function secretSettings(arn: string, text: string | undefined, logger: Logger): Partial<Record<(typeof SECRET_SETTINGS)[number], string>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text ?? '');
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(
      SETTINGS_SECRET_VARIABLE,
      `the secret ${arn} must hold a JSON object such as {"CAIRN_OIDC_CLIENT_SECRET": "...", "CAIRN_SMTP_URL": "smtps://..."}`,
    );
  const found: Partial<Record<(typeof SECRET_SETTINGS)[number], string>> = {};
  const ignored: string[] = [];
  for (const [name, value] of Object.entries(parsed)) {
    if (!(SECRET_SETTINGS as readonly string[]).includes(name)) {
      ignored.push(name);
      continue;
    }
    if (typeof value !== 'string') throw new ConfigError(name, `must be a string in the secret ${arn}`);
    if (value !== '') found[name as (typeof SECRET_SETTINGS)[number]] = value;
  }
  // Names only: a value is never logged.
  if (ignored.length) logger.warn(`the secret ${arn} holds settings that are not read from it`, { ignored, read: SECRET_SETTINGS });
  return found;
}
