/**
 * JSON told from text by its first bytes (functions/core/http/content-type.ts),
 * as Kubo's gateway does: a file of JSON by bare CID is `application/json`
 * (the gateway conformance tests' "GET UnixFS file with JSON bytes is
 * returned with application/json Content-Type"), anything else stays text.
 */
import { isJsonStart, sniffType, SNIFF_BYTES } from '../../functions/core/http/content-type.js';

const bytes = (text: string) => new TextEncoder().encode(text);

test('an object or array, whole or cut short where the file goes on, is JSON; broken or trailing text is not', () => {
  const json: Array<[string, boolean]> = [
    ['{ "test": "i am a plain json file" }\n', false],
    ['\ufeff[1, -2.5e3, true, false, null, "x\\"y", {"a": []}]', false],
    ['{}', false],
    ['{"a": 1, "b": [1, 2', true],
    ['{"a": tr', true],
    ['{"a": "unterminated', true],
  ];
  for (const [text, cut] of json) expect([text, isJsonStart(bytes(text), cut)]).toEqual([text, true]);
  const notJson: Array<[string, boolean]> = [
    ['{"a": 1', false],
    ['{a: 1}', false],
    ['{"a": 1}}', false],
    ['[1,]', false],
    ['{"a": 1,}', false],
    ['[1 2]', false],
    ['[01]', false],
    ['{"a": tx', true],
    ['{"a": "\u0001"}', false],
    ['"a string"', false],
    ['42', false],
    ['[1] and more', false],
  ];
  for (const [text, cut] of notJson) expect([text, isJsonStart(bytes(text), cut)]).toEqual([text, false]);
});

test('sniffType answers application/json for JSON, text for the rest; deep nesting costs one pass', () => {
  expect(sniffType(bytes('{ "test": "i am a plain json file" }\n'), true)).toBe('application/json');
  expect(sniffType(bytes('{ "cut": "short'), true)).toBe('text/plain; charset=utf-8');
  expect(sniffType(bytes(`[${'"padding", '.repeat(100)}`), false)).toBe('application/json');
  expect(sniffType(bytes('{ not json }'), true)).toBe('text/plain; charset=utf-8');
  expect(sniffType(bytes('['.repeat(SNIFF_BYTES * 4)), false)).toBe('application/json');
});
