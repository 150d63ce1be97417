/**
 * DNSLink records written to Route 53 hosted zones: the DnsLinkZone port
 * (core/ports/dnslink-zone.ts) in AWS, for the zones CAIRN_DNSLINK_ZONES
 * names (`example.com=Z0123456789ABC`; a zone given without its id is
 * found by name, the one public hosted zone of that name).
 *
 * Setting a domain's record is one change, UPSERT of the TXT record set
 * `_dnslink.<domain>`: "If a resource record set doesn't already exist,
 * Route 53 creates it. If a resource record set does exist, Route 53
 * updates it with the values in the request", and a change batch is
 * applied all or none
 * (https://docs.aws.amazon.com/Route53/latest/APIReference/API_ChangeResourceRecordSets.html),
 * so no resolver sees the name empty in between. Its value follows
 * Route 53's TXT format: each string in double quotes, at most 255
 * characters, `"` and `\` escaped with a backslash, the bytes 0x00-0x20 and
 * 0x7F-0xFF as `\` and three octal digits
 * (https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/ResourceRecordTypes.html#TXTFormat).
 *
 * Removing it is a DELETE, which must name "all the same values that are
 * in the current resource record set" (the same API page), so the current
 * set is read first: ListResourceRecordSets from the name and type, a few
 * at most (https://docs.aws.amazon.com/Route53/latest/APIReference/API_ListResourceRecordSets.html),
 * keeping only sets of exactly that name and type (the list starts there
 * and goes on to the next names). None: nothing to remove, which is
 * success. A set changed between the read and the DELETE is
 * InvalidChangeBatch ("... but the values provided do not match the
 * current values", or "... but it was not found"): read again, a bounded
 * number of times.
 *
 * What Route 53 answers becomes a DnsLinkWriteError: retryable for
 * throttling (`Throttling`), a change to the zone still in progress
 * (`PriorRequestNotComplete`: "If you get this error, wait a few seconds
 * and retry", API_ChangeResourceRecordSets.html, Errors) and server or
 * network failures; permanent for NoSuchHostedZone, AccessDenied,
 * InvalidChangeBatch and InvalidInput, which need the zone, the role or
 * the zone's other records changed. The SDK's standard retry mode has
 * already tried the retryable ones again within the call (@smithy/
 * service-error-classification's THROTTLING_ERROR_CODES holds both
 * codes); the scheduled work (core/hosting/dnslink.ts) tries every
 * failure again later.
 */
import {
  ChangeResourceRecordSetsCommand,
  ListHostedZonesByNameCommand,
  ListResourceRecordSetsCommand,
  type Change,
  type ResourceRecordSet,
  type Route53Client,
} from '@aws-sdk/client-route-53';
import { DNSLINK_TTL, DnsLinkWriteError, dnsLinkName, zoneOf, type DnsLinkZone } from '../core/ports/dnslink-zone.js';

/** Longest character-string of a TXT record (RFC 1035 section 3.3.14; Route 53's TXT format says the same). */
const TXT_STRING_MAX = 255;
/** Record sets of one name and type read before a DELETE (one, unless someone added weighted or other routed sets). */
const LIST_MAX = 10;
/** Reads and DELETEs of one removal, when the set keeps changing in between. */
const REMOVE_TRIES = 3;

const RETRYABLE = new Set([
  'Throttling',
  'ThrottlingException',
  'PriorRequestNotComplete',
  'ServiceUnavailable',
  'InternalFailure',
  'InternalError',
  'TimeoutError',
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
]);

/**
 * A TXT record's value as Route 53 takes it: `text`'s UTF-8 bytes cut in
 * strings of at most 255, each quoted, with `"` and `\` backslash-escaped
 * and the bytes Route 53 asks to escape written as three octal digits.
 */
export function route53TxtValue(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  const strings: string[] = [];
  for (let start = 0; start < bytes.length || strings.length === 0; start += TXT_STRING_MAX) {
    let quoted = '';
    for (const b of bytes.subarray(start, start + TXT_STRING_MAX)) {
      if (b === 0x22 || b === 0x5c) quoted += `\\${String.fromCharCode(b)}`;
      else if (b <= 0x20 || b >= 0x7f) quoted += `\\${b.toString(8).padStart(3, '0')}`;
      else quoted += String.fromCharCode(b);
    }
    strings.push(`"${quoted}"`);
  }
  return strings.join(' ');
}

/** A name as Route 53 lists it (`_dnslink.example.com.`, lower case) compared with ours. */
const sameName = (listed: string | undefined, name: string) => listed?.toLowerCase().replace(/\.$/, '') === name;

/** The error's code: the SDK names a service error after it; a network error carries it as `code`. */
const codeOf = (err: unknown): string => {
  const e = err as { name?: string; code?: string } | undefined;
  return e?.name && e.name !== 'Error' ? e.name : (e?.code ?? '');
};

const isStaleDelete = (err: unknown) =>
  codeOf(err) === 'InvalidChangeBatch' &&
  /Tried to delete resource record set .* (but it was not found|do not match the current values)/.test(String((err as Error).message));

/** Route 53's failure as the port reports it (its code and message say which name and why; no credential is in them). */
function writeError(err: unknown, what: string): DnsLinkWriteError {
  if (err instanceof DnsLinkWriteError) return err;
  const code = codeOf(err);
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const fault = (err as { $fault?: string }).$fault;
  const retryable = RETRYABLE.has(code) || fault === 'server' || (status !== undefined && status >= 500);
  const message = String((err as Error | undefined)?.message ?? err).slice(0, 500);
  return new DnsLinkWriteError(`Route 53 refused ${what}: ${code || 'error'}: ${message}`, retryable);
}

