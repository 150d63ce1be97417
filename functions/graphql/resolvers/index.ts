/**
 * Resolvers, by type. Every one works inside the caller's team: a site or
 * team of another team is indistinguishable from one that does not exist.
 */
import { DateTime } from '../scalars.js';
import { deployResolvers } from './deploys.js';
import { domainResolvers } from './domains.js';
import { hookResolvers } from './hooks.js';
import { invitationResolvers } from './invitations.js';
import { keyResolvers } from './keys.js';
import { notificationResolvers } from './notifications.js';
import { sessionResolvers } from './sessions.js';
import { siteResolvers } from './sites.js';
import { teamResolvers } from './teams.js';

export const resolvers = {
  DateTime,
  Query: {
    ...siteResolvers.Query,
    ...deployResolvers.Query,
    ...teamResolvers.Query,
    ...keyResolvers.Query,
    ...sessionResolvers.Query,
    ...invitationResolvers.Query,
  },
  Mutation: {
    ...siteResolvers.Mutation,
    ...deployResolvers.Mutation,
    ...teamResolvers.Mutation,
    ...keyResolvers.Mutation,
    ...hookResolvers.Mutation,
    ...notificationResolvers.Mutation,
    ...domainResolvers.Mutation,
    ...sessionResolvers.Mutation,
    ...invitationResolvers.Mutation,
  },
  Site: { ...siteResolvers.Site, ...hookResolvers.Site, ...notificationResolvers.Site, ...domainResolvers.Site },
  Domain: domainResolvers.Domain,
  NotificationUrl: notificationResolvers.NotificationUrl,
  BuildSettings: siteResolvers.BuildSettings,
  EnvironmentVariable: siteResolvers.EnvironmentVariable,
  DeploySettings: siteResolvers.DeploySettings,
  SiteSource: siteResolvers.SiteSource,
  Deploy: { ...deployResolvers.Deploy, ...hookResolvers.Deploy },
  TeamMember: teamResolvers.TeamMember,
  Session: sessionResolvers.Session,
};
