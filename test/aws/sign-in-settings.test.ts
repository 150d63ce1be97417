/**
 * OIDC sign-in and e-mail on a stack, through the GraphQL Lambda door: the
 * function's environment holds the provider's issuer, client id and name
 * and the sender (as lib/sign-in-settings.ts sets them) but neither the
 * client secret nor the SMTP URL, which it reads from the secret
 * CAIRN_SETTINGS_SECRET_ARN names (the Secrets Manager stand-in, holding
 * the stack's secret by ARN): once per container, a failed read tried
 * again with the next request. A whole sign-in against a real provider
 * (the token request needs the client secret) and an invitation delivered
 * to a real SMTP server that asks for the password prove the values came
 * from the secret. Without them in the secret, sign-in and mail are off and
 * the API answers.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { startTestService, type TestService } from '../support/service.js';
import { importGraphqlLambda, newAccount, type AccountFixture } from '../support/graphql.js';
import { lambdaFetch } from '../support/lambda-door.js';
import { lambdaEnv, lambdaServices, secretsManagerStandIn } from '../support/aws-mocks.js';
import { startOidcProvider, throughProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { startSmtp, type TestSmtp } from '../support/smtp.js';
import { ensureTables } from '../../functions/core/data/dynamo.js';
import { ConfigError } from '../../functions/core/config.js';
import { createLogger, type Logger } from '../../functions/core/logger.js';
import type { Services } from '../../functions/core/services.js';
import { loadConfigWithSecrets } from '../../functions/aws/settings-secret.js';

const BASE = 'https://api.example.com';
const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:cairn/settings-AbCdEf';
const EMPTY_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:cairn/empty-AbCdEf';
const BROKEN_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:cairn/broken-AbCdEf';

let service: TestService;
let provider: TestOidcProvider;
let smtp: TestSmtp;
let standIn: ReturnType<typeof secretsManagerStandIn>;
let aws: Services;
let owner: AccountFixture;
let fetchLambda: ReturnType<typeof lambdaFetch>;
let env: Record<string, string>;
const saved = { ...process.env };

/** The variables the stack gives the GraphQL function: the settings that are not secrets, and the secret's ARN. */
const stackSettings = (p: TestOidcProvider) => ({
  CAIRN_OIDC_ISSUER: p.issuer,
  CAIRN_OIDC_CLIENT_ID: p.clientId,
  CAIRN_OIDC_NAME: 'Stack ID',
  CAIRN_MAIL_FROM: 'Cairn <cairn@example.org>',
  CAIRN_SETTINGS_SECRET_ARN: ARN,
});

const reads = () => standIn.client.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input.SecretId);

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' });
  provider = await startOidcProvider();
  provider.register(`${BASE}/auth/oidc/callback`);
  smtp = await startSmtp();
  standIn = secretsManagerStandIn({
    [ARN]: JSON.stringify({ CAIRN_OIDC_CLIENT_SECRET: provider.clientSecret, CAIRN_SMTP_URL: smtp.url }),
    [EMPTY_ARN]: '{}',
    [BROKEN_ARN]: `not json, with ${smtp.url}`,
  });
  const plain = lambdaEnv(service, 'signin-', { CAIRN_BASE_URL: BASE, CAIRN_SIGNUP: 'open' });
  env = { ...plain, ...stackSettings(provider) };
  // The tables and an owner, made by services without the provider's settings (what the handler reads is the point below).
  aws = await lambdaServices(plain);
  await ensureTables(aws.db);
  owner = await newAccount({ services: aws } as TestService, 'signin');
  Object.assign(process.env, env);
  fetchLambda = lambdaFetch(await importGraphqlLambda());
}, 60_000);

afterAll(async () => {
  process.env = saved;
  await aws?.close();
  await provider?.close();
  await smtp?.close();
  await service?.close();
});

