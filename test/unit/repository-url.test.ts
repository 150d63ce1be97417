/** Reading a site's repository URL: what is cloned, and the owner and name a deploy shows. */
import { parseRepositoryUrl, RepositoryUrlError } from '../../functions/core/hosting/repository-url.js';

test.each([
  ['https://github.com/acme/site', 'https://github.com/acme/site', 'github.com', 'acme', 'site'],
  ['https://github.com/acme/site.git', 'https://github.com/acme/site.git', 'github.com', 'acme', 'site'],
  ['https://github.com/acme/site/', 'https://github.com/acme/site', 'github.com', 'acme', 'site'],
  ['https://github.com/acme/site.git/', 'https://github.com/acme/site.git', 'github.com', 'acme', 'site'],
  ['http://127.0.0.1:8080/acme/site.git', 'http://127.0.0.1:8080/acme/site.git', '127.0.0.1:8080', 'acme', 'site'],
  ['https://gitlab.com/group/sub/site.git', 'https://gitlab.com/group/sub/site.git', 'gitlab.com', 'group/sub', 'site'],
  ['  https://GitHub.com/Acme/My.Site  ', 'https://github.com/Acme/My.Site', 'github.com', 'Acme', 'My.Site'],
  ['https://example.com/git/acme/caf%C3%A9.git', 'https://example.com/git/acme/caf%C3%A9.git', 'example.com', 'git/acme', 'café'],
])('%s is cloned from %s: host %s, owner %s, name %s', (input, cloneUrl, host, owner, name) => {
  expect(parseRepositoryUrl(input)).toEqual({ cloneUrl, host, owner, name });
});

test.each([
  ['file:///srv/git/acme/site.git', 'Cairn clones over https:// (or http://) only, not file:// ("file:///srv/git/acme/site.git")'],
  ['ssh://git@github.com/acme/site.git', 'Cairn clones over https:// (or http://) only, not ssh:// ("ssh://git@github.com/acme/site.git")'],
  ['git://github.com/acme/site.git', 'Cairn clones over https:// (or http://) only, not git:// ("git://github.com/acme/site.git")'],
  [
    'git@github.com:acme/site.git',
    '"git@github.com:acme/site.git" is an SSH address; Cairn clones over https:// only (use the repository\'s HTTPS clone URL)',
  ],
  ['github.com/acme/site', '"github.com/acme/site" is not a URL; a repository URL looks like https://host/owner/name'],
  ['https://github.com/acme', '"https://github.com/acme" names no repository; a repository URL looks like https://host/owner/name'],
  ['https://github.com/', '"https://github.com/" names no repository; a repository URL looks like https://host/owner/name'],
  [
    'https://github.com/acme/.git',
    '"https://github.com/acme/.git" names no repository; a repository URL looks like https://host/owner/name',
  ],
  ['https://user:token@github.com/acme/site.git', 'a repository URL must not carry credentials; Cairn clones public repositories only'],
  ['https://github.com/acme/site.git?ref=main', 'a repository URL has no query or fragment ("https://github.com/acme/site.git?ref=main")'],
])('%s is refused', (input, message) => {
  expect(() => parseRepositoryUrl(input)).toThrow(new RepositoryUrlError(message));
  expect(() => parseRepositoryUrl(input)).toThrow(RepositoryUrlError);
});
