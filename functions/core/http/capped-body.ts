/**
 * A request body read whole up to a limit: undefined once it passes the
 * limit, reading no further (the caller answers 413, which closes the
 * connection and drops the rest; the stream is released, not cancelled).
 */
export async function readCappedBody(stream: ReadableStream<Uint8Array> | null, limit: number): Promise<Buffer | undefined> {
  if (!stream) return Buffer.alloc(0);
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      reader.releaseLock();
      return undefined;
    }
    parts.push(value);
  }
  return Buffer.concat(parts);
}
