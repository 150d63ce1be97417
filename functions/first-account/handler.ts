/**
 * Lambda door of the first-account custom resource (lib/first-account.ts),
 * called by the CDK provider framework with CloudFormation's event; what it
 * returns, the framework answers CloudFormation with.
 *
 *   Create, Update  make the first account unless it exists (first-account.ts)
 *   Delete          nothing: the tables are retained and so is the secret
 *
 * The physical id is fixed at Create (`first-account:<name>`) and given back
 * unchanged afterwards, so CloudFormation never sees a replacement. Data
 * holds names only: the provider framework logs what this returns, and the
 * credentials are only ever in the secret.
 */
import { sourceMappedStacks } from '../aws/source-mapped-stacks.js';
import middy from '@middy/core';
import type { CdkCustomResourceEvent, CdkCustomResourceResponse } from 'aws-lambda';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { loadConfig, type Config } from '../core/config.js';
import { onceUntilFailure } from '../core/once-until-failure.js';
import { createLogger, type Logger } from '../core/logger.js';
import { createDatabase } from '../core/data/dynamo.js';
import { AccountStore } from '../core/data/accounts.js';
import { AccountLinkStore } from '../core/data/account-links.js';
import { StorageKeyStore } from '../core/data/storage-keys.js';
import { createSealer } from '../aws/kms-sealer.js';
import { ensureFirstAccount } from './first-account.js';
import { secretsManagerStore } from '../aws/secrets-manager.js';

// Stack traces in the sources' lines, the map read only when one is printed (lib/functions.ts says why).
sourceMappedStacks();

/** The custom resource's properties (lib/first-account.ts sets them). */
export interface FirstAccountProperties {
  ServiceToken: string;
  SecretArn: string;
  AccountName: string;
  StorageEndpoint?: string;
  GraphqlUrl?: string;
  GatewayUrl?: string;
}

export interface FirstAccountData {
  AccountName: string;
  DefaultBucket: string;
  SecretArn: string;
  /** `created` or `exists`. */
  Outcome: string;
  /** `true` when the secret holds the account's credentials. */
  SecretHoldsCredentials: string;
}

export const physicalIdOf = (accountName: string): string => `first-account:${accountName}`;

interface Ready {
  config: Config;
  logger: Logger;
  accounts: AccountStore;
  links: AccountLinkStore;
  secrets: SecretsManagerClient;
}

/** Built on the first event; built again after a failure (see onceUntilFailure). */
const ready = onceUntilFailure(async (): Promise<Ready> => {
  const config = loadConfig();
  if (config.runtime === 'aws' && !config.kmsKeyId && !config.secretKey) {
    throw new Error("CAIRN_KMS_KEY_ID is not set: storage secrets must be sealed with the stack's key");
  }
  const db = createDatabase(config);
  const accounts = new AccountStore(db, new StorageKeyStore(db, await createSealer(config)));
  return {
    config,
    logger: createLogger(config.logLevel, { fn: 'first-account' }),
    accounts,
    links: new AccountLinkStore(db),
    secrets: new SecretsManagerClient({ region: config.region }),
  };
});

export const handler = middy(
  async (
    event: CdkCustomResourceEvent<FirstAccountProperties>,
  ): Promise<CdkCustomResourceResponse<FirstAccountData> | CdkCustomResourceResponse> => {
    const { config, logger, accounts, links, secrets } = await ready();
    const props = event.ResourceProperties ?? ({} as FirstAccountProperties);
    const log = logger.child({ requestType: event.RequestType, requestId: event.RequestId, logicalId: event.LogicalResourceId });

    if (event.RequestType === 'Delete') {
      log.info("delete: nothing is removed (the tables are retained, and so is the secret with the first account's credentials)", {
        secret: props.SecretArn,
      });
      return { PhysicalResourceId: event.PhysicalResourceId };
    }
    if (event.RequestType !== 'Create' && event.RequestType !== 'Update') {
      throw new Error(`unknown request type ${String((event as { RequestType?: unknown }).RequestType)}`);
    }
    if (typeof props.SecretArn !== 'string' || props.SecretArn === '') throw new Error('the custom resource has no SecretArn property');
    const accountName = typeof props.AccountName === 'string' && props.AccountName !== '' ? props.AccountName : 'default';

    const outcome = await ensureFirstAccount(
      accounts,
      secretsManagerStore(secrets, props.SecretArn),
      {
        accountName,
        region: config.region,
        endpoints: { storageEndpoint: props.StorageEndpoint, graphqlUrl: props.GraphqlUrl, gatewayUrl: props.GatewayUrl },
      },
      log,
      undefined,
      links,
    );
    return {
      PhysicalResourceId: event.RequestType === 'Create' ? physicalIdOf(accountName) : event.PhysicalResourceId,
      Data: {
        AccountName: outcome.accountName,
        DefaultBucket: outcome.defaultBucket,
        SecretArn: props.SecretArn,
        Outcome: outcome.outcome,
        SecretHoldsCredentials: String(outcome.secretHoldsCredentials),
      },
    };
  },
);
