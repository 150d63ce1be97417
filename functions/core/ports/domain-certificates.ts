/**
 * Certificates for sites' own domains, and what the gateway needs of them.
 * On one machine an ACME client obtains and renews them and the gateway's
 * HTTPS listener serves them by SNI (functions/local/acme-certificates.ts);
 * in AWS an adapter will provision the names on the CDN. Where nothing
 * issues certificates (`issues` false) a verified domain is ACTIVE at once
 * and served over HTTP only.
 */
export interface DomainCertificates {
  /** Whether a verified domain waits for a certificate (ISSUING_CERTIFICATE) before it is ACTIVE. */
  readonly issues: boolean;
  /** Gets the domain a certificate in the background, then sets it ACTIVE (or FAILED with the reason). Never throws. */
  request(siteId: string, domain: string): void;
  /** Forgets what is held of a domain removed or taken by another site (the certificate served for it). */
  released(domain: string): void;
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
