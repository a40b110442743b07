/**
 * The route table: every registered route (core, docs, and plugins' scopes)
 * needs a token, except POST /login, GET /api/version and the docs page with
 * its static assets. Routes come from routeTable(app), an onRoute hook the core
 * registers before any route; the list is cross-checked against printRoutes().
 */
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';
import { routeTable, type RouteEntry } from '../../core/http/app.js';
import { firstPartyNames } from '../../core/plugins/loader.js';
import { REPO_ROOT, expectError, tmpDir } from '../helpers/http.js';

const SDK = path.join(REPO_ROOT, 'dist/sdk/index.js');
const HELLO = path.join(REPO_ROOT, 'dist/examples/hello-world');

const CORE_PUBLIC = [
  'POST /login',
  'GET /api/version', 'HEAD /api/version',
  'GET /api/docs', 'HEAD /api/docs',
  'GET /api/docs/static/index.html', 'HEAD /api/docs/static/index.html',
  'GET /api/docs/static/swagger-initializer.js', 'HEAD /api/docs/static/swagger-initializer.js',
  'GET /api/docs/static/*', 'HEAD /api/docs/static/*',
];

/** A concrete URL for a route pattern: every parameter and wildcard becomes 1. */
const concrete = (url: string) => url.replace(/:[A-Za-z0-9_]+(\([^)]*\))?/g, '1').replace(/\*/g, '1');
const key = (r: RouteEntry) => `${r.method} ${r.url}`;

/** A probe plugin, as a third party ships it: params, a regex param, a body schema, media and public routes. */
async function writeProbe(dir: string): Promise<string> {
  const pluginDir = path.join(dir, 'probe');
  await mkdir(pluginDir, { recursive: true });
  await writeFile(path.join(pluginDir, 'index.js'), `
    const sdk = require(${JSON.stringify(SDK)});
    module.exports = sdk.definePlugin({
      id: 'probe', version: '1.0.0', host: '^1',
      register(env) {
        env.registerInit({
          deps: { http: sdk.coreServices.http, auth: sdk.coreServices.auth },
          async init({ http, auth }) {
            const ok = async (req) => ({ user: auth.requireUser(req).id });
            http.get('/probe/items/:id', ok);
            http.get('/probe/n/:n(^\\\\d+)', ok);
            http.delete('/probe/items/:id/tags/:tag', ok);
            http.post('/probe/items', { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } }, ok);
            http.route({ method: ['PATCH', 'PUT'], url: '/probe/both', handler: ok });
            http.get('/probe/media/:id/seg.ts', { config: { auth: 'media', mediaScope: (req) => 'probe:' + req.params.id } }, ok);
            http.get('/probe/files/*', ok);
            http.get('/probe/public', { config: { auth: 'public' } }, async () => ({ ok: true }));
            await http.register(async (child) => { child.get('/probe/nested', ok); }, { prefix: '' });
          },
        });
      },
    });
  `);
  return pluginDir;
}

/** method+path pairs in printRoutes() output, rebuilt from its tree, as an independent count. */
function methodsInPrintRoutes(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) {
    const m = /\(([A-Z, ]+)\)\s*$/.exec(line);
    if (m) n += m[1]!.split(',').length;
  }
  return n;
}

