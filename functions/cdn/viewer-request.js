import cf from 'cloudfront';

// The viewer-request function of the sites' CloudFront distribution
// (lib/site-cdn.ts), in CloudFront Functions' JavaScript runtime 2.0 (ES 5.1
// with const, let, template literals and async/await: nothing newer).
//
// The gateway behind the distribution is a Lambda Function URL, which
// answers only to its own Host, so the viewer's host cannot reach it.
// Instead the host's leftmost label names the site here:
//   <slug>.<sites domain>             -> /sites/<siteId><path>
//   <deployId>--<slug>.<sites domain> -> /previews/<siteId>/<deployId><path>
// the site id read from the KeyValueStore associated with this function
// (slug -> site id, kept by the API where sites change). The rewritten URI
// is the cache key, so every site's answers live under its own prefix and a
// purge invalidates /sites/<siteId>/* alone. The query string is left as it
// came (the cache policy keys on it and passes it on).
//
// An unknown host is answered here with 404, and a path with a `.` or `..`
// segment (however encoded) with 400: browsers never send one, and nothing
// between here and the gateway may resolve it across the site prefix.
//
// The same file serves sites' own domains from the multi-tenant
// distribution (a tenant per domain), with BY_DOMAIN set true by the stack:
// there the whole host is the key (a domain has dots, a slug never does),
// its value the site's id, or `>` and the primary domain of an apex/`www`
// pair to answer with a 301 to (path and query kept).

const BY_DOMAIN = false;

const hostMap = cf.kvs();

const SITE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// A deploy id as a host gives it: DNS lowercases the 22 characters.
const DEPLOY_LABEL = /^[0-9a-z]{22}$/;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const DOMAIN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

function reply(statusCode, statusDescription, text) {
  return {
    statusCode: statusCode,
    statusDescription: statusDescription,
    headers: {
      'content-type': { value: 'text/plain; charset=utf-8' },
      'cache-control': { value: 'no-store' },
      'x-content-type-options': { value: 'nosniff' },
    },
    body: text,
  };
}

// The Host's leftmost label, lowercased, without a port or a trailing dot;
// '' for a name of one label or an IP literal.
function hostLabel(host) {
  let name = host.trim().toLowerCase();
  if (name.charAt(0) === '[') return '';
  const colon = name.lastIndexOf(':');
  if (colon >= 0) name = name.slice(0, colon);
  if (name.charAt(name.length - 1) === '.') name = name.slice(0, name.length - 1);
  const dot = name.indexOf('.');
  return dot > 0 ? name.slice(0, dot) : '';
}

// Whether the path has a `.` or `..` segment (`%2e%2e`, `..%2f` and `\` too),
// a NUL, or an escape that does not decode.
function climbs(uri) {
  let path;
  try {
    path = decodeURIComponent(uri);
  } catch (e) {
    return true;
  }
  if (path.indexOf('\u0000') >= 0) return true;
  const segments = path.split(/[/\\]/);
  for (let i = 0; i < segments.length; i++) {
    if (segments[i] === '.' || segments[i] === '..') return true;
  }
  return false;
}

// The Host lowercased, without a port or a trailing dot.
function hostName(host) {
  let name = host.trim().toLowerCase();
  const colon = name.lastIndexOf(':');
  if (colon >= 0 && name.charAt(0) !== '[') name = name.slice(0, colon);
  if (name.charAt(name.length - 1) === '.') name = name.slice(0, name.length - 1);
  return name;
}

// The query string as it came (CloudFront hands its parts over as received).
function queryOf(querystring) {
  const parts = [];
  for (const key in querystring) {
    const entry = querystring[key];
    const values = entry.multiValue ? entry.multiValue : [entry];
    for (let i = 0; i < values.length; i++) parts.push(values[i].value === '' ? key : `${key}=${values[i].value}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

async function byDomain(request) {
  const name = hostName(request.headers.host ? request.headers.host.value : '');
  let value = '';
  try {
    value = await hostMap.get(name);
  } catch (e) {
    // Not an active domain of any site.
  }
  if (value.charAt(0) === '>' && DOMAIN.test(value.slice(1))) {
    return {
      statusCode: 301,
      statusDescription: 'Moved Permanently',
      headers: {
        location: { value: `https://${value.slice(1)}${request.uri}${queryOf(request.querystring)}` },
        'cache-control': { value: 'public, max-age=300' },
      },
    };
  }
  if (!SITE_ID.test(value)) return reply(404, 'Not Found', 'Not Found: no site answers at this address\n');
  if (climbs(request.uri)) return reply(400, 'Bad Request', 'Bad Request: the path leaves the site\n');
  request.uri = `/sites/${value}${request.uri}`;
  return request;
}

async function handler(event) {
  const request = event.request;
  if (BY_DOMAIN) return byDomain(request);
  let slug = hostLabel(request.headers.host ? request.headers.host.value : '');
  let deploy = '';
  // A slug may itself hold "--": only a deploy id's shape before it makes the label a deploy's.
  const split = slug.indexOf('--');
  if (split > 0 && DEPLOY_LABEL.test(slug.slice(0, split))) {
    deploy = slug.slice(0, split);
    slug = slug.slice(split + 2);
  }
  if (!SLUG.test(slug)) return reply(404, 'Not Found', 'Not Found: no site answers at this address\n');
  if (climbs(request.uri)) return reply(400, 'Bad Request', 'Bad Request: the path leaves the site\n');
  let siteId = '';
  try {
    siteId = await hostMap.get(slug);
  } catch (e) {
    // No such key: no site has this slug (or had it a moment ago).
  }
  if (!SITE_ID.test(siteId)) return reply(404, 'Not Found', 'Not Found: no site answers at this address\n');
  request.uri = deploy ? `/previews/${siteId}/${deploy}${request.uri}` : `/sites/${siteId}${request.uri}`;
  return request;
}
