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
//
// The viewer's address (event.viewer.ip: https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/functions-event-structure.html)
// goes on as x-cairn-viewer-ip, also overwriting what a viewer sent, so that
// a bucket policy's aws:SourceIp is the client's, not CloudFront's. Unlike
// the host, nothing verifies an address, so the API takes it only from a
// request that also carries the distribution's origin header holding the
// stack's edge key (lib/part-staging.ts), which CloudFront adds after this
// function and no viewer knows.

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

// A PutObject the S3 function cannot take would be refused by Lambda before
// the function runs, and API Gateway would answer a bare 5xx, which clients
// retry. It is answered here instead, as S3 answers a body over its limit
// (EntityTooLarge, 400: https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html),
// naming the setting that makes the client send it as a multipart upload.
function isLargePut(request) {
  if (request.method !== 'PUT') return false;
  const query = request.querystring;
  const headers = request.headers;
  if (query.partNumber || query.uploadId || headers['x-amz-copy-source']) return false;
  const length = headers['content-length'] ? headers['content-length'].value : '';
  return LENGTH.test(length) && Number(length) > MAX_FUNCTION_BODY;
}

// A browser upload (POST Object, multipart/form-data to a bucket) is one
// request body too, form and file, with no staging: over the function's
// limit it is answered the same way.
function isLargePost(request) {
  if (request.method !== 'POST') return false;
  const query = request.querystring;
  const headers = request.headers;
  if (query.delete || query.uploads || query.uploadId) return false;
  const type = headers['content-type'] ? headers['content-type'].value.toLowerCase() : '';
  if (type.indexOf('multipart/form-data') !== 0) return false;
  const length = headers['content-length'] ? headers['content-length'].value : '';
  return LENGTH.test(length) && Number(length) > MAX_FUNCTION_BODY;
}

const PUT_ADVICE =
  `One PUT may carry at most ${MAX_FUNCTION_BODY} bytes here; send larger objects as multipart uploads ` +
  `(AWS CLI: multipart_threshold; boto3: TransferConfig(multipart_threshold); rclone: --s3-upload-cutoff; ` +
  `at most ${MAX_FUNCTION_BODY} bytes). Parts of up to 10 MB are taken.`;
const POST_ADVICE =
  `A browser upload (POST) may carry at most ${MAX_FUNCTION_BODY} bytes here, its form included; ` +
  `send larger files as multipart uploads with presigned UploadPart URLs (parts of up to 10 MB are taken).`;

function entityTooLarge(length, message) {
  return {
    statusCode: 400,
    statusDescription: 'Bad Request',
    headers: {
      'content-type': { value: 'application/xml' },
      'x-cairn-max-request-body': { value: String(MAX_FUNCTION_BODY) },
    },
    body:
      '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>EntityTooLarge</Code>' +
      `<Message>${message}</Message><ProposedSize>${length}</ProposedSize>` +
      `<MaxSizeAllowed>${MAX_FUNCTION_BODY}</MaxSizeAllowed></Error>`,
  };
}

function handler(event) {
  const request = event.request;
  const headers = request.headers;
  if (isLargePut(request)) return entityTooLarge(headers['content-length'].value, PUT_ADVICE);
  if (isLargePost(request)) return entityTooLarge(headers['content-length'].value, POST_ADVICE);
  headers['x-cairn-viewer-host'] = { value: headers.host ? headers.host.value : '' };
  headers['x-cairn-viewer-ip'] = { value: event.viewer && event.viewer.ip ? String(event.viewer.ip) : '' };
  if (headers.authorization) headers['x-cairn-viewer-authorization'] = { value: headers.authorization.value };
  else delete headers['x-cairn-viewer-authorization'];
  if (isLargePart(request)) request.uri = `/_parts${request.uri}`;
  return request;
}
