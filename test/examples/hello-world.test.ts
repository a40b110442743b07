import t from 'tap';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';

const REPO = path.resolve(__dirname, '../../..');

t.test('the hello-world example loads by path and works end to end', async (t) => {
  const host = await createTestHost({ baseDir: REPO, plugins: { './examples/hello-world': { greeting: 'Hi' } } });
  t.teardown(() => host.close());
  t.equal(host.host.plugins[0].source, 'path');
  const first = await host.inject({ method: 'GET', url: '/hello', headers: host.authHeaders });
  t.same(first.json(), { message: 'Hi, admin!', visits: 1 });
  const second = await host.inject({ method: 'GET', url: '/hello', headers: host.authHeaders });
  t.equal(second.json().visits, 2);
  t.equal((await host.inject({ method: 'GET', url: '/hello' })).statusCode, 401);
});

t.test('its config is validated', async (t) => {
  await t.rejects(createTestHost({ baseDir: REPO, plugins: { './examples/hello-world': { greeting: '' } } }), /greeting: got "", expected/);
});