describe('the GraphQL function reads the settings that are secrets from the stack secret', () => {
  test('a failed read fails that request only; the next reads again, and later ones not at all', async () => {
    standIn.client
      .on(GetSecretValueCommand)
      .rejectsOnce(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $fault: 'client' }));
    const first = await fetchLambda(`${BASE}/app/config.json`);
    expect(first.status).toBe(500);
    expect(await first.text()).not.toContain(provider.clientSecret);
    // The stand-in answers again (and forgets the calls so far: the failed read was the first).
    standIn.reset();
    const second = await fetchLambda(`${BASE}/app/config.json`);
    expect(second.status).toBe(200);
    expect(((await second.json()) as { oidc?: unknown }).oidc).toEqual({ name: 'Stack ID' });
    for (let i = 0; i < 3; i++) expect((await fetchLambda(`${BASE}/app/config.json`)).status).toBe(200);
    expect(reads()).toEqual([ARN]);
  });

  test("OIDC sign-in works with the client secret from the secret: the provider's token request is authenticated by it", async () => {
    const start = await fetchLambda(`${BASE}/auth/oidc/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(start.status).toBe(200);
    const { url } = (await start.json()) as { url: string };
    const flow = start.headers.getSetCookie()[0]!.split(';')[0]!;
    const login = `stack-${process.pid}`;
    provider.people.set(login, { email: `${login}@example.org`, email_verified: true });
    const callback = await throughProvider(url, login, `${BASE}/auth/oidc/callback`);
    const done = await fetchLambda(callback, { headers: { cookie: flow } });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/');
    expect(done.headers.getSetCookie().some((c) => /cairn_session=[^;]+/.test(c) && !/Max-Age=0/.test(c))).toBe(true);
    expect(reads()).toEqual([ARN]);
  });

  test('an invitation goes out over SMTP with the URL (and its password) from the secret', async () => {
    const to = `invitee-${process.pid}@example.org`;
    const res = await fetchLambda(`${BASE}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: owner.apiKey },
      body: JSON.stringify({
        query: 'mutation ($t: ID!, $e: String!) { inviteTeamMember(teamId: $t, email: $e) { mailSent link } }',
        variables: { t: owner.team.id, e: to },
      }),
    });
    const body = (await res.json()) as { data: { inviteTeamMember: { mailSent: boolean; link: string | null } } };
    expect(body.data.inviteTeamMember).toEqual({ mailSent: true, link: null });
    const message = await smtp.next(to);
    expect(message.from).toBe('cairn@example.org');
    expect(smtp.linkIn(message.mail)).toContain(`${BASE}/#/invitation/`);
    expect(reads()).toEqual([ARN]);
  });
});

describe('what the secret holds, read as the handler reads it', () => {
  const client = () => new SecretsManagerClient({ region: 'us-east-1' });
  const warnings: string[] = [];
  const logger: Logger = { ...createLogger('silent'), warn: (msg: string) => void warnings.push(msg) };

  beforeEach(() => {
    warnings.length = 0;
  });

  test('an empty secret (as the stack makes it): OIDC and mail off, the rest configured, each said in the log', async () => {
    const config = await loadConfigWithSecrets({ ...env, CAIRN_SETTINGS_SECRET_ARN: EMPTY_ARN }, logger, client());
    expect(config.oidc).toBeUndefined();
    expect(config.mail.smtp).toBeUndefined();
    expect(config.urls.baseUrl).toBe(BASE);
    expect(warnings).toEqual([
      expect.stringMatching(/OpenID Connect sign-in is off: .* holds no CAIRN_OIDC_CLIENT_SECRET/),
      expect.stringMatching(/no e-mail is sent: .* holds no CAIRN_SMTP_URL/),
    ]);
  });

  test('an SMTP URL without a sender: mail off, said in the log, not every request failed', async () => {
    const { CAIRN_MAIL_FROM: _from, ...withoutSender } = env;
    const config = await loadConfigWithSecrets(withoutSender, logger, client());
    expect(config.mail.smtp).toBeUndefined();
    expect(config.oidc?.clientSecret).toBe(provider.clientSecret);
    expect(warnings).toEqual([expect.stringMatching(/CAIRN_MAIL_FROM \(cairn:mailFrom\) is unset/)]);
  });

  test('a value that is not a JSON object: a ConfigError naming the variable and the secret, never the value', async () => {
    const failed = await loadConfigWithSecrets({ ...env, CAIRN_SETTINGS_SECRET_ARN: BROKEN_ARN }, logger, client()).catch(
      (e: unknown) => e,
    );
    expect(failed).toBeInstanceOf(ConfigError);
    expect((failed as ConfigError).message).toMatch(
      /^CAIRN_SETTINGS_SECRET_ARN: the secret .*cairn\/broken-AbCdEf must hold a JSON object/,
    );
    expect((failed as ConfigError).message).not.toContain(smtp.url);
  });

  test('only the two settings are taken from it; no secret named, nothing read', async () => {
    const odd = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:cairn/odd-AbCdEf';
    const oddStandIn = secretsManagerStandIn({ [odd]: JSON.stringify({ CAIRN_ACCOUNTS_TABLE: 'elsewhere', CAIRN_SMTP_URL: smtp.url }) });
    try {
      const config = await loadConfigWithSecrets({ ...env, CAIRN_SETTINGS_SECRET_ARN: odd }, logger, client());
      expect(config.tables.accounts).toBe('signin-accounts');
      expect(config.mail.smtp?.host).toBe('127.0.0.1');
      expect(warnings).toContainEqual(expect.stringMatching(/holds settings that are not read from it/));
      const { CAIRN_SETTINGS_SECRET_ARN: _arn, ...unnamed } = env;
      oddStandIn.client.resetHistory();
      await expect(loadConfigWithSecrets({ ...unnamed, CAIRN_OIDC_CLIENT_SECRET: 'local' }, logger, client())).resolves.toBeDefined();
      expect(oddStandIn.client.commandCalls(GetSecretValueCommand)).toHaveLength(0);
    } finally {
      oddStandIn.client.restore();
    }
  });
});
