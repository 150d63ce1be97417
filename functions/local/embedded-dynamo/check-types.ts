/**
 * dynalite's request type check (`checkTypes` in dynalite/validations,
 * Apache-2.0), with the same results and the same errors, without its
 * per-value allocations. dynalite's version parses each node's type name
 * with a regular expression and builds the attribute-value type tree (a
 * dozen objects) anew for every attribute value it meets: for a small PUT's
 * database work that was 40% of everything the engine allocated, and most
 * of its young-generation collections. Here type names are parsed once and
 * the attribute-value tree is a constant.
 *
 * Like dynalite's, it deletes from `data` the keys its types do not know
 * (and null values), and returns the checked data built anew in the order
 * of the type definition.
 */
type Json = Record<string, any>;

/** A node of dynalite's type definitions: a type name, or a name with children. */
type TypeSpec = string | { type: string; children?: TypeSpec | Record<string, TypeSpec> };
type Types = Record<string, TypeSpec>;

interface ParsedType {
  type: string;
  subtype?: string;
}

const parsedTypes = new Map<string, ParsedType>();

/** `Map<AttributeValue>` -> Map and AttributeValue (dynalite's /(.+?)<(.+)>$/), once per name. */
function parseType(name: string): ParsedType {
  let parsed = parsedTypes.get(name);
  if (!parsed) {
    const match = name.match(/(.+?)<(.+)>$/);
    parsed = match ? { type: match[1]!, subtype: match[2]! } : { type: name };
    parsedTypes.set(name, parsed);
  }
  return parsed;
}

/** An attribute value's members, as dynalite spells them out for every value. */
const ATTRIBUTE_VALUE_CHILDREN: Record<string, TypeSpec> = {
  S: 'String',
  B: 'Blob',
  N: 'String',
  BOOL: 'Boolean',
  NULL: 'Boolean',
  BS: { type: 'List', children: 'Blob' },
  NS: { type: 'List', children: 'String' },
  SS: { type: 'List', children: 'String' },
  L: { type: 'List', children: 'AttrStruct<ValueStruct>' },
  M: { type: 'Map<AttributeValue>', children: 'AttrStruct<ValueStruct>' },
};

const attrStructSpecs = new Map<string, TypeSpec>();

function attrStructSpec(subtype: string): TypeSpec {
  let spec = attrStructSpecs.get(subtype);
  if (!spec) {
    spec = { type: `${subtype}<AttributeValue>`, children: ATTRIBUTE_VALUE_CHILDREN };
    attrStructSpecs.set(subtype, spec);
  }
  return spec;
}

function typeError(msg: string): Error {
  const err = new Error(msg) as Error & { statusCode: number; body: Json };
  err.statusCode = 400;
  err.body = { __type: 'com.amazon.coral.service#SerializationException', Message: msg };
  return err;
}

const PARAMETERIZED_CAST =
  "class sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl cannot be cast to class java.lang.Class (sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl and java.lang.Class are in module java.base of loader 'bootstrap')";

const typeKeys = new WeakMap<Types, string[]>();

/** A type definition's keys, listed once (the definitions are dynalite's constants). */
function keysOf(types: Types): string[] {
  let keys = typeKeys.get(types);
  if (!keys) typeKeys.set(types, (keys = Object.keys(types)));
  return keys;
}

export function checkTypes(data: Json, types: Types): Json {
  for (const key in data) {
    if (!types[key] || data[key] == null) delete data[key];
  }
  const checked: Json = {};
  for (const key of keysOf(types)) {
    const val = checkType(data[key], types[key]!);
    if (val != null) checked[key] = val;
  }
  return checked;
}

