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
import { coreServices, definePlugin, Type, type Database, type Static } from 'antenna/sdk';

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
          t.integer('user_id').primary();
          t.integer('count').notNullable();
        });
      },
    },
  ],
  register(env) {
    // Set by init; commands run after every plugin's init, so they can use it.
    let db: Database | undefined;

    env.registerInit({
      deps: {
        config: coreServices.config, http: coreServices.http, database: coreServices.database,
        auth: coreServices.auth, logger: coreServices.logger,
      },
      async init({ config, http, database, auth, logger }) {
        const { greeting } = config as Static<typeof configSchema>;
        db = database;

        http.get('/hello', {
          schema: {
            summary: 'A greeting and how often you asked for it', tags: ['hello-world'],
            response: { 200: Type.Object({ message: Type.String(), visits: Type.Integer() }) },
          },
        }, async (request) => {
          const user = auth.requireUser(request);
          await database('hello_visits').insert({ user_id: user.id, count: 1 }).onConflict('user_id').merge({ count: database.raw('hello_visits.count + 1') });
          const row = await database('hello_visits').where({ user_id: user.id }).first();
          logger.debug({ user: user.id }, 'greeted');
          return { message: `${greeting}, ${user.username}!`, visits: Number(row.count) };
        });
      },
    });

    env.registerCommand({
      path: ['hello', 'stats'],
      description: 'How many greetings each user received',
      async run(_args, io) {
        const rows = await db!('hello_visits').join('users', 'users.id', 'hello_visits.user_id').select('users.username', 'hello_visits.count');
        if (!rows.length) io.out('nobody has been greeted yet');
        for (const row of rows) io.out(`${row.username}\t${row.count}`);
      },
    });
  },
});
