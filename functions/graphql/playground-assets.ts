/**
 * The files the GraphiQL playground is made of, by the name it serves them
 * under, with their place in node_modules. Pure data: the CDK stack copies
 * the same files into the GraphQL function's bundle (under `playground/`).
 */
export const PLAYGROUND_ASSETS = {
  'react.production.min.js': 'react/umd/react.production.min.js',
  'react-dom.production.min.js': 'react-dom/umd/react-dom.production.min.js',
  'graphiql.min.js': 'graphiql/graphiql.min.js',
  'graphiql.min.css': 'graphiql/graphiql.min.css',
} as const;

export type PlaygroundAssetName = keyof typeof PLAYGROUND_ASSETS;

/** The bundle's directory of playground files, relative to the handler. */
export const PLAYGROUND_BUNDLE_DIR = 'playground';
