/**
 * The first account on deploy: a custom resource whose handler
 * (functions/first-account/handler.ts) makes the first account, its team,
 * default bucket, storage key pair and GraphQL API key on the first deploy,
 * never again and never over an existing one, and puts the credentials into
 * a Secrets Manager secret this construct creates (encrypted with the
 * stack's KMS key; its ARN is the `FirstAccountSecretArn` output). It also
 * outputs `SecretsKeyId`, the key `npm run admin` seals more accounts'
 * storage secrets with.
 *
 * The secret is retained when the stack is deleted, as the tables are: it
 * holds the only copy of the account's API key. Deleting the custom resource
 * removes nothing.
 *
 * The handler gets exactly what making an account takes: reading and
 * writing items of the accounts table (GetItem, PutItem: the account's
 * transaction is made of puts), sealing the storage secret with the KMS key
 * (Encrypt), and reading and writing the secret's value (GetSecretValue,
 * PutSecretValue, with the key's Decrypt and GenerateDataKey only through
 * Secrets Manager).
 */
import { type CfnElement, CfnOutput, CustomResource, Duration, RemovalPolicy, SecretValue, Stack, Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Provider } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { DEFAULT_ACCOUNT } from '../functions/core/bootstrap.js';
import { PENDING_VALUE } from '../functions/first-account/secret-value.js';
import type { CairnData } from './data.js';
import { CairnFunction } from './functions.js';

/** The output holding the secret's ARN (its logical id is fixed: the README names it). */
export const FIRST_ACCOUNT_SECRET_OUTPUT = 'FirstAccountSecretArn';
/** The output naming the KMS key storage secrets are sealed with: `npm run admin` needs it as CAIRN_KMS_KEY_ID. */
export const SECRETS_KEY_OUTPUT = 'SecretsKeyId';

export interface FirstAccountProps {
  /** The accounts table the account is made in and the KMS key sealing its storage secret (and encrypting the secret). */
  readonly data: Pick<CairnData, 'tables' | 'secretsKey'>;
  /**
   * The first account's name; its bucket is `<name>-bucket`.
   * @default 'default' (as `npm start` names its first account)
   */
  readonly accountName?: string;
  /** Endpoints stored in the secret beside the credentials, as the first deploy knows them. */
  readonly endpoints?: {
    readonly storageEndpoint?: string;
    readonly graphqlUrl?: string;
    readonly gatewayUrl?: string;
  };
  /** @default 'info' */
  readonly logLevel?: string;
}

export class FirstAccount extends Construct {
  readonly function: NodejsFunction;
  readonly secret: Secret;
  readonly provider: Provider;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: FirstAccountProps) {
    super(scope, id);
    const { tables, secretsKey } = props.data;
    const region = Stack.of(this).region;

    this.secret = new Secret(this, 'Secret', {
      description:
        "Cairn: the first account's credentials (access key id, secret access key, GraphQL API key), written once on the first deploy",
      encryptionKey: secretsKey,
      // Not a secret: the placeholder the handler replaces. It must never change (see PENDING_VALUE).
      secretStringValue: SecretValue.unsafePlainText(PENDING_VALUE),
      // The only copy of the account's API key: kept, as the tables are, when the stack goes.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        "The secret holds Cairn's own credentials, which Secrets Manager cannot rotate: they are replaced through Cairn (createApiKey/revokeApiKey, storage key pairs), and the secret is a one-time hand-over",
    });

    this.function = new CairnFunction(this, 'Handler', {
      name: 'first-account',
      description: 'Cairn: makes the first account on the first deploy (custom resource)',
      memorySize: 256,
      timeout: Duration.minutes(1),
      environment: {
        CAIRN_ACCOUNTS_TABLE: tables.accounts.tableName,
        CAIRN_KMS_KEY_ID: secretsKey.keyId,
        CAIRN_LOG_LEVEL: props.logLevel ?? 'info',
      },
    }).function;

    // The table alone, not its indexes (Table.grant would add them).
    this.function.addToRolePolicy(
      new PolicyStatement({ actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], resources: [tables.accounts.tableArn] }),
    );
    secretsKey.grant(this.function, 'kms:Encrypt');
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ['secretsmanager:GetSecretValue', 'secretsmanager:PutSecretValue'],
        resources: [this.secret.secretArn],
      }),
    );
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: [secretsKey.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${region}.amazonaws.com` } },
      }),
    );

    this.provider = new Provider(this, 'Provider', {
      onEventHandler: this.function,
      logGroup: new LogGroup(this, 'ProviderLogs', { retention: RetentionDays.ONE_MONTH }),
    });

    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: this.provider.serviceToken,
      resourceType: 'Custom::CairnFirstAccount',
      // A run takes seconds; a broken one fails the deploy in minutes, not CloudFormation's default hour.
      serviceTimeout: Duration.minutes(10),
      properties: {
        SecretArn: this.secret.secretArn,
        AccountName: props.accountName ?? DEFAULT_ACCOUNT,
        ...definedOnly({
          StorageEndpoint: props.endpoints?.storageEndpoint,
          GraphqlUrl: props.endpoints?.graphqlUrl,
          GatewayUrl: props.endpoints?.gatewayUrl,
        }),
      },
    });
    // The handler runs only once its role may do what it does.
    this.resource.node.addDependency(this.function.role!);

    const output = new CfnOutput(this, 'SecretArn', {
      description:
        "The first account's credentials: aws secretsmanager get-secret-value --secret-id <this ARN> --query SecretString --output text",
      value: this.secret.secretArn,
    });
    output.overrideLogicalId(FIRST_ACCOUNT_SECRET_OUTPUT);
    // More accounts are made with `npm run admin`, which seals their storage secrets with this key as the functions do.
    new CfnOutput(this, 'SecretsKeyId', {
      description:
        'The KMS key sealing storage secrets: CAIRN_KMS_KEY_ID for npm run admin (with CAIRN_ACCOUNTS_TABLE set to AccountsTableName)',
      value: secretsKey.keyId,
    }).overrideLogicalId(SECRETS_KEY_OUTPUT);

    // cdk-nag: the managed basic execution role only lets a function write its own logs.
    const basicExecutionRole = 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]';
    Validations.of(this.function).acknowledge({
      id: basicExecutionRole,
      reason: 'The handler writes its logs with the managed basic execution role (CloudWatch Logs only)',
    });
    // The provider framework's own function and role are CDK's construct.
    const handlerLogicalId = Stack.of(this).resolve(Stack.of(this).getLogicalId(this.function.node.defaultChild as CfnElement)) as string;
    Validations.of(this.provider).acknowledge(
      {
        id: basicExecutionRole,
        reason: "The CDK provider framework's function writes its logs with the managed basic execution role (CloudWatch Logs only)",
      },
      {
        id: `AwsSolutions-IAM5[Resource::<${handlerLogicalId}.Arn>:*]`,
        reason: 'The provider framework may invoke any version of the handler function, and no other function',
      },
    );
  }
}

function definedOnly(values: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''));
}
