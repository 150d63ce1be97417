/** The small pieces every page is made of. */
import { useEffect, useRef, useState, type ReactNode } from 'react';
import type { DeployPhase, DeployStatus } from './queries.js';
import type { ActionResult, Loaded, More } from './hooks.js';
import { hasNavigated, href } from './router.js';

const STATUS_TEXT: Record<DeployStatus, string> = {
  IN_PROGRESS: 'In progress',
  DEPLOYED: 'Deployed',
  FAILED: 'Failed',
  CANCELLED: 'Cancelled',
};

export const PHASE_TEXT: Record<DeployPhase, string> = {
  QUEUED: 'Queued',
  CLONING: 'Cloning',
  BUILDING: 'Building',
  UPLOADING: 'Uploading',
  PUBLISHING: 'Publishing',
};

/** A deploy's status; one in progress says its phase (queued, cloning, building…) when the API knows it. */
export function StatusBadge({ status, phase }: { status: DeployStatus; phase?: DeployPhase | null }) {
  const text = status === 'IN_PROGRESS' && phase ? PHASE_TEXT[phase] : STATUS_TEXT[status];
  return (
    <span
      className={`badge badge-${status.toLowerCase().replace('_', '-')}`}
      data-status={status}
      title={status === 'IN_PROGRESS' ? 'In progress' : undefined}
    >
      {status === 'IN_PROGRESS' ? <span className="pulse" aria-hidden="true" /> : null}
      {text}
    </span>
  );
}

/**
 * The page's one heading. When the user moves to a page within the app, it
 * takes focus, so keyboard and screen reader users start reading there; on
 * a fresh load focus stays where the browser puts it (the skip link first).
 */
export function PageHeader({
  title,
  subtitle,
  actions,
  back,
}: {
  title: ReactNode;
  subtitle?: ReactNode;
  actions?: ReactNode;
  back?: { href: string; label: string };
}) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (hasNavigated()) heading.current?.focus({ preventScroll: true });
  }, []);
  return (
    <div className="page-header">
      {back ? (
        <a className="back" href={back.href}>
          ← {back.label}
        </a>
      ) : null}
      <div className="page-header-row">
        <div className="page-header-text">
          <h1 ref={heading} tabIndex={-1}>
            {title}
          </h1>
          {subtitle ? <div className="subtitle">{subtitle}</div> : null}
        </div>
        {actions ? <div className="page-actions">{actions}</div> : null}
      </div>
    </div>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

export function ErrorNotice({ children, retry }: { children: ReactNode; retry?: () => void }) {
  return (
    <div className="notice notice-error" role="alert">
      <span>{children}</span>
      {retry ? (
        <button type="button" className="button button-small" onClick={() => retry()}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

/** What came of the last action (a live region, so it is read out when it changes). */
export function ActionNotice({
  result,
  pending,
  onDismiss,
}: {
  result: ActionResult | null;
  pending?: string | null;
  onDismiss?: () => void;
}) {
  return (
    <div className="action-notice" aria-live="polite" role="status">
      {pending ? (
        <p className="notice notice-info">
          <span className="spinner" aria-hidden="true" />
          {pending}…
        </p>
      ) : result ? (
        <p className={`notice ${result.kind === 'ok' ? 'notice-ok' : 'notice-error'}`} data-result={result.kind}>
          <span>{result.text}</span>
          {onDismiss ? (
            <button type="button" className="link-button" onClick={() => onDismiss()} aria-label="Dismiss this message">
              Dismiss
            </button>
          ) : null}
        </p>
      ) : null}
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children}
    </div>
  );
}

/** A button that copies `text`; `about`, read by screen readers only, tells apart several such buttons on one page. */
export function CopyButton({ text, label = 'Copy', about }: { text: string; label?: string; about?: string }) {
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  useEffect(() => {
    if (copied === null) return;
    const t = setTimeout(() => setCopied(null), 2500);
    return () => clearTimeout(t);
  }, [copied]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      setCopied('no');
    }
  };
  return (
    <button type="button" className="button button-small" onClick={() => void copy()}>
      {copied === 'yes' ? 'Copied' : copied === 'no' ? 'Select and copy it' : label}
      {about ? <span className="visually-hidden"> {about}</span> : null}
      <span className="visually-hidden" aria-live="polite">
        {copied === 'yes' ? ' to the clipboard' : ''}
      </span>
    </button>
  );
}

/** A secret shown once: in a read-only field (selected on focus), with a copy button and a warning. */
export function ShownOnce({ label, value, children }: { label: string; value: string; children?: ReactNode }) {
  const id = `secret-${label.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <div className="shown-once">
      <label htmlFor={id}>{label}</label>
      <div className="copy-row">
        <input id={id} className="mono" readOnly value={value} onFocus={(e) => e.currentTarget.select()} spellCheck={false} />
        <CopyButton text={value} />
      </div>
      {children}
    </div>
  );
}

/** A destructive button that asks once more, in place, before acting. */
export function ConfirmButton({
  label,
  confirmLabel,
  onConfirm,
  disabled,
  small = true,
}: {
  label: string;
  confirmLabel: string;
  onConfirm: () => void;
  disabled?: boolean;
  small?: boolean;
}) {
  const size = small ? ' button-small' : '';
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" className={`button${size} button-danger-outline`} disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span className="confirm">
      <button
        ref={confirmRef}
        type="button"
        className={`button${size} button-danger`}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" className={`button${size}`} onClick={() => setAsking(false)}>
        Keep
      </button>
    </span>
  );
}

export function ExternalLink({ href, children, className }: { href: string; children: ReactNode; className?: string }) {
  return (
    <a href={href} target="_blank" rel="noopener noreferrer" className={className}>
      {children}
      <span className="visually-hidden"> (opens in a new tab)</span>
    </a>
  );
}

/** A long identifier shown in full for copying but clipped to fit. */
export function Mono({ children, title }: { children: string; title?: string }) {
  return (
    <code className="mono clip" title={title ?? children}>
      {children}
    </code>
  );
}

export function TimeAgo({ iso, formatted }: { iso: string | null | undefined; formatted: string }) {
  return iso ? (
    <time dateTime={iso} title={new Date(iso).toLocaleString()}>
      {formatted}
    </time>
  ) : (
    <span>—</span>
  );
}

/** A list's "load more" button, with what went wrong with the last try. */
export function MoreButton({ more, label }: { more: More; label: string }) {
  return (
    <div className="more">
      <button type="button" className="button" disabled={more.busy} onClick={() => void more.load()}>
        {more.busy ? 'Loading…' : label}
      </button>
      {more.error ? <ErrorNotice>{more.error}</ErrorNotice> : null}
    </div>
  );
}

/**
 * What a page of one site shows until the site is there: a spinner, what
 * went wrong, or "not found" (no such site, or another team's); null once
 * the page can show the site.
 */
export function siteNotReady(site: Loaded<unknown>): ReactNode | null {
  if (site.loading && !site.data) return <Loading label="Loading the site…" />;
  if (site.error) return <ErrorNotice retry={() => void site.reload()}>Could not load the site: {site.error}</ErrorNotice>;
  if (site.data) return null;
  return (
    <>
      <PageHeader title="Site not found" back={{ href: href({ name: 'sites' }), label: 'Sites' }} />
      <EmptyState title="There is no such site in your team.">
        <a href={href({ name: 'sites' })}>See the team's sites</a>
      </EmptyState>
    </>
  );
}
