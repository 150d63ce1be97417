/**
 * Route 53 as the test/aws suites see it: a stand-in on
 * aws-sdk-client-mock that keeps hosted zones and their record sets and
 * answers as the API reference says, recording every call:
 *
 *  - ChangeResourceRecordSets: the zone must exist (NoSuchHostedZone); a
 *    batch is checked change by change against a copy of the zone and
 *    kept only when every change passes, all or none. CREATE refuses a set
 *    that exists; UPSERT creates or replaces; DELETE must repeat the
 *    current set exactly (TTL and values), else InvalidChangeBatch "...
 *    but the values provided do not match the current values", or "...
 *    but it was not found". A name outside the zone, or a TXT value that is
 *    not quoted strings of at most 255 characters, is InvalidChangeBatch.
 *    https://docs.aws.amazon.com/Route53/latest/APIReference/API_ChangeResourceRecordSets.html,
 *    https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/ResourceRecordTypes.html#TXTFormat
 *  - ListResourceRecordSets: the zone's sets in Route 53's order (names
 *    compared label by label from the right, then types) from
 *    StartRecordName/StartRecordType on, MaxItems (at most 300) at a time
 *    with IsTruncated and the next name and type.
 *    https://docs.aws.amazon.com/Route53/latest/APIReference/API_ListResourceRecordSets.html
 *  - ListHostedZonesByName: zones in order of their names from DNSName on.
 *    https://docs.aws.amazon.com/Route53/latest/APIReference/API_ListHostedZonesByName.html
 *  - `failNext(code, n)` answers the next n calls with that error code
 *    (`Throttling`: Route 53's "Rate exceeded"; `AccessDenied`); `beforeChange`
 *    runs before a batch is applied (another writer's change in between).
 * Names are kept as Route 53 lists them: lower case, with the trailing dot.
 */
import { randomBytes } from 'node:crypto';
import {
  ChangeResourceRecordSetsCommand,
  InvalidChangeBatch,
  InvalidInput,
  ListHostedZonesByNameCommand,
  ListResourceRecordSetsCommand,
  NoSuchHostedZone,
  Route53Client,
  Route53ServiceException,
  type ChangeResourceRecordSetsCommandInput,
  type ListHostedZonesByNameCommandInput,
  type ListResourceRecordSetsCommandInput,
  type ResourceRecordSet,
} from '@aws-sdk/client-route-53';
import { mockClient } from 'aws-sdk-client-mock';

export interface StoodInZone {
  id: string;
  name: string;
  private: boolean;
  sets: ResourceRecordSet[];
}

const meta = { httpStatusCode: 400, requestId: 'r53-test' };
const fqdn = (name: string) => `${name.toLowerCase().replace(/\.$/, '')}.`;
/** Route 53's order of names: label by label from the right. */
const nameKey = (name: string) => fqdn(name).slice(0, -1).split('.').reverse().join('\u0000');
const compare = (a: ResourceRecordSet, b: { Name?: string; Type?: string }) =>
  nameKey(a.Name!) < nameKey(b.Name!)
    ? -1
    : nameKey(a.Name!) > nameKey(b.Name!)
      ? 1
      : (a.Type ?? '') < (b.Type ?? '')
        ? -1
        : (a.Type ?? '') > (b.Type ?? '')
          ? 1
          : 0;
const sameSet = (a: ResourceRecordSet, b: ResourceRecordSet) =>
  fqdn(a.Name!) === fqdn(b.Name!) && a.Type === b.Type && (a.SetIdentifier ?? '') === (b.SetIdentifier ?? '');
const values = (s: ResourceRecordSet) =>
  (s.ResourceRecords ?? [])
    .map((r) => r.Value)
    .sort()
    .join('\n');
