/**
 * Lambda door of the GraphQL API: Apollo's Lambda integration (HTTP API
 * payload 2.0), with the same request normalisation as the local door.
 */
import middy from '@middy/core';
import { handlers, startServerAndCreateLambdaHandler } from '@as-integrations/aws-lambda';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { loadConfig } from '../core/config.js';
import { createServices, type Services } from '../core/services.js';
import { contextFor, createApolloServer } from './server.js';

let services: Promise<Services> | undefined;
const getServices = () => (services ??= createServices(loadConfig()));

// The integration is CommonJS and types against Apollo's CJS build; at run
// time it only calls public methods, which the ESM instance has too.
type CjsApolloServer = Parameters<typeof startServerAndCreateLambdaHandler>[0];

const apollo = startServerAndCreateLambdaHandler(createApolloServer() as unknown as CjsApolloServer, handlers.createAPIGatewayProxyEventV2RequestHandler(), {
  middleware: [
    async (event: APIGatewayProxyEventV2) => {
      // Clients in the wild send JSON without a Content-Type.
      const headers = (event.headers ??= {});
      if (event.body && !headers['content-type'] && !headers['Content-Type']) headers['content-type'] = 'application/json';
    },
  ],
  context: async ({ event }) => contextFor(await getServices(), event.headers?.authorization ?? event.headers?.Authorization),
});

export const handler = middy(apollo);