export interface Route53ZoneSettings {
  /** The zones written (lower case, no trailing dot). */
  zones: readonly string[];
  /** Their hosted zone ids, where given; the others are found by name. */
  hostedZoneIds: Readonly<Record<string, string>>;
}

export class Route53DnsLinkZone implements DnsLinkZone {
  readonly managesAny = true;
  /** Zone ids found by name, kept for the instance's life (a failed look-up is not kept). */
  private readonly found = new Map<string, Promise<string>>();

  constructor(
    private readonly route53: Route53Client,
    private readonly settings: Route53ZoneSettings,
  ) {}

  manages(domain: string): boolean {
    return zoneOf(this.settings.zones, dnsLinkName(domain)) !== undefined;
  }

  async set(domain: string, path: string): Promise<void> {
    const name = dnsLinkName(domain);
    const zoneId = await this.zoneIdOf(name);
    const set: ResourceRecordSet = {
      Name: name,
      Type: 'TXT',
      TTL: DNSLINK_TTL,
      ResourceRecords: [{ Value: route53TxtValue(`dnslink=${path}`) }],
    };
    await this.change(zoneId, [{ Action: 'UPSERT', ResourceRecordSet: set }], `the UPSERT of ${name}`);
  }

  async remove(domain: string): Promise<void> {
    const name = dnsLinkName(domain);
    const zoneId = await this.zoneIdOf(name);
    for (let attempt = 1; ; attempt++) {
      const current = await this.current(zoneId, name);
      if (current.length === 0) return;
      try {
        await this.route53.send(
          new ChangeResourceRecordSetsCommand({
            HostedZoneId: zoneId,
            ChangeBatch: { Changes: current.map((set) => ({ Action: 'DELETE', ResourceRecordSet: set })) },
          }),
        );
        return;
      } catch (err) {
        // Changed or removed since it was read: read it again.
        if (isStaleDelete(err) && attempt < REMOVE_TRIES) continue;
        throw writeError(err, `the DELETE of ${name}`);
      }
    }
  }

  private async change(zoneId: string, changes: Change[], what: string): Promise<void> {
    try {
      await this.route53.send(new ChangeResourceRecordSetsCommand({ HostedZoneId: zoneId, ChangeBatch: { Changes: changes } }));
    } catch (err) {
      throw writeError(err, what);
    }
  }

  /** The TXT record sets of exactly `name`, as Route 53 holds them (what a DELETE must repeat). */
  private async current(zoneId: string, name: string): Promise<ResourceRecordSet[]> {
    let listed;
    try {
      listed = await this.route53.send(
        new ListResourceRecordSetsCommand({ HostedZoneId: zoneId, StartRecordName: name, StartRecordType: 'TXT', MaxItems: LIST_MAX }),
      );
    } catch (err) {
      throw writeError(err, `the listing of ${name}`);
    }
    const sets = (listed.ResourceRecordSets ?? []).filter((s) => sameName(s.Name, name) && s.Type === 'TXT');
    if (listed.IsTruncated && sameName(listed.NextRecordName, name) && listed.NextRecordType === 'TXT')
      throw new DnsLinkWriteError(`${name} has more than ${LIST_MAX} TXT record sets (routing policies): remove them by hand`, false);
    // An alias set is listed with no records, and a DELETE must not carry an empty list of them.
    return sets.map((s) => (s.ResourceRecords?.length === 0 ? { ...s, ResourceRecords: undefined } : s));
  }

  private async zoneIdOf(name: string): Promise<string> {
    const zone = zoneOf(this.settings.zones, name);
    if (!zone) throw new DnsLinkWriteError(`${name} is in none of the zones CAIRN_DNSLINK_ZONES names`, false);
    const given = this.settings.hostedZoneIds[zone];
    if (given) return given;
    let lookup = this.found.get(zone);
    if (!lookup) {
      lookup = this.lookUp(zone);
      this.found.set(zone, lookup);
      lookup.catch(() => this.found.delete(zone));
    }
    return lookup;
  }

  /**
   * The one public hosted zone named `zone`: ListHostedZonesByName lists
   * zones in order of their names from DNSName on
   * (https://docs.aws.amazon.com/Route53/latest/APIReference/API_ListHostedZonesByName.html),
   * so a zone and its namesakes (private ones, or another public one) come
   * first. Needs route53:ListHostedZonesByName, which the stack does not
   * grant: it names each zone's id.
   */
  private async lookUp(zone: string): Promise<string> {
    let listed;
    try {
      listed = await this.route53.send(new ListHostedZonesByNameCommand({ DNSName: zone, MaxItems: LIST_MAX }));
    } catch (err) {
      throw writeError(err, `the look-up of the hosted zone ${zone}`);
    }
    const matches = (listed.HostedZones ?? []).filter((z) => sameName(z.Name, zone) && !z.Config?.PrivateZone);
    if (matches.length !== 1)
      throw new DnsLinkWriteError(
        matches.length === 0
          ? `no public Route 53 hosted zone is named ${zone}`
          : `${matches.length} public Route 53 hosted zones are named ${zone}: give its id in CAIRN_DNSLINK_ZONES (${zone}=Z...)`,
        false,
      );
    return matches[0]!.Id!.replace(/^\/hostedzone\//, '');
  }
}
