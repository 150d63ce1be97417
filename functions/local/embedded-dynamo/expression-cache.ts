/**
 * Memoized expression parsing for the embedded database. dynalite parses
 * every ConditionExpression, UpdateExpression and ProjectionExpression with
 * PEG parsers that backtrack heavily: `attribute_exists(pk) AND
 * (attribute_not_exists(deleting) OR deleting < :stale)` takes about half a
 * millisecond, every request. Cairn sends a handful of distinct expressions,
 * so each parse is kept and replayed.
 *
 * A parse depends on the expression, the attribute names, and the values:
 * the values end up in the tree, and their types decide some errors. So the
 * key holds the expression, the names and each value's type; a hit rebuilds
 * the tree with this request's value objects in place of the ones it was
 * parsed with, and replays what the parse noted as used (dynalite reports
 * unused names and values afterwards). The two checks that look at a value
 * itself (BETWEEN's bounds and attribute_type's type name) are never cached.
 */
type Json = Record<string, any>;

interface Context {
  attrNames?: Record<string, string>;
  attrVals?: Record<string, Json>;
  unusedAttrNames?: Record<string, boolean>;
  unusedAttrVals?: Record<string, boolean>;
  isKeyCondition?: boolean;
  [other: string]: unknown;
}

interface Parser {
  parse(input: string, options: { context: Context }): unknown;
}

interface Entry {
  result: unknown;
  /** The value objects the tree holds, by attribute value name. */
  values: Record<string, Json>;
  usedNames: string[];
  usedVals: string[];
}

const MAX_ENTRIES = 1000;
const VALUE_DEPENDENT = /\bbetween\b|\battribute_type\b/i;
const TYPES = ['S', 'N', 'B', 'NULL', 'BOOL', 'SS', 'NS', 'BS', 'L', 'M'];

const typeOf = (value: unknown) =>
  value && typeof value === 'object' ? (TYPES.find((t) => (value as Json)[t] != null) ?? '?') : typeof value;

/** Copies the tree, swapping each parse-time value object for this request's. */
function rebuild(node: unknown, swap: Map<object, Json>): unknown {
  if (node === null || typeof node !== 'object') return node;
  const replacement = swap.get(node);
  if (replacement) return replacement;
  if (Array.isArray(node)) {
    const out = new Array(node.length);
    for (let i = 0; i < node.length; i++) out[i] = rebuild(node[i], swap);
    return out;
  }
  const out: Json = {};
  for (const k in node) out[k] = rebuild((node as Json)[k], swap);
  return out;
}

function memoize(parser: Parser, name: string): void {
  const parse = parser.parse.bind(parser);
  const entries = new Map<string, Entry>();
  parser.parse = (input: string, options: { context: Context }) => {
    const context = options.context;
    if (VALUE_DEPENDENT.test(input)) return parse(input, options);
    const vals = context.attrVals ?? {};
    const key = JSON.stringify([
      input,
      context.attrNames ?? null,
      Object.keys(vals).map((k) => [k, typeOf(vals[k])]),
      context.isKeyCondition === true,
    ]);
    let entry = entries.get(key);
    if (!entry) {
      const namesBefore = Object.keys(context.unusedAttrNames ?? {});
      const valsBefore = Object.keys(context.unusedAttrVals ?? {});
      const result = parse(input, options);
      entry = {
        result,
        values: { ...vals },
        usedNames: namesBefore.filter((k) => !(k in (context.unusedAttrNames ?? {}))),
        usedVals: valsBefore.filter((k) => !(k in (context.unusedAttrVals ?? {}))),
      };
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      entries.set(key, entry);
    } else {
      for (const k of entry.usedNames) delete context.unusedAttrNames?.[k];
      for (const k of entry.usedVals) delete context.unusedAttrVals?.[k];
    }
    const swap = new Map<object, Json>();
    for (const [k, v] of Object.entries(entry.values)) if (v && typeof v === 'object' && vals[k]) swap.set(v, vals[k]);
    return rebuild(entry.result, swap);
  };
  Object.defineProperty(parser.parse, 'name', { value: `memoized ${name} parse` });
}

/** Installs the cache on dynalite's three expression parsers (once per process). */
export function memoizeExpressionParsers(require: (id: string) => unknown): void {
  for (const name of ['conditionParser', 'updateParser', 'projectionParser']) {
    const parser = require(`dynalite/db/${name}`) as Parser & { memoized?: boolean };
    if (parser.memoized) continue;
    memoize(parser, name);
    parser.memoized = true;
  }
}
