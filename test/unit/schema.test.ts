/**
 * schema.graphql holds the service description's types, enums and
 * operations exactly, and Cairn's additions in the same style.
 */
import {
  buildSchema,
  isEnumType,
  isInputObjectType,
  isObjectType,
  isScalarType,
  isUnionType,
  type GraphQLField,
  type GraphQLInputField,
} from 'graphql';
import { loadTypeDefs } from '../../functions/graphql/schema.js';
import {
  ADDED_MUTATIONS,
  ADDED_QUERIES,
  ENUMS,
  fieldsWithAdditions,
  INPUTS,
  MUTATIONS,
  OBJECTS,
  QUERIES,
  SCALARS,
  UNIONS,
} from '../support/service-description.js';

const schema = buildSchema(loadTypeDefs());

const fieldsOf = (fields: Record<string, GraphQLField<unknown, unknown> | GraphQLInputField>) =>
  Object.fromEntries(Object.entries(fields).map(([n, f]) => [n, String(f.type)]));

test.each(Object.entries(OBJECTS))("type %s has exactly the described fields (and Cairn's listed additions)", (name, fields) => {
  const type = schema.getType(name);
  expect(isObjectType(type)).toBe(true);
  if (isObjectType(type)) expect(fieldsOf(type.getFields())).toEqual(fieldsWithAdditions(name, fields));
});

test.each(Object.entries(UNIONS))('%s is the union of the described types', (name, members) => {
  const type = schema.getType(name);
  expect(isUnionType(type) && type.getTypes().map(String).sort()).toEqual(members);
});

test.each(Object.entries(INPUTS))('input %s has exactly the described fields', (name, fields) => {
  const type = schema.getType(name);
  expect(isInputObjectType(type) && fieldsOf(type.getFields())).toEqual(fields);
});

test.each(Object.entries(ENUMS))('enum %s has the described values', (name, values) => {
  const type = schema.getType(name);
  expect(isEnumType(type) && type.getValues().map((v) => v.name)).toEqual(values);
});

test.each(SCALARS)('%s is a custom scalar', (name) => {
  expect(isScalarType(schema.getType(name))).toBe(true);
});

const signature = (field: GraphQLField<unknown, unknown>) =>
  `(${field.args.map((a) => `${a.name}: ${String(a.type)}`).join(', ')}): ${String(field.type)}`;
const signatures = (fields: Record<string, GraphQLField<unknown, unknown>>) =>
  Object.fromEntries(Object.entries(fields).map(([n, f]) => [n, signature(f)]));

test('queries: the described ones exactly, then the additions', () => {
  expect(signatures(schema.getQueryType()!.getFields())).toEqual({ ...QUERIES, ...ADDED_QUERIES });
});

test('mutations: the described ones exactly, then the additions', () => {
  expect(signatures(schema.getMutationType()!.getFields())).toEqual({ ...MUTATIONS, ...ADDED_MUTATIONS });
});

test('a site source to set is exactly one of repository or ipfs (@oneOf)', () => {
  const type = schema.getType('SiteSourceInput');
  expect(isInputObjectType(type) && type.isOneOf).toBe(true);
});