t.test('every route needs a token except the public ones', async (t) => {
  const dir = await tmpDir(t, 'antenna-routes-');
  const probe = await writeProbe(dir);
  const host = await createTestHost({ plugins: { [probe]: {}, [HELLO]: {} } });
  t.teardown(() => host.close());

  const routes = routeTable(host.app);
  const keys = routes.map(key);
  t.equal(new Set(keys).size, keys.length, 'no route is listed twice');
  for (const must of [
    'POST /login', 'POST /logout', 'GET /me', 'HEAD /me', 'PUT /api/user/me/password', 'POST /api/user/me/avatar', 'GET /api/user/me/avatar',
    'GET /api/version', 'GET /api/docs', 'GET /api/docs/json', 'GET /api/docs/yaml',
    'GET /hello', 'GET /probe/items/:id', 'DELETE /probe/items/:id/tags/:tag', 'POST /probe/items', 'PATCH /probe/both', 'PUT /probe/both',
    'GET /probe/media/:id/seg.ts', 'GET /probe/public', 'GET /probe/nested', 'HEAD /probe/nested',
  ]) t.ok(keys.includes(must), `${must} is in the route table`);
  t.equal(routes.length, methodsInPrintRoutes(host.app.printRoutes({ commonPrefix: false })), 'as many routes as printRoutes() shows');
  for (const r of routes) t.ok(host.app.hasRoute({ method: r.method as 'GET', url: r.url }), `${key(r)} is a real route`);

  const expectedPublic = [...CORE_PUBLIC, 'GET /probe/public', 'HEAD /probe/public'].sort();
  const answeredWithoutToken: string[] = [];
  for (const r of routes) {
    const url = concrete(r.url);
    const res = await host.inject({ method: r.method as 'GET', url });
    if (res.statusCode === 401) {
      if (r.method !== 'HEAD') expectError(t, res, 401, undefined, `${key(r)} without a token`);
      t.not(r.auth, 'public', `${key(r)} is not marked public`);
    } else {
      answeredWithoutToken.push(key(r));
    }
  }
  t.strictSame(answeredWithoutToken.sort(), expectedPublic, 'exactly these routes answer without a token');
  for (const r of routes) if (r.auth === 'public') t.ok(expectedPublic.includes(key(r)), `${key(r)} is marked public and expected to be`);

  // The OpenAPI document is not public; the docs page is.
  expectError(t, await host.inject({ method: 'GET', url: '/api/docs/json' }), 401);
  expectError(t, await host.inject({ method: 'GET', url: '/api/docs/yaml' }), 401);
  const doc = await host.inject({ method: 'GET', url: '/api/docs/json', headers: host.authHeaders });
  t.equal(doc.statusCode, 200);
  t.match(doc.json(), { openapi: /^3\./, paths: { '/login': { post: {} }, '/me': { get: {} } } });
  t.strictSame(doc.json().paths['/login'].post.security, [], 'POST /login is documented as public');
  const page = await host.inject({ method: 'GET', url: '/api/docs' });
  t.equal(page.statusCode, 200, 'docs page is served');
  t.match(page.headers['content-type'], /^text\/html/);
  t.equal((await host.inject({ method: 'GET', url: '/api/docs/static/swagger-initializer.js' })).statusCode, 200, 'docs assets are served');

  // Bad credentials, and a token only in the query of a non-media route, are still 401.
  for (const r of routes) {
    if (expectedPublic.includes(key(r)) || r.method === 'HEAD') continue;
    const url = concrete(r.url);
    expectError(t, await host.inject({ method: r.method as 'GET', url, headers: { authorization: 'Bearer garbage' } }), 401, undefined, `${key(r)} with a garbage token`);
    if (r.auth !== 'media') expectError(t, await host.inject({ method: r.method as 'GET', url: `${url}?api_key=${host.adminToken}` }), 401, undefined, `${key(r)} with ?api_key`);
  }
  // A media route takes the token as ?api_key, and rejects a garbage one.
  t.equal((await host.inject({ method: 'GET', url: `/probe/media/1/seg.ts?api_key=${host.adminToken}` })).statusCode, 200, 'media route with ?api_key');
  expectError(t, await host.inject({ method: 'GET', url: '/probe/media/1/seg.ts?api_key=garbage' }), 401, undefined, 'media route with a garbage api_key');
  expectError(t, await host.inject({ method: 'GET', url: '/probe/media/1/seg.ts?key=forged.key' }), 401, undefined, 'media route with a forged key');

  // With an admin's token (an admin may do everything), no route answers 401 or 403 (logout last: it ends the session).
  const token = await host.login('admin', host.adminPassword, { 'device-id': 'route-table' });
  const ordered = [...routes].sort((a, b) => Number(key(a) === 'POST /logout') - Number(key(b) === 'POST /logout'));
  for (const r of ordered) {
    const res = await host.inject({ method: r.method as 'GET', url: concrete(r.url), headers: { authorization: `Bearer ${token}` } });
    t.notOk([401, 403].includes(res.statusCode), `${key(r)} accepts an admin token (${res.statusCode})`);
    t.not(res.statusCode, 500, `${key(r)} does not fail with 500`);
  }
});

t.test('first-party plugins, when built, add no public route', async (t) => {
  const names = firstPartyNames();
  if (!names.length) {
    t.plan(0, 'no first-party plugin is built yet');
    return;
  }
  const host = await createTestHost({ plugins: Object.fromEntries(names.map((n) => [n, {}])) });
  t.teardown(() => host.close());
  const webRoutes = new Set<string>();
  for (const r of routeTable(host.app)) {
    const res = await host.inject({ method: r.method as 'GET', url: concrete(r.url) });
    if (res.statusCode === 401) {
      if (r.method !== 'HEAD') expectError(t, res, 401, undefined, `${key(r)} without a token`);
      continue;
    }
    if (CORE_PUBLIC.includes(key(r))) continue;
    // The web app's static files are public by design (PRODUCT.md §2); nothing else is.
    if (names.includes('web') && (r.method === 'GET' || r.method === 'HEAD') && r.auth === 'public' && !/^\/(api|watch|me|login|logout|channels?|programs|recordings?|librar|item)\b/.test(r.url)) {
      webRoutes.add(key(r));
      continue;
    }
    t.fail(`${key(r)} answers ${res.statusCode} without a token`);
  }
  const pluginRoutes = routeTable(host.app).filter((r) => !CORE_PUBLIC.includes(key(r)) && !/^\/(login|logout|me|api\/(docs|user|version|jobs))\b/.test(r.url));
  t.ok(pluginRoutes.length > 0, `the plugins' routes were checked: ${names.join(', ')}`);
  if (webRoutes.size) t.comment(`web app routes: ${[...webRoutes].join(', ')}`);
});

