/**
 * The ceiling of `npm run bench:graphql`'s side-by-side part: Apollo Server
 * as its documentation starts one (`startStandaloneServer`, node:http with
 * its JSON body parser), over Cairn's own schema (schema.graphql), whose two
 * read fields answer from memory what Cairn answered for the same queries:
 * no authentication, no database, no limits, no answer budget. Its answers
 * are byte for byte Cairn's (the benchmark checks), so both servers
 * serialise the same shapes.
 *
 * Plain JavaScript, run by plain node: PORT and ANSWERS (a JSON file of
 * `{ page, site }`, the `getSitesByTeam` and `getSiteBySlug` values) from
 * the environment; prints "ready" once listening.
 */
import { readFileSync } from 'node:fs';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';

const answers = JSON.parse(readFileSync(process.env.ANSWERS, 'utf8'));
const server = new ApolloServer({
  typeDefs: readFileSync(new URL('../schema.graphql', import.meta.url), 'utf8'),
  resolvers: {
    Query: {
      getSitesByTeam: () => answers.page,
      getSiteBySlug: () => answers.site,
    },
    SiteSource: { __resolveType: (source) => source.__typename },
  },
});
const { url } = await startStandaloneServer(server, { listen: { port: Number(process.env.PORT), host: '127.0.0.1' } });
process.stdout.write(`ready ${url}\n`);
