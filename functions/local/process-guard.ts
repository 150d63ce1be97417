/**
 * A long-running server must not end because some library forgot to handle
 * a promise: Node's default for an unhandled rejection is to exit, which
 * turned one bad collection into a crash loop (issue 18). Such a rejection
 * is logged and the server goes on; every known failure path handles its
 * own errors, so one that arrives here is a bug to report, not a state to
 * stop in. (An uncaught exception is different: the code after the throw
 * never ran, so Node's exit is kept for those.)
 */
import type { Logger } from '../core/logger.js';

export function logStrayRejections(logger: Logger): () => void {
  const onRejection = (reason: unknown) => {
    logger.error('unhandled promise rejection (a bug: please report it); the service keeps running', { err: reason });
  };
  process.on('unhandledRejection', onRejection);
  return () => process.off('unhandledRejection', onRejection);
}
