/**
 * cdk-nag (AwsSolutions-IAM5) flags the wildcards CDK's own grants write:
 * a table grant covers `<table>/index/*` (the table's own indexes), a
 * bucket grant `<bucket>/*` (its objects) with `s3:GetObject*`-style
 * action groups, a function's invoke grant `<function>:*` (its versions).
 * Each is acknowledged on the one function holding it, beside the grant,
 * naming the exact finding, so a wildcard on anything else still fails the
 * checks (test/infra/nag.test.ts). X-Ray's `*` is acknowledged in
 * lib/functions.ts.
 */
import { type CfnElement, Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IConstruct } from 'constructs';

/** `<LogicalId>` as cdk-nag writes a resource in a finding (`<DataAccountsTable816B83C6.Arn>`). */
export function nagRef(construct: IConstruct): string {
  const stack = Stack.of(construct);
  return stack.resolve(stack.getLogicalId(construct.node.defaultChild as CfnElement)) as string;
}

/** Acknowledges one IAM5 finding (`Resource::...` or `Action::...`) on `scope`. */
export function acknowledgeWildcard(scope: IConstruct, finding: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[${finding}]`, reason });
}

/** The `<table>/index/*` of each table granted to `grantee`. */
export function acknowledgeTableGrants(grantee: IConstruct, granted: readonly ITable[]): void {
  for (const table of granted) {
    acknowledgeWildcard(
      grantee,
      `Resource::<${nagRef(table)}.Arn>/index/*`,
      "CDK's table grant covers that table's own global secondary indexes, which Cairn's queries use, and no other table",
    );
  }
}

/** The objects and action groups of a read or read/write grant on the block bucket. */
export function acknowledgeBucketGrant(grantee: IConstruct, blockBucket: IBucket, mode: 'read' | 'readWrite'): void {
  const reason =
    mode === 'read'
      ? "CDK's read grant on the block bucket: its objects (IPFS blocks and the datastore) and listing, on that one bucket only"
      : "CDK's read/write grant on the block bucket: its objects (IPFS blocks, the datastore, deploy logs and build files), listing and aborting multipart uploads, on that one bucket only";
  acknowledgeWildcard(grantee, `Resource::<${nagRef(blockBucket)}.Arn>/*`, reason);
  for (const action of ['s3:GetObject*', 's3:GetBucket*', 's3:List*', ...(mode === 'readWrite' ? ['s3:DeleteObject*', 's3:Abort*'] : [])]) {
    acknowledgeWildcard(grantee, `Action::${action}`, reason);
  }
}
