/** What a store refuses because of the data as it stands, which callers report as the user's conflict. */
export class ConflictError extends Error {
  override name = 'ConflictError';
}
