/** A site's notification URLs: where its deploy events are posted, signed, with what came of the last deliveries. */
import { useState, type FormEvent } from 'react';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton, EmptyState, Mono, ShownOnce, TimeAgo } from '../components.js';
import { formatAgo } from '../format.js';
import { useActions } from '../hooks.js';
import {
  ADD_NOTIFICATION_URL,
  REMOVE_NOTIFICATION_URL,
  type DeployEvent,
  type NotificationDelivery,
  type NotificationUrl,
} from '../queries.js';
import type { SectionProps } from './section-props.js';

const EVENTS: Array<[DeployEvent, string]> = [
  ['CREATED', 'Created'],
  ['BUILDING', 'Building'],
  ['FAILED', 'Failed'],
  ['SUCCEEDED', 'Succeeded'],
  ['PUBLISHED', 'Published'],
];
const EVENT_TEXT = Object.fromEntries(EVENTS) as Record<DeployEvent, string>;
const allEvents = () => new Set(EVENTS.map(([e]) => e));
const DELIVERY_TEXT: Record<NotificationDelivery['status'], string> = { PENDING: 'Pending', DELIVERED: 'Delivered', FAILED: 'Failed' };

export function NotificationUrls({ site, onChanged }: SectionProps) {
  const { api } = useApp();
  const actions = useActions();
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<Set<DeployEvent>>(allEvents);
  const [made, setMade] = useState<{ url: string; secret: string } | null>(null);
  const busy = actions.pending !== null;

  const add = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const target = url.trim();
    if (!target) return;
    setMade(null);
    // All of them is sent as no list: the API's "every event", later ones too.
    const chosen = events.size === EVENTS.length ? null : EVENTS.map(([e]) => e).filter((e) => events.has(e));
    const r = await actions.run(
      'Adding the URL',
      () =>
        api.mutate<{ addNotificationUrl: { secret: string; notificationUrl: { url: string } } }>(ADD_NOTIFICATION_URL, {
          siteId: site.id,
          url: target,
          events: chosen,
        }),
      () => 'URL added. Copy its signing secret now: it is not shown again.',
    );
    if (r) {
      setMade({ url: r.addNotificationUrl.notificationUrl.url, secret: r.addNotificationUrl.secret });
      setUrl('');
      setEvents(allEvents());
      onChanged();
    }
  };
  const remove = async (n: NotificationUrl) => {
    setMade(null);
    const done = await actions.run(
      `Removing ${n.url}`,
      () => api.mutate(REMOVE_NOTIFICATION_URL, { siteId: site.id, notificationUrlId: n.id }),
      () => `${n.url} removed: nothing more is sent to it.`,
    );
    if (done) onChanged();
  };
  const toggle = (e: DeployEvent, on: boolean) =>
    setEvents((prev) => {
      const next = new Set(prev);
      if (on) next.add(e);
      else next.delete(e);
      return next;
    });

  return (
    <section className="card" aria-labelledby="notifications-title">
      <div className="section-header">
        <h2 id="notifications-title">Notification URLs</h2>
        <button type="button" className="button button-small" onClick={onChanged}>
          Refresh deliveries
        </button>
      </div>
      <p className="muted">
        Each deploy event is posted to these URLs as signed JSON, and tried again for an hour while the receiver does not answer 2xx.
      </p>
      <form className="form" onSubmit={(e) => void add(e)}>
        <div className="field">
          <label htmlFor="notify-url">URL</label>
          <input
            id="notify-url"
            type="url"
            inputMode="url"
            className="mono"
            value={url}
            onChange={(e) => setUrl(e.currentTarget.value)}
            placeholder="https://example.com/cairn-events"
            autoComplete="off"
            spellCheck={false}
            required
          />
        </div>
        <fieldset className="events">
          <legend>Events</legend>
          {EVENTS.map(([e, text]) => (
            <label key={e} className="checkbox">
              <input type="checkbox" checked={events.has(e)} onChange={(ev) => toggle(e, ev.currentTarget.checked)} />
              {text}
            </label>
          ))}
          {events.size === 0 ? <p className="hint">Pick at least one event.</p> : null}
        </fieldset>
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy || events.size === 0}>
            Add URL
          </button>
        </div>
      </form>
      <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
      {made ? (
        <ShownOnce label={`Signing secret of ${made.url}`} value={made.secret}>
          <p className="hint">
            Shown only now. Each delivery carries <code>X-Cairn-Signature: t=&lt;unix seconds&gt;,sha256=&lt;hex&gt;</code>: check that the
            hex is the HMAC-SHA256 of <code>&lt;t&gt;.&lt;raw body&gt;</code> keyed with this secret, and that <code>t</code> is within five
            minutes of now.
          </p>
        </ShownOnce>
      ) : null}
      {site.notificationUrls.length === 0 ? (
        <EmptyState title="No notification URLs yet." />
      ) : (
        <ul className="notification-list">
          {site.notificationUrls.map((n) => (
            <li key={n.id} className="notification" data-notification={n.url}>
              <div className="notification-head">
                <Mono>{n.url}</Mono>
                <ConfirmButton label="Remove" confirmLabel="Remove URL" disabled={busy} onConfirm={() => void remove(n)} />
              </div>
              <p className="notification-events">
                <span className="visually-hidden">Events: </span>
                {n.events.map((e) => (
                  <span key={e} className="tag">
                    {EVENT_TEXT[e]}
                  </span>
                ))}
              </p>
              <Deliveries deliveries={n.lastDeliveries} />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Deliveries({ deliveries }: { deliveries: NotificationDelivery[] }) {
  if (deliveries.length === 0) return <p className="hint">Nothing sent yet.</p>;
  return (
    <table className="table deliveries">
      <caption className="visually-hidden">Last deliveries, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Event</th>
          <th scope="col">Result</th>
          <th scope="col">Attempts</th>
          <th scope="col">When</th>
        </tr>
      </thead>
      <tbody>
        {deliveries.map((d) => (
          <tr key={d.id} data-delivery={d.event} data-status={d.status}>
            <td data-label="Event">{EVENT_TEXT[d.event]}</td>
            <td data-label="Result">
              <span>
                <span className={`tag tag-delivery-${d.status.toLowerCase()}`}>{DELIVERY_TEXT[d.status]}</span>{' '}
                {d.statusCode !== null ? `HTTP ${d.statusCode}` : (d.error ?? '')}
              </span>
            </td>
            <td data-label="Attempts">{d.attempt}</td>
            <td data-label="When">
              <TimeAgo iso={d.at} formatted={formatAgo(d.at)} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
