/**
 * Everything Cairn keeps: the DynamoDB tables (generated from the shared
 * definitions in functions/core/data/tables.ts, the same ones the local
 * server creates), the S3 bucket holding IPFS blocks and the node's
 * datastore, and the KMS key that seals storage secrets at rest.
 *
 * All of it outlives the stack: deleting the stack leaves the tables, the
 * bucket and the key in the account (RemovalPolicy.RETAIN), and the tables
 * also refuse a DeleteTable until their deletion protection is turned off.
 * The tables keep 35 days of point-in-time recovery. docs/operations.md
 * says how to remove them deliberately.
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Key } from 'aws-cdk-lib/aws-kms';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { DEPLOY_BUILDS_PREFIX } from '../functions/deploy-worker/limits.js';
import { PART_STAGING_PREFIX } from '../functions/core/ports/staged-parts.js';
import { KEY_ATTRIBUTES, TABLES, indexKeys, type TableName } from '../functions/core/data/tables.js';

/** `accounts` → `Accounts`: construct ids and output names. */
export function pascal(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

export class CairnData extends Construct {
  /** One table per entry of TABLES, by logical name. */
  readonly tables: Record<TableName, Table>;
  /** IPFS blocks and the IPFS datastore. */
  readonly blockBucket: Bucket;
  /** Seals storage secrets (secret access keys) at rest. */
  readonly secretsKey: Key;

  constructor(scope: Construct, id: string) {
    super(scope, id);

    const tables: Partial<Record<TableName, Table>> = {};
    for (const spec of TABLES) {
      const table = new Table(this, `${pascal(spec.name)}Table`, {
        partitionKey: { name: KEY_ATTRIBUTES.pk, type: AttributeType.STRING },
        sortKey: { name: KEY_ATTRIBUTES.sk, type: AttributeType.STRING },
        billingMode: BillingMode.PAY_PER_REQUEST,
        encryption: TableEncryption.AWS_MANAGED,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        // A table is the only copy of accounts, keys, objects' records and deploys:
        // DeleteTable is refused (from the console, the CLI or a stack change) until this is turned off.
        deletionProtection: true,
        removalPolicy: RemovalPolicy.RETAIN,
        ...(spec.ttlAttribute ? { timeToLiveAttribute: spec.ttlAttribute } : {}),
      });
      for (const index of spec.indexes) {
        const keys = indexKeys(index);
        table.addGlobalSecondaryIndex({
          indexName: index,
          partitionKey: { name: keys.pk, type: AttributeType.STRING },
          sortKey: { name: keys.sk, type: AttributeType.STRING },
          projectionType: ProjectionType.ALL,
        });
      }
      tables[spec.name] = table;
    }
    this.tables = tables as Record<TableName, Table>;

    this.blockBucket = new Bucket(this, 'BlockBucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        // A deploy's build files are removed when it ends; these catch those of a worker that died first.
        { id: 'DeployBuildFiles', prefix: DEPLOY_BUILDS_PREFIX, expiration: Duration.days(7) },
        // Parts staged around the S3 function are removed when their upload is completed or aborted; these catch
        // the rest (a refused Complete's, an upload never ended). A part of an upload still open after a week
        // must be sent again: the Complete answers InvalidPart for it.
        { id: 'StagedParts', prefix: PART_STAGING_PREFIX, expiration: Duration.days(7) },
      ],
    });
    Validations.of(this.blockBucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        "Only Cairn's functions and its build project read and write the block bucket, and each function logs one line per request (with its request id) in its own log group; S3 server access logs would add a log object per block request to a bucket of small blocks",
    });

    this.secretsKey = new Key(this, 'SecretsKey', {
      description: 'Cairn: seals storage secrets at rest',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}
