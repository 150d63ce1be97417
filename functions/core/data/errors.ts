/** What a store refuses because of the data as it stands, which callers report as the user's conflict. */
export class ConflictError extends Error {
  override name = 'ConflictError';
}

/**
 * DynamoDB cancels a transaction that meets another one on the same item
 * with the reason `TransactionConflict` ("Another transaction request was in
 * progress on one or more of the items", TransactWriteItems' errors:
 * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html),
 * which the counters of a burst of writes (a site's domains, an account's
 * teams) meet; such a cancel is tried again, a few times
 * (`retry(send, TRANSACTION_CONFLICT_RETRY)`). The embedded database
 * serializes transactions on item locks instead, so there it never happens.
 */
export const transactionConflict = (err: unknown): boolean =>
  (err as Error).name === 'TransactionConflictException' ||
  ((err as Error).name === 'TransactionCanceledException' &&
    ((err as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict'));

export const TRANSACTION_CONFLICT_RETRY = { attempts: 5, baseMs: 20, maxMs: 400, jitter: 'full' as const, retryable: transactionConflict };

/**
 * A transaction's write raising a count (`count` of the item at `Key`) by
 * one, conditioned on its staying under `max`: put beside the write it
 * counts, so a burst of them never passes the limit. Refused, the
 * transaction is cancelled with ConditionalCheckFailed at its place.
 */
export function countedUnder(TableName: string, Key: Record<string, string>, max: number) {
  return {
    Update: {
      TableName,
      Key,
      UpdateExpression: 'ADD #n :one',
      ConditionExpression: 'attribute_not_exists(#n) OR #n < :max',
      ExpressionAttributeNames: { '#n': 'count' },
      ExpressionAttributeValues: { ':one': 1, ':max': max },
    },
  };
}
