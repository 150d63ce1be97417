/**
 * Signing in with an OpenID Connect provider and sending e-mail
 * (invitations, password reset links) on a stack: what the local server
 * reads from CAIRN_OIDC_* and CAIRN_SMTP_URL (docs/accounts.md), given to
 * the GraphQL function, the only one that signs people in or sends mail
 * (functions/graphql/oidc-http.ts, resolvers/invitations.ts,
 * account-links-http.ts).
 *
 * The settings that are not secrets come from context and become the
 * function's variables:
 *
 *   cairn:oidcIssuer     CAIRN_OIDC_ISSUER (https)
 *   cairn:oidcClientId   CAIRN_OIDC_CLIENT_ID
 *   cairn:oidcName       CAIRN_OIDC_NAME, what the sign-in button says
 *   cairn:mailFrom       CAIRN_MAIL_FROM, the sender of every message
 *
 * The two that are secrets, the client secret and the SMTP URL (it carries
 * the mail server's password), never: a function's variables are shown by
 * GetFunctionConfiguration to whoever may read the function, and written in
 * the template. They are kept in one Secrets Manager secret, a JSON object
 * by variable name, which the function reads with its first request
 * (functions/aws/settings-secret.ts). Either the stack makes it, empty
 * (`{}`), for the operator to fill after the deploy (the `SettingsSecretArn`
 * output; `aws secretsmanager put-secret-value`, docs/aws.md), or
 * `cairn:settingsSecretArn` names one the operator keeps. The function may
 * read exactly that secret (GetSecretValue on its ARN, nothing else). A
 * stack given none of these has no secret, no grant and no variable: its
 * template is what it was.
 *
 * The secret the stack makes is encrypted with Secrets Manager's AWS
 * managed key (aws/secretsmanager), which principals of the account use
 * through Secrets Manager only, so reading it needs no kms grant
 * (https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html).
 * A secret named by ARN and encrypted with a customer managed key needs
 * that key's kms:Decrypt for the GraphQL function's role, which the
 * operator grants in the key's policy (docs/aws.md).
 */
import { CfnOutput, SecretValue, type Stack, Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { SECRET_SETTINGS, SETTINGS_SECRET_VARIABLE } from '../functions/aws/settings-secret.js';

/** The output holding the ARN of the secret the stack made. */
export const SETTINGS_SECRET_OUTPUT = 'SettingsSecretArn';

/** What the stack's secret is made with: not a secret, and never to change, or an update would put it back over the operator's values. */
export const SETTINGS_SECRET_PLACEHOLDER = '{}';

export interface SignInSettingsProps {
  /** @default - the `cairn:oidcIssuer` context value: no OIDC sign-in without one */
  readonly oidcIssuer?: string;
  /** @default - the `cairn:oidcClientId` context value */
  readonly oidcClientId?: string;
  /** @default - the `cairn:oidcName` context value, else the issuer's host */
  readonly oidcName?: string;
  /** @default - the `cairn:mailFrom` context value: no e-mail without one */
  readonly mailFrom?: string;
  /** The complete ARN of a secret holding CAIRN_OIDC_CLIENT_SECRET and CAIRN_SMTP_URL. @default - the `cairn:settingsSecretArn` context value, else one the stack makes */
  readonly settingsSecretArn?: string;
}

export interface SignInSettings {
  /** The secret the stack made, when it made one. */
  readonly secret?: Secret;
  /** The ARN the GraphQL function reads, when there is a secret at all. */
  readonly secretArn?: string;
}

/** A complete secret ARN: with the six characters Secrets Manager adds to the name, as IAM matches it exactly. */
const COMPLETE_SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/;

/** Gives `graphql` the sign-in and mail settings the context asks for (nothing when it asks none). */
export function addSignInSettings(stack: Stack, graphql: NodejsFunction, props: SignInSettingsProps = {}): SignInSettings {
  const context = (key: string, prop: string | undefined): string | undefined => {
    const value: unknown = prop ?? stack.node.tryGetContext(`cairn:${key}`);
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw new Error(`cairn:${key} must be a string, got ${JSON.stringify(value)}`);
    return value.trim() === '' ? undefined : value.trim();
  };
  const issuer = context('oidcIssuer', props.oidcIssuer);
  const clientId = context('oidcClientId', props.oidcClientId);
  const name = context('oidcName', props.oidcName);
  const mailFrom = context('mailFrom', props.mailFrom);
  const secretArn = context('settingsSecretArn', props.settingsSecretArn);

  // Checked here as the function would (functions/core/config.ts), so that a wrong value fails the synth, not every request.
  if ((issuer === undefined) !== (clientId === undefined))
    throw new Error('cairn:oidcIssuer and cairn:oidcClientId go together (the client secret goes in the settings secret)');
  if (issuer !== undefined && !/^https:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(issuer))
    throw new Error(`cairn:oidcIssuer must be the provider's https issuer URL, like https://accounts.example.org, got "${issuer}"`);
  if (name !== undefined && (issuer === undefined || /[\u0000-\u001f\u007f]/.test(name) || name.length > 60))
    throw new Error('cairn:oidcName must be one line of at most 60 characters, with cairn:oidcIssuer');
  if (mailFrom !== undefined && !/^[^@\s<>]+@[^@\s<>]+$|^[^<>\r\n]*<[^@\s<>]+@[^@\s<>]+>$/.test(mailFrom))
    throw new Error(`cairn:mailFrom must be an address, or a name and <address>, got "${mailFrom}"`);
  if (secretArn !== undefined && !COMPLETE_SECRET_ARN.test(secretArn))
    throw new Error(
      `cairn:settingsSecretArn must be a secret's complete ARN (ending in the six characters Secrets Manager adds, as describe-secret prints it), got "${secretArn}"`,
    );
  if (issuer === undefined && mailFrom === undefined && secretArn === undefined) return {};

  if (issuer !== undefined) {
    graphql.addEnvironment('CAIRN_OIDC_ISSUER', issuer);
    graphql.addEnvironment('CAIRN_OIDC_CLIENT_ID', clientId!);
    if (name !== undefined) graphql.addEnvironment('CAIRN_OIDC_NAME', name);
  }
  if (mailFrom !== undefined) graphql.addEnvironment('CAIRN_MAIL_FROM', mailFrom);

  let secret: Secret | undefined;
  if (secretArn === undefined) {
    secret = new Secret(stack, 'SettingsSecret', {
      description: `Cairn: the settings that are secrets, a JSON object with ${SECRET_SETTINGS.join(' and ')}, filled by the operator (docs/aws.md)`,
      // Not a secret: the empty object the operator replaces (functions/aws/settings-secret.ts reads it as "nothing set yet").
      secretStringValue: SecretValue.unsafePlainText(SETTINGS_SECRET_PLACEHOLDER),
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        "The secret holds the OIDC provider's client secret and the SMTP server's URL, issued by those services: Secrets Manager cannot rotate them; the operator replaces the value when the provider or mail server issues new ones",
    });
    new CfnOutput(stack, SETTINGS_SECRET_OUTPUT, {
      description:
        'The secret holding the OIDC client secret and the SMTP URL: fill it with aws secretsmanager put-secret-value --secret-id <this ARN> (docs/aws.md)',
      value: secret.secretArn,
    });
  }
  const arn = secret?.secretArn ?? secretArn!;
  graphql.addEnvironment(SETTINGS_SECRET_VARIABLE, arn);
  // Reading the value, of this secret only: not DescribeSecret, not its versions' list, not another secret.
  graphql.addToRolePolicy(new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [arn] }));
  return { secret, secretArn: arn };
}
