/** The GraphQL API's small parts on their own: DateTime, page sizes and tokens, the limits, its configuration. */
import { randomBytes } from 'node:crypto';
import { buildSchema, parse, validate, specifiedRules } from 'graphql';
import { loadConfig } from '../../functions/core/config.js';
import { LIMITS, limitRules } from '../../functions/graphql/limits.js';
import { PageTokens, pageSize } from '../../functions/graphql/pagination.js';
import { DateTime, parseDateTime } from '../../functions/graphql/scalars.js';
import { loadTypeDefs } from '../../functions/graphql/schema.js';

describe('DateTime', () => {
  test('serializes as ISO-8601 UTC with milliseconds', () => {
    expect(DateTime.serialize('2024-05-01T12:00:00Z')).toBe('2024-05-01T12:00:00.000Z');
    expect(DateTime.serialize(new Date(Date.UTC(2024, 4, 1, 12, 0, 0, 7)))).toBe('2024-05-01T12:00:00.007Z');
    expect(() => DateTime.serialize('yesterday')).toThrow();
  });

  test.each(['2024-05-01T12:00:00.000Z', '2024-05-01T12:00:00Z', '2024-02-29T23:59:59.9Z'])('accepts %s', (value) => {
    expect(parseDateTime(value).toISOString()).toBe(new Date(value).toISOString());
  });

  test.each([
    '2024-05-01',
    '2024-05-01T12:00:00',
    '2024-05-01T12:00:00+02:00',
    '2024-05-01 12:00:00Z',
    '2023-02-29T00:00:00Z',
    '2024-04-31T00:00:00Z',
    '2024-05-01T24:00:00Z',
    '2024-05-01T12:00:00.0000Z',
    'May 1, 2024',
    '',
  ])('refuses %p as BAD_USER_INPUT', (value) => {
    expect(() => parseDateTime(value)).toThrow(expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }) }));
  });

  test('refuses non-strings', () => {
    for (const value of [1714564800000, null, {}, true]) expect(() => parseDateTime(value)).toThrow();
  });
});

describe('page sizes and tokens', () => {
  test('limit: 20 by default, capped at 100, positive integers only', () => {
    expect(pageSize(undefined)).toBe(20);
    expect(pageSize(null)).toBe(20);
    expect(pageSize(1)).toBe(1);
    expect(pageSize(100)).toBe(100);
    expect(pageSize(5000)).toBe(100);
    for (const bad of [0, -1]) expect(() => pageSize(bad)).toThrow(expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'limit' }) }));
  });

  const tokens = new PageTokens(randomBytes(32));
  const listing = { query: 'getDeploysBySite', args: { siteId: 'site-1' } };

  test('a token reads back to its position, for its own listing only', () => {
    const token = tokens.issue(listing, 'deploy-42');
    expect(tokens.read(listing, token)).toBe('deploy-42');
    expect(tokens.read(listing, undefined)).toBeUndefined();
    expect(() => tokens.read({ ...listing, args: { siteId: 'site-2' } }, token)).toThrow(/another listing/);
    expect(() => tokens.read({ query: 'getSitesByTeam', args: { siteId: 'site-1' } }, token)).toThrow(/another listing/);
  });

  test('any change to a token, or another key\'s token, is refused', () => {
    const token = tokens.issue(listing, 'deploy-42');
    const [payload, mac] = token.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ q: listing.query, a: listing.args, p: 'deploy-99' })).toString('base64url');
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    for (const bad of [
      `${forged}.${mac}`,
      `${flip(payload, 3)}.${mac}`,
      `${payload}.${flip(mac, 5)}`,
      `${payload}.${mac.slice(0, -2)}`,
      payload,
      `${token}.x`,
      '',
      'not a token',
      'x'.repeat(5000),
      new PageTokens(randomBytes(32)).issue(listing, 'deploy-42'),
    ]) {
      expect(() => tokens.read(listing, bad)).toThrow(expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'nextToken' }) }));
    }
  });
});

describe('limits', () => {
  const schema = buildSchema(loadTypeDefs());
  const check = (query: string) => validate(schema, parse(query), [...specifiedRules, ...limitRules]).map((e) => e.message);

  test('fragments count where they are spread, and cycles do not hang the walk', () => {
    const fields = 'id name slug createdAt';
    const spread = Array.from({ length: 25 }, (_, i) => `s${i}: getSiteById(siteId: "x") { ...F }`).join(' ');
    expect(check(`{ ${spread} } fragment F on Site { ${fields} }`)).toEqual([expect.stringContaining('Number of aliases 25')]);
    expect(check('{ getCurrentTeam { ...A } } fragment A on Team { ...B } fragment B on Team { ...A }').length).toBeGreaterThan(0);
  });

  test("a page multiplies the cost of what is under it (a page of 100 deploys like this costs 811)", () => {
    const deep = 'deploys { id status repository { commit branch owner name message } }';
    expect(check(`{ getDeploysBySite(siteId: "x", limit: 100) { ${deep} } }`)).toEqual([]);
    const many = Array.from({ length: 13 }, (_, i) => `d${i}: getDeploysBySite(siteId: "x", limit: 100) { ${deep} }`).join(' ');
    expect(check(`{ ${many} }`)).toEqual([expect.stringContaining(`exceeds the limit of ${LIMITS.cost}`)]);
    const small = Array.from({ length: 13 }, (_, i) => `d${i}: getDeploysBySite(siteId: "x", limit: 5) { ${deep} }`).join(' ');
    expect(check(`{ ${small} }`)).toEqual([]);
  });
});

describe('configuration', () => {
  test('introspection is on locally and off in AWS unless CAIRN_GRAPHQL_INTROSPECTION turns it on', () => {
    expect(loadConfig({}).graphql).toEqual({ introspection: true, playground: true, playgroundDir: undefined });
    expect(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'graphql' }).graphql.introspection).toBe(false);
    expect(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'graphql', CAIRN_GRAPHQL_INTROSPECTION: 'true' }).graphql.introspection).toBe(true);
    expect(loadConfig({ CAIRN_GRAPHQL_INTROSPECTION: 'false', CAIRN_GRAPHQL_PLAYGROUND: '0' }).graphql).toMatchObject({ introspection: false, playground: false });
    expect(() => loadConfig({ CAIRN_GRAPHQL_INTROSPECTION: 'maybe' })).toThrow('CAIRN_GRAPHQL_INTROSPECTION: must be true or false, got "maybe"');
  });
});

describe('limits on documents built to blow up', () => {
  const schema = buildSchema(loadTypeDefs());
  const check = (query: string) => validate(schema, parse(query), [...specifiedRules, ...limitRules]).map((e) => e.message);

  test('fragments spreading fragments twice over, 40 deep, are measured in their size (fast), and refused for their 2^40 expansion', () => {
    const fragments = Array.from({ length: 40 }, (_, i) => `fragment F${i} on Team { ...F${i + 1} ...F${i + 1} }`).join('\n');
    const started = Date.now();
    const errors = check(`{ getCurrentTeam { ...F0 } } ${fragments} fragment F40 on Team { id }`);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(errors).toEqual([expect.stringMatching(/^Query cost \d+ exceeds the limit of 10000$/)]);
  });
});
