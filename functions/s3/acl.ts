/**
 * Object ACLs: Cairn stores the two canned ACLs that mean something on IPFS
 * storage, private and public-read. PutObjectAcl takes either the
 * `x-amz-acl` header or an AccessControlPolicy whose grants amount to one.
 */
import type { CannedAcl } from '../core/data/objects.js';
import { aclResponse, owner } from './buckets.js';
import type { S3Context } from './context.js';
import { errors } from './errors.js';
import { cannedAcl } from './put.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';

const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';

export async function getObjectAcl(ctx: S3Context): Promise<Response> {
  const record = await ctx.services.objects.get(ctx.bucket!.name, ctx.s3.key!);
  if (!record) throw errors.noSuchKey(ctx.s3.key!);
  return aclResponse(await owner(ctx, record.ownerId), record.acl === 'public-read');
}

function aclFromPolicy(doc: Record<string, unknown>): CannedAcl {
  const list = (doc.AccessControlList ?? {}) as Record<string, unknown>;
  const grants = (list.Grant as Array<Record<string, unknown>> | undefined) ?? [];
  let publicRead = false;
  for (const grant of grants) {
    const grantee = (grant.Grantee ?? {}) as Record<string, unknown>;
    const permission = grant.Permission;
    if (typeof grantee.URI === 'string') {
      if (grantee.URI !== ALL_USERS || permission !== 'READ') throw errors.notImplemented(`grant of ${String(permission)} to ${grantee.URI}`);
      publicRead = true;
    } else if (permission !== 'FULL_CONTROL') {
      throw errors.notImplemented(`grant of ${String(permission)} to a user (Cairn supports the private and public-read canned ACLs)`);
    }
  }
  return publicRead ? 'public-read' : 'private';
}

export async function putObjectAcl(ctx: S3Context): Promise<Response> {
  const { req } = ctx;
  const body = await readSmallBody(ctx);
  let acl: CannedAcl;
  if (req.headers.has('x-amz-acl')) {
    if (body.length) throw errors.invalidRequest('Specify either the x-amz-acl header or an AccessControlPolicy body, not both.');
    acl = cannedAcl(req.headers);
  } else if (body.length) {
    acl = aclFromPolicy(parseXmlBody(body, 'AccessControlPolicy', ['Grant']));
  } else {
    throw errors.malformedXml();
  }
  if (!(await ctx.services.objects.setAcl(ctx.bucket!.name, ctx.s3.key!, acl))) throw errors.noSuchKey(ctx.s3.key!);
  return new Response(null, { status: 200 });
}
