/**
 * The error of a CAR this service does not take (car-import.ts). A module
 * of its own, without the CAR reader and the IPLD codecs: the GraphQL
 * function's import endpoint (functions/graphql/imports-http.ts) tells it
 * apart on every failed import, while the reader itself is loaded with the
 * first CAR, not with the function.
 */

/** The CAR is not one this service takes; the message says why, in one sentence. */
export class CarImportError extends Error {
  override name = 'CarImportError';
}
