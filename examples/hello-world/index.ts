/**
 * A minimal Antenna plugin, written exactly as a third party would: it imports
 * nothing but the SDK. Enable it with
 *
 *   plugins:
 *     ./examples/hello-world: { greeting: Hi }
 *
 * It adds GET /hello (authenticated, counts each user's visits in its own
 * table) and `antenna hello stats`.
 */
import 'reflect-metadata';
import { coreServices, definePlugin, Type, type Static } from 'antenna/sdk';
import { Visits } from './visits.js';

const configSchema = Type.Object({
  greeting: Type.String({ default: 'Hello', minLength: 1, maxLength: 100 }),
}, { additionalProperties: false });

export default definePlugin({
  id: 'hello-world',
  version: '1.0.0',
  host: '^1',
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
    // Set by init; commands run after every plugin's init, so they can use it.
    let visits: Visits | undefined;

    env.registerInit({
      deps: { config: coreServices.config, http: coreServices.http, auth: coreServices.auth, container: coreServices.container },
      async init({ config, http, auth, container }) {
        const { greeting } = config as Static<typeof configSchema>;
        const counter = (visits = container.resolve(Visits));

        http.get('/hello', {
          schema: {
            summary: 'A greeting and how often you asked for it', tags: ['hello-world'],
            response: { 200: Type.Object({ message: Type.String(), visits: Type.Integer() }) },
          },
        }, async (request) => {
          const user = auth.requireUser(request);
          return { message: `${greeting}, ${user.username}!`, visits: await counter.visit(user.id) };
        });
      },
    });

    env.registerCommand({
      path: ['hello', 'stats'],
      description: 'How many greetings each user received',
      async run(_args, io) {
        const rows = await visits!.all();
        if (!rows.length) io.out('nobody has been greeted yet');
        for (const row of rows) io.out(`${row.username}\t${row.count}`);
      },
    });
  },
});
