/** The team: its members and roles, its API keys (the account's storage key pairs are in Settings), its name, and new teams. */
import { useApp } from '../app-context.js';
import { ErrorNotice, Loading, PageHeader } from '../components.js';
import { useLoad, useTitle } from '../hooks.js';
import { TEAM, type ApiKey, type Member } from '../queries.js';
import { href } from '../router.js';
import { ApiKeysSection } from './Credentials.js';
import { Members } from './TeamMembers.js';
import { TeamSettings } from './TeamSettings.js';

interface TeamData {
  getCurrentMember: { accountId: string } | null;
  getMembersByTeam: Member[] | null;
  getApiKeysByTeam: ApiKey[] | null;
}

export function Team() {
  useTitle('Team');
  const { api, team } = useApp();
  const data = useLoad(() => api.query<TeamData>(TEAM, { teamId: team.id }), [team.id]);
  const members = data.data?.getMembersByTeam ?? [];
  const memberName = (accountId: string) => members.find((m) => m.accountId === accountId)?.accountName ?? accountId;
  const me = data.data?.getCurrentMember?.accountId ?? null;
  const owner = members.some((m) => m.accountId === me && m.role === 'OWNER');

  return (
    <>
      <PageHeader title={team.name} subtitle="Members, API keys and the team's name." />
      {data.loading && !data.data ? <Loading label="Loading the team…" /> : null}
      {data.error ? <ErrorNotice retry={() => void data.reload()}>Could not load the team: {data.error}</ErrorNotice> : null}
      {data.data ? (
        <div className="stack">
          <Members members={members} me={me} onChanged={() => void data.reload(true)} />
          <ApiKeysSection
            keys={data.data.getApiKeysByTeam ?? []}
            memberName={memberName}
            intro={
              <>
                Keys for the GraphQL API and this app. A key acts with the rights of the member who made it. Owners revoke any key, members
                their own. Your storage key pairs are in <a href={href({ name: 'settings' })}>Settings</a>.
              </>
            }
            onChanged={() => void data.reload(true)}
          />
          <TeamSettings owner={owner} />
        </div>
      ) : null}
    </>
  );
}
