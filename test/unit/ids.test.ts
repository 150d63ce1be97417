/** Identifiers Cairn mints: request ids in S3's shape, write tokens that never repeat. */
import { newRequestId, uniqueToken } from '../../functions/core/ids.js';

test('request ids are 16 uppercase hex digits, and consecutive ones differ', () => {
  const ids = Array.from({ length: 10_000 }, newRequestId);
  expect(ids.filter((id) => !/^[0-9A-F]{16}$/.test(id))).toEqual([]);
  expect(new Set(ids).size).toBe(ids.length);
  expect(new Set(ids.map((id) => id.slice(0, 8))).size).toBe(1); // this process's prefix
});

test('unique tokens never repeat within a process and carry its random prefix', () => {
  const tokens = Array.from({ length: 100_000 }, uniqueToken);
  expect(new Set(tokens).size).toBe(tokens.length);
  const prefix = tokens[0]!.slice(0, 16);
  expect(prefix).toMatch(/^[0-9a-f]{16}$/);
  expect(tokens.filter((t) => !t.startsWith(prefix))).toEqual([]);
});
