/**
 * What a Lambda container builds once (its services, its pipeline) and
 * shares between requests: the first call starts it, later calls share it,
 * and a build that fails is forgotten so that the next call builds again.
 * A rejected promise kept for the container's life would fail every request
 * until Lambda recycled the container, long after a passing cause (a
 * throttled secret read, a table not yet ready) was gone. Only the attempt
 * that failed is dropped: a call that came in meanwhile may have started
 * the next one.
 */
export function onceUntilFailure<T>(build: () => Promise<T>): () => Promise<T> {
  let built: Promise<T> | undefined;
  return () => {
    const attempt = (built ??= build());
    attempt.catch(() => {
      if (built === attempt) built = undefined;
    });
    return attempt;
  };
}
