/**
 * A small Antenna plugin, written exactly as a third party would: it imports
 * nothing from Antenna but the SDK. Enable it with
 *
 *   plugins:
 *     ./dist/examples/hello-world: { greeting: Hi }     # in this repository
 *     antenna-plugin-hello-world: { greeting: Hi }      # installed from npm
 *
 * It shows each part of the SDK: typed config, a migration, an authenticated
 * route, a service and an extension point offered to other plugins (api.ts),
 * and a CLI command (`antenna hello stats`).
 */
import { coreServices, definePlugin, Type } from 'antenna/sdk';
import { greetingsExtensionPoint, visitsService, type Greetings } from './api.js';
import { Visits } from './visits.js';

const configSchema = Type.Object({
  greeting: Type.String({ default: 'Hello', minLength: 1, maxLength: 100 }),
}, { additionalProperties: false });

export default definePlugin({
  id: 'hello-world',
  version: '1.1.0',
  host: '^1.1',
  description: 'Greets the caller and counts visits',
  configSchema,
  migrations: [
    {
      name: '001_visits',
      async up(knex) {
        await knex.schema.createTable('hello_visits', (t) => {
          t.integer('user_id').primary().references('users.id').onDelete('CASCADE');
          t.integer('count').notNullable();
        });
      },
    },
  ],
  register(env) {
    // What other plugins register here is read when a request comes, after every init.
    const greetings = new Map<string, string>();
    const registry: Greetings = {
      add(language, greeting) {
        if (greetings.has(language)) throw new Error(`a greeting in ${language} is already registered`);
        greetings.set(language, greeting);
      },
    };
    env.registerExtensionPoint(greetingsExtensionPoint, registry);

    env.registerInit({
      deps: { config: coreServices.config, http: coreServices.http, auth: coreServices.auth, container: coreServices.container },
      provides: { visits: visitsService },
      async init({ config, http, auth, container }) {
        // config is Static<typeof configSchema>: config.greeting is a string, no cast needed.
        const visits = container.resolve(Visits);

        http.get('/hello', {
          schema: {
            summary: 'A greeting and how often you asked for it', tags: ['hello-world'],
            querystring: Type.Object({ lang: Type.Optional(Type.String({ maxLength: 35 })) }),
            response: { 200: Type.Object({ message: Type.String(), visits: Type.Integer() }) },
          },
        }, async (request) => {
          const user = auth.requireUser(request);
          const { lang } = request.query as { lang?: string };
          const greeting = (lang && greetings.get(lang)) || config.greeting;
          return { message: `${greeting}, ${user.username}!`, visits: await visits.visit(user.id) };
        });
        return { visits };
      },
    });

    env.registerCommand({
      path: ['hello', 'stats'],
      description: 'How many greetings each user received',
      deps: { container: coreServices.container },
      async run(_args, io, { container }) {
        const rows = await container.resolve(Visits).all();
        if (!rows.length) io.out('nobody has been greeted yet');
        for (const row of rows) io.out(`${row.username}\t${row.count}`);
      },
    });
  },
});
