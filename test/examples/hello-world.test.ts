/**
 * examples/hello-world, tested as its author would with `antenna/sdk/testing`:
 * a real core, the plugin loaded by path, and a small plugin given as a
 * definition that uses what hello-world offers (its service and extension point).
 */
import t from 'tap';
import path from 'node:path';
import { coreServices, definePlugin } from '../../sdk/index.js';
import { createTestHost } from '../../sdk/testing.js';
import { greetingsExtensionPoint, visitsService } from '../../examples/hello-world/api.js';

const REPO = path.resolve(__dirname, '../../..');
const HELLO = './dist/examples/hello-world';

t.test('the hello-world example loads by path and works end to end', async (t) => {
  const host = await createTestHost({ baseDir: REPO, plugins: { [HELLO]: { greeting: 'Hi' } } });
  t.teardown(() => host.close());
  t.equal(host.host.plugins[0].source, 'path');
  const first = await host.inject({ method: 'GET', url: '/hello', headers: host.authHeaders });
  t.same(first.json(), { message: 'Hi, admin!', visits: 1 });
  const second = await host.inject({ method: 'GET', url: '/hello', headers: host.authHeaders });
  t.equal(second.json().visits, 2);
  t.equal((await host.inject({ method: 'GET', url: '/hello' })).statusCode, 401);
});

t.test('its config is validated', async (t) => {
  await t.rejects(createTestHost({ baseDir: REPO, plugins: { [HELLO]: { greeting: '' } } }), /greeting: got "", expected/);
});

t.test('another plugin builds on its service and extension point', async (t) => {
  // Listed first on purpose: it still starts after hello-world, whose refs it names.
  const french = definePlugin({
    id: 'hello-french', version: '1.0.0', host: '^1.1',
    register(env) {
      env.registerInit({
        deps: { greetings: greetingsExtensionPoint, visits: visitsService, http: coreServices.http, auth: coreServices.auth },
        async init({ greetings, visits, http, auth }) {
          greetings.add('fr', 'Bonjour');
          http.get('/hello-french/visits', async (request) => ({ visits: await visits.of(auth.requireUser(request).id) }));
        },
      });
    },
  });
  const host = await createTestHost({ baseDir: REPO, definitions: [french], plugins: { [HELLO]: {} } });
  t.teardown(() => host.close());
  const hello = (lang: string) => host.inject({ method: 'GET', url: `/hello?lang=${lang}`, headers: host.authHeaders });
  t.same((await hello('fr')).json(), { message: 'Bonjour, admin!', visits: 1 }, 'a greeting registered through the extension point');
  t.same((await hello('de')).json(), { message: 'Hello, admin!', visits: 2 }, 'the configured greeting otherwise');
  t.same((await host.inject({ method: 'GET', url: '/hello-french/visits', headers: host.authHeaders })).json(), { visits: 2 }, 'the visit count through the service');
});
