/**
 * Certificates for sites' own domains, and what the gateway needs of them.
 * On one machine an ACME client obtains and renews them and the gateway's
 * HTTPS listener serves them by SNI (functions/local/acme-certificates.ts);
 * in AWS each domain becomes a CloudFront distribution tenant with a
 * CloudFront-managed certificate (functions/aws/cloudfront-tenants.ts),
 * whose issue the deploy worker's minute tick follows (`settle`). Where
 * nothing issues certificates (`issues` false) a verified domain is ACTIVE
 * at once and served over HTTP only.
 */
export interface DomainCertificates {
  /** Whether a verified domain waits for a certificate (ISSUING_CERTIFICATE) before it is ACTIVE. */
  readonly issues: boolean;
  /**
   * Gets the domain a certificate, then sets it ACTIVE (or FAILED with the
   * reason): in the background, or (a Lambda, which stops between events)
   * started before the promise resolves and finished by `settle`. Never rejects.
   */
  request(siteId: string, domain: string): void | Promise<void>;
  /** Forgets what is held of a domain removed or taken by another site (the certificate served for it). Never rejects. */
  released(domain: string): void | Promise<void>;
  /** Moves along what waits on the outside world (certificates being issued, names being let go); the minute tick calls it. Never rejects. */
  settle?(): Promise<void>;
  /** The key authorization an ACME HTTP-01 challenge token is answered with, while one is awaited. */
  challengeAnswer(token: string): string | undefined;
}

/** Issues nothing: verified domains are served over HTTP at once. */
export const noDomainCertificates: DomainCertificates = {
  issues: false,
  request: () => {},
  released: () => {},
  challengeAnswer: () => undefined,
};
