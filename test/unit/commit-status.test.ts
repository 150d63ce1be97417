/** What a commit status says, and what a git host's answer means for it (functions/core/hosting/commit-status.ts). */
import {
  commitStatusOf,
  commitStatusRequest,
  statusAnswerOf,
  MAX_DESCRIPTION,
  type StatusTarget,
} from '../../functions/core/hosting/commit-status.js';
import type { Deploy } from '../../functions/core/data/deploys.js';

const TOKEN = 'ghp_unit0123456789';
const github: StatusTarget = {
  repository: 'https://github.com/acme/site',
  api: { kind: 'github', baseUrl: 'https://api.github.com' },
  hostName: 'GitHub',
  owner: 'acme',
  name: 'site',
};
const gitlab: StatusTarget = {
  repository: 'https://gitlab.com/g/sub/site',
  api: { kind: 'gitlab', baseUrl: 'https://gitlab.com/api/v4' },
  hostName: 'GitLab',
  owner: 'g/sub',
  name: 'site',
};
const SHA = 'a'.repeat(40);
const at = { site: 'https://s.example', deploy: 'https://d--s.example', app: 'https://api.example/#/sites/x/deploys/d' };
const deploy = { id: 'd', siteId: 'x', status: 'FAILED', preview: false, reason: 'r' } as unknown as Deploy;

test.each([
  [{ statusCode: 201 }, { posted: true }],
  [{ statusCode: 502, answer: '<html>bad gateway</html>' }, { retry: 'GitHub answered 502 (<html>bad gateway</html>)' }],
  [{ statusCode: 429 }, { retry: 'GitHub answered 429' }],
  [
    { statusCode: 403, answer: '{"message":"API rate limit exceeded for installation"}' },
    { retry: 'GitHub answered 403 (API rate limit exceeded for installation)' },
  ],
  [{ error: 'no answer within 5 s' }, { retry: 'no answer within 5 s' }],
  [
    { statusCode: 404, answer: '{"message":"Not Found"}' },
    {
      refused:
        'Commit status not set: GitHub answered 404 (Not Found); the token needs commit statuses: write (a classic token: the repo:status scope) on acme/site',
    },
  ],
  [
    { statusCode: 422, answer: '{"message":"No commit found for SHA"}' },
    { refused: 'Commit status not set: GitHub answered 422 (No commit found for SHA)' },
  ],
])('GitHub answering %j: %j', (result, expected) => {
  expect(statusAnswerOf(github, result, TOKEN)).toEqual(expected);
});

test("a host's words never carry the token back, and GitLab's hint names its scope", () => {
  const answer = statusAnswerOf(gitlab, { statusCode: 401, answer: JSON.stringify({ message: `401 Unauthorized: ${TOKEN}` }) }, TOKEN);
  expect(answer).toEqual({
    refused:
      'Commit status not set: GitLab answered 401 (401 Unauthorized: [token]); the token needs the api scope and at least the Developer role on g/sub/site',
  });
});

test('GitLab: the project by its encoded path, its own state names, the token in PRIVATE-TOKEN only', () => {
  const status = commitStatusOf('CANCELLED', deploy, gitlab.repository, SHA, at, '2026-01-01T00:00:00.000Z  Cancelled: superseded by e');
  const request = commitStatusRequest(gitlab, status, TOKEN);
  expect(request.url).toBe(`https://gitlab.com/api/v4/projects/g%2Fsub%2Fsite/statuses/${SHA}`);
  expect(JSON.parse(request.body)).toEqual({
    state: 'canceled',
    target_url: at.app,
    description: 'Cancelled: superseded by e',
    name: 'cairn/deploy',
  });
  expect(request.headers['private-token']).toBe(TOKEN);
  expect(request.headers.authorization).toBeUndefined();
  expect(request.body).not.toContain(TOKEN);
});

test(`a failure's description is its log's last line, at most ${MAX_DESCRIPTION} characters`, () => {
  const long = `2026-01-01T00:00:00.000Z  Failed: ${'x'.repeat(300)}`;
  const status = commitStatusOf('FAILED', deploy, github.repository, SHA, at, long);
  expect(status.description).toHaveLength(MAX_DESCRIPTION);
  expect(status.description.startsWith('Failed: xxx')).toBe(true);
  expect(status.description.endsWith('…')).toBe(true);
  expect(commitStatusOf('FAILED', deploy, github.repository, SHA, at).description).toBe('Failed: r');
  expect(JSON.parse(commitStatusRequest(github, status, TOKEN).body).state).toBe('failure');
});
