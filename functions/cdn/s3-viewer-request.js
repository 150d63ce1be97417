// The viewer-request function of the storage API's CloudFront distribution
// (lib/part-staging.ts), in CloudFront Functions' JavaScript runtime 2.0
// (ES 5.1 with const, let and template literals: nothing newer).
//
// Behind the distribution is the storage API (API Gateway REST). Its S3
// function takes at most MAX_FUNCTION_BODY bytes a request (a Lambda
// invocation carries 6 MB, the body base64-encoded in it), below the 5 to
// 8 MiB parts S3 clients send by default. So an UploadPart larger than that
// (PUT with partNumber and uploadId, not a copy) is sent to the API's part
// staging resource, /_parts/..., which stores the body in the bucket
// through an S3 integration after a SigV4 authoriser (up to API Gateway's
// 10 MB); CompleteMultipartUpload takes it in from there. No bucket is
// named `_parts` (bucket names are lowercase letters, digits, dots and
// hyphens), so the prefix meets no S3 path. Everything else goes on as it
// came. Content-Length is readable here (read-only headers of viewer
// request events: https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/edge-function-restrictions-all.html).
//
// SigV4 covers the Host the client signed: the distribution's name, not the
// API's, which CloudFront must send to reach API Gateway (the origin request
// policy forwards every viewer header but Host). Host itself is read-only
// here (same page), so the viewer's is passed on as x-cairn-viewer-host,
// and the Authorization header as x-cairn-viewer-authorization: CloudFront
// removes Authorization from origin requests unless a policy forwards it
// (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/http-401-unauthorized.html).
// Both overwrite whatever a viewer sent under those names. A caller who
// reaches the API directly can set them, but only to name what it signed:
// the signature must still verify against them.

const MAX_FUNCTION_BODY = 4194304;

const LENGTH = /^[0-9]{1,15}$/;

function isLargePart(request) {
  if (request.method !== 'PUT') return false;
  const query = request.querystring;
  if (!query.partNumber || !query.uploadId) return false;
  const headers = request.headers;
  if (headers['x-amz-copy-source']) return false;
  const length = headers['content-length'] ? headers['content-length'].value : '';
  return LENGTH.test(length) && Number(length) > MAX_FUNCTION_BODY;
}

function handler(event) {
  const request = event.request;
  const headers = request.headers;
  headers['x-cairn-viewer-host'] = { value: headers.host ? headers.host.value : '' };
  if (headers.authorization) headers['x-cairn-viewer-authorization'] = { value: headers.authorization.value };
  else delete headers['x-cairn-viewer-authorization'];
  if (isLargePart(request)) request.uri = `/_parts${request.uri}`;
  return request;
}