/** Quoted strings of at most 255 characters (escapes counted as the byte they stand for), separated by spaces. */
const TXT_VALUE = /^"(?:[^"\\]|\\[0-7]{3}|\\["\\])*"(?: "(?:[^"\\]|\\[0-7]{3}|\\["\\])*")*$/;
const stringsOf = (value: string) => value.match(/"(?:[^"\\]|\\[0-7]{3}|\\["\\])*"/g) ?? [];
const lengthOf = (quoted: string) => quoted.slice(1, -1).replace(/\\[0-7]{3}|\\["\\]/g, 'x').length;

export function route53StandIn() {
  const mock = mockClient(Route53Client);
  const zones = new Map<string, StoodInZone>();
  const failures: Array<{ code: string; n: number }> = [];
  const hooks: { beforeChange?: (zone: StoodInZone) => void } = {};

  const failing = () => {
    const next = failures[0];
    if (!next) return;
    if (--next.n <= 0) failures.shift();
    if (next.code === 'AccessDenied')
      throw new Route53ServiceException({
        name: 'AccessDenied',
        $fault: 'client',
        message: 'User: arn:aws:sts::123456789012:assumed-role/cairn-test is not authorized to perform: route53:ChangeResourceRecordSets',
        $metadata: { ...meta, httpStatusCode: 403 },
      });
    throw new Route53ServiceException({ name: next.code, $fault: 'client', message: 'Rate exceeded', $metadata: meta });
  };
  const zoneOf = (id: string | undefined) => {
    const zone = zones.get((id ?? '').replace(/^\/hostedzone\//, ''));
    if (!zone) throw new NoSuchHostedZone({ message: `No hosted zone found with ID: ${id}`, $metadata: meta });
    return zone;
  };
  const invalid = (message: string) => new InvalidChangeBatch({ message, messages: [message], $metadata: meta });

  const wire = () => {
    mock.on(ChangeResourceRecordSetsCommand).callsFake((input: ChangeResourceRecordSetsCommandInput) => {
      failing();
      const zone = zoneOf(input.HostedZoneId);
      hooks.beforeChange?.(zone);
      const changes = input.ChangeBatch?.Changes ?? [];
      if (changes.length === 0) throw new InvalidInput({ message: 'ChangeBatch must hold at least one change', $metadata: meta });
      const sets = zone.sets.map((s) => ({ ...s }));
      for (const change of changes) {
        const set = { ...change.ResourceRecordSet!, Name: fqdn(change.ResourceRecordSet!.Name!) };
        const label = `[name='${set.Name}', type='${set.Type}']`;
        if (set.Name !== zone.name && !set.Name.endsWith(`.${zone.name}`))
          throw invalid(`RRSet with DNS name ${set.Name} is not permitted in zone ${zone.name}`);
        if (set.Type === 'TXT' && change.Action !== 'DELETE') {
          for (const r of set.ResourceRecords ?? []) {
            if (!TXT_VALUE.test(r.Value ?? ''))
              throw invalid(
                `Invalid Resource Record: 'FATAL problem: InvalidCharacterString (Value should be enclosed in quotation marks) encountered with '${r.Value}''`,
              );
            if (stringsOf(r.Value!).some((s) => lengthOf(s) > 255))
              throw invalid(`Invalid Resource Record: 'FATAL problem: TXTRDATATooLong encountered at ${r.Value}'`);
          }
        }
        const at = sets.findIndex((s) => sameSet(s, set));
        if (change.Action === 'CREATE') {
          if (at >= 0) throw invalid(`Tried to create resource record set ${label} but it already exists`);
          sets.push(set);
        } else if (change.Action === 'UPSERT') {
          if (at >= 0) sets[at] = set;
          else sets.push(set);
        } else if (change.Action === 'DELETE') {
          if (at < 0) throw invalid(`Tried to delete resource record set ${label} but it was not found`);
          const held = sets[at]!;
          if (held.TTL !== set.TTL || values(held) !== values(set))
            throw invalid(`Tried to delete resource record set ${label} but the values provided do not match the current values`);
          sets.splice(at, 1);
        } else throw new InvalidInput({ message: `Unknown action ${change.Action}`, $metadata: meta });
      }
      zone.sets = sets.sort(compare);
      return { ChangeInfo: { Id: `/change/C${randomBytes(8).toString('hex').toUpperCase()}`, Status: 'PENDING', SubmittedAt: new Date() } };
    });
    mock.on(ListResourceRecordSetsCommand).callsFake((input: ListResourceRecordSetsCommandInput) => {
      failing();
      const zone = zoneOf(input.HostedZoneId);
      if (input.StartRecordType && !input.StartRecordName)
        throw new InvalidInput({ message: 'The input is not valid: StartRecordType needs StartRecordName', $metadata: meta });
      const max = input.MaxItems ?? 300;
      if (max < 1 || max > 300) throw new InvalidInput({ message: 'MaxItems must be from 1 to 300', $metadata: meta });
      const from = input.StartRecordName ? { Name: input.StartRecordName, Type: input.StartRecordType ?? '' } : undefined;
      const listed = from ? zone.sets.filter((s) => compare(s, from) >= 0) : zone.sets;
      const page = listed.slice(0, max);
      const next = listed[max];
      return {
        ResourceRecordSets: page.map((s) => ({ ...s })),
        IsTruncated: next !== undefined,
        MaxItems: max,
        ...(next ? { NextRecordName: next.Name, NextRecordType: next.Type } : {}),
      };
    });
    mock.on(ListHostedZonesByNameCommand).callsFake((input: ListHostedZonesByNameCommandInput) => {
      failing();
      const from = input.DNSName ? nameKey(input.DNSName) : '';
      const listed = [...zones.values()]
        .filter((z) => nameKey(z.name) >= from)
        .sort((a, b) => (nameKey(a.name) < nameKey(b.name) ? -1 : 1));
      const max = input.MaxItems ?? 100;
      return {
        HostedZones: listed
          .slice(0, max)
          .map((z) => ({ Id: `/hostedzone/${z.id}`, Name: z.name, CallerReference: z.id, Config: { PrivateZone: z.private } })),
        IsTruncated: listed.length > max,
        MaxItems: max,
      };
    });
  };
  wire();

  return {
    mock,
    zones,
    /** A hosted zone named `name` (its apex's SOA and NS sets in it, as Route 53 makes them). */
    addZone(id: string, name: string, isPrivate = false): StoodInZone {
      const zoneName = fqdn(name);
      const zone: StoodInZone = {
        id,
        name: zoneName,
        private: isPrivate,
        sets: [
          { Name: zoneName, Type: 'NS', TTL: 172800, ResourceRecords: [{ Value: 'ns-1.awsdns-01.org.' }] },
          {
            Name: zoneName,
            Type: 'SOA',
            TTL: 900,
            ResourceRecords: [{ Value: 'ns-1.awsdns-01.org. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400' }],
          },
        ],
      };
      zones.set(id, zone);
      return zone;
    },
    /** The TXT values of `name` in the zone with id `zoneId`. */
    txt(zoneId: string, name: string): string[] {
      return (zones.get(zoneId)?.sets ?? [])
        .filter((s) => s.Name === fqdn(name) && s.Type === 'TXT')
        .flatMap((s) => (s.ResourceRecords ?? []).map((r) => r.Value!));
    },
    /** The next `n` calls fail with `code` (`Throttling`, `PriorRequestNotComplete`, `AccessDenied`). */
    failNext(code: string, n = 1) {
      failures.push({ code, n });
    },
    set beforeChange(hook: ((zone: StoodInZone) => void) | undefined) {
      hooks.beforeChange = hook;
    },
    /** Every call made, in order, as [command name, input]. */
    calls(): Array<[string, Record<string, any>]> {
      return mock.calls().map((c) => [c.args[0].constructor.name, c.args[0].input as Record<string, any>]);
    },
    /** Forgets the calls, the failures and the hook (the zones stay). */
    reset() {
      mock.resetHistory();
      failures.length = 0;
      hooks.beforeChange = undefined;
    },
  };
}
