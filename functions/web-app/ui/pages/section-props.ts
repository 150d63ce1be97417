import type { SiteIntegrations as SiteData } from '../queries.js';

/** What each section of a site's "Git & notifications" page is given: the site as loaded, and a quiet reload for after a change. */
export interface SectionProps {
  site: SiteData;
  onChanged(): void;
}