t.test('keyed routes (access-key) answer only an active key, or an open network without one', async (t) => {
  const host = await createTestHost({ plugins: { hdhomerun: {}, 'iptv-output': {} } });
  t.teardown(() => host.close());
  const keyed = routeTable(host.app).filter((r) => r.auth === 'access-key');
  const urls = keyed.map(key);
  for (const must of ['GET /hdhr/:key/discover.json', 'GET /hdhr/:key/lineup.json', 'GET /hdhr/:key/auto/:channel', 'POST /hdhr/:key/lineup.post',
    'GET /hdhr/discover.json', 'GET /iptv/:key/channels.m3u', 'GET /iptv/:key/guide.xml.gz', 'GET /iptv/:key/stream/:file', 'GET /iptv/guide.xml']) {
    t.ok(urls.includes(must), `${must} is an access-key route`);
  }
  t.ok(keyed.every((r) => /^\/(hdhr|iptv)\//.test(r.url)), 'only the client outputs are keyed');
  t.notOk(urls.includes('HEAD /hdhr/:key/auto/:channel') || urls.includes('HEAD /iptv/:key/stream/:file'), 'a HEAD never tunes a channel');
  const created = (await host.inject({ method: 'POST', url: '/api/admin/access-keys', headers: host.authHeaders, payload: { name: 'routes' } })).json().access_key;
  const withKey = (r: RouteEntry, k: string) => r.url.replace(':key', k).replace(':channel', 'v0').replace(':file', '0.ts');
  const refused = (res: { statusCode: number; body: string; headers: Record<string, any> }, r: RouteEntry, what: string) => {
    if (r.method === 'HEAD') t.equal(res.statusCode, 401, `${key(r)} ${what}`);
    else expectError(t, res, 401, undefined, `${key(r)} ${what}`);
  };
  for (const r of keyed) {
    const method = r.method as 'GET';
    if (!r.url.includes(':key')) {
      refused(await host.inject({ method, url: withKey(r, '') }), r, 'without a key, not from an open network');
      refused(await host.inject({ method, url: withKey(r, ''), headers: host.authHeaders }), r, 'with a token and no key');
      continue;
    }
    refused(await host.inject({ method, url: withKey(r, 'garbage') }), r, 'with a wrong key');
    refused(await host.inject({ method, url: withKey(r, 'garbage'), headers: host.authHeaders }), r, 'with a token: a token is not a key');
    const res = await host.inject({ method, url: withKey(r, created.key) });
    t.notOk([401, 403, 500].includes(res.statusCode), `${key(r)} with the key: ${res.statusCode}`);
  }
  await host.inject({ method: 'DELETE', url: `/api/admin/access-keys/${created.id}`, headers: host.authHeaders });
  expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${created.key}/discover.json` }), 401, undefined, 'a revoked key, at once');

  // An open network gets the key-less paths; everyone else a 401 on them.
  const open = await createTestHost({ plugins: { hdhomerun: {} }, config: { accessKeys: { open: ['127.0.0.0/8'] } } });
  t.teardown(() => open.close());
  t.equal((await open.inject({ method: 'GET', url: '/hdhr/discover.json', remoteAddress: '127.0.0.9' })).statusCode, 200, 'open network, no key');
  expectError(t, await open.inject({ method: 'GET', url: '/hdhr/discover.json', remoteAddress: '192.168.1.4' }), 401, undefined, 'another network');
  expectError(t, await open.inject({ method: 'GET', url: `/hdhr/${'k'.repeat(32)}/discover.json`, remoteAddress: '127.0.0.9' }), 401, undefined, 'a wrong key is wrong even from an open network');
  await t.rejects(createTestHost({ plugins: {}, config: { accessKeys: { open: ['10.0.0.0/33'] } } }), /accessKeys\.open\[0\]/, 'a bad network stops start-up, naming it');
});