function checkType(val: any, spec: TypeSpec): any {
  if (val == null) return null;
  let name: string;
  let children: any;
  if (typeof spec === 'string') {
    name = spec;
  } else {
    name = spec.type;
    children = spec.children;
  }
  const { type, subtype } = parseType(name);

  if (type === 'AttrStruct') return checkType(val, attrStructSpec(subtype!));

  switch (type) {
    case 'Boolean':
      switch (typeof val) {
        case 'number':
          throw numberWhere(val, type);
        case 'string': {
          // 'true'/'false'/'1'/'0'/'no'/'yes' seem to convert fine
          const upper = val.toUpperCase();
          if (upper === 'TRUE' || upper === '1' || upper === 'YES') return true;
          if (upper === 'FALSE' || upper === '0' || upper === 'NO') return false;
          throw typeError('Unexpected token received from parser');
        }
        case 'object':
          throw containerWhereScalar(val, type);
      }
      return val;
    case 'Short':
    case 'Integer':
    case 'Long':
    case 'Double':
      switch (typeof val) {
        case 'boolean':
          throw booleanWhere(val, type);
        case 'number':
          return type !== 'Double' ? Math.floor(val) : val;
        case 'string':
          throw typeError(`STRING_VALUE cannot be converted to ${type}`);
        case 'object':
          throw containerWhereScalar(val, type);
      }
      return val;
    case 'String':
      switch (typeof val) {
        case 'boolean':
          throw booleanWhere(val, type);
        case 'number':
          throw numberWhere(val, type);
        case 'object':
          throw containerWhereScalar(val, type);
      }
      return val;
    case 'Blob':
      switch (typeof val) {
        case 'boolean':
        case 'number':
          throw typeError('only base-64-encoded strings are convertible to bytes');
        case 'object':
          if (Array.isArray(val)) throw typeError('Unrecognized collection type class java.nio.ByteBuffer');
          throw typeError('Start of structure or map found where not expected');
      }
      if (val.length % 4) throw typeError(`Base64 encoded length is expected a multiple of 4 bytes but found: ${val.length}`);
      if (Buffer.from(val, 'base64').toString('base64') !== val) throw typeError('Invalid last non-pad Base64 character dectected');
      return val;
    case 'List':
      expectContainer(val, true, 'Unexpected field type');
      return (val as unknown[]).map((child) => checkType(child, children));
    case 'ParameterizedList':
      expectContainer(val, true, PARAMETERIZED_CAST);
      return (val as unknown[]).map((child) => checkType(child, children));
    case 'ParameterizedMap':
      expectContainer(
        val,
        false,
        PARAMETERIZED_CAST,
        () => 'Unrecognized collection type java.util.Map<java.lang.String, com.amazonaws.dynamodb.v20120810.AttributeValue>',
      );
      return mapValues(val, children);
    case 'Map':
      expectContainer(
        val,
        false,
        'Unexpected field type',
        () =>
          `Unrecognized collection type java.util.Map<java.lang.String, ${subtype!.includes('.') ? subtype : `com.amazonaws.dynamodb.v20120810.${subtype}`}>`,
      );
      return mapValues(val, children);
    case 'ValueStruct':
    case 'FieldStruct':
      expectContainer(
        val,
        false,
        type === 'ValueStruct' ? 'Unexpected value type in payload' : 'Unexpected field type',
        () => `Unrecognized collection type class com.amazonaws.dynamodb.v20120810.${subtype}`,
      );
      return checkTypes(val, children);
    default:
      throw new Error(`Unknown type: ${type}`);
  }
}

/** dynalite's errors for a value of the wrong kind where a scalar of `type` belongs. */
const numberWhere = (val: number, type: string) =>
  typeError(`${val % 1 === 0 ? 'NUMBER_VALUE' : 'DECIMAL_VALUE'} cannot be converted to ${type}`);
const booleanWhere = (val: boolean, type: string) => typeError(`${val ? 'TRUE_VALUE' : 'FALSE_VALUE'} cannot be converted to ${type}`);
const containerWhereScalar = (val: object, type: string) =>
  typeError(
    Array.isArray(val) ? `Unrecognized collection type class java.lang.${type}` : 'Start of structure or map found where not expected',
  );

/**
 * A list (`wantArray`) or a map or structure: a scalar fails with `scalar`;
 * an object that is not an array where a list belongs, or an array where a
 * map belongs (`array`), fails too.
 */
function expectContainer(val: unknown, wantArray: boolean, scalar: string, array?: () => string): void {
  switch (typeof val) {
    case 'boolean':
    case 'number':
    case 'string':
      throw typeError(scalar);
    case 'object':
      if (wantArray && !Array.isArray(val)) throw typeError('Start of structure or map found where not expected');
      if (!wantArray && Array.isArray(val)) throw typeError(array!());
  }
}

function mapValues(val: Json, children: TypeSpec): Json {
  const out: Json = {};
  for (const key of Object.keys(val)) out[key] = checkType(val[key], children);
  return out;
}
