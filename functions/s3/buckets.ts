/** Service- and bucket-level operations. */
import type { S3Context } from './context.js';
import { xmlResponse } from './xml.js';

export async function listBuckets(ctx: S3Context): Promise<Response> {
  if (ctx.auth.principal.kind !== 'account') throw new Error('unreachable: ListBuckets needs an account');
  const accountId = ctx.auth.principal.accountId;
  const [buckets, account] = await Promise.all([
    ctx.services.buckets.list(accountId),
    ctx.services.accounts.getAccount(accountId),
  ]);
  return xmlResponse('ListAllMyBucketsResult', {
    Owner: { ID: accountId, DisplayName: account?.name ?? accountId },
    Buckets: { Bucket: buckets.map((b) => ({ Name: b.name, CreationDate: b.createdAt })) },
  });
}

export async function headBucket(ctx: S3Context): Promise<Response> {
  return new Response(null, { status: 200, headers: { 'x-amz-bucket-region': ctx.services.config.region } });
}
