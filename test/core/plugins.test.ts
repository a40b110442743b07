import t from 'tap';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';

const SDK = path.resolve(__dirname, '../../sdk/index.js');

/** Writes a plugin module as a third party would ship it (plain JS, requiring the SDK). */
async function writePlugin(dir: string, name: string, body: string): Promise<string> {
  const pluginDir = path.join(dir, name);
  await mkdir(pluginDir, { recursive: true });
  await writeFile(path.join(pluginDir, 'index.js'), `const sdk = require(${JSON.stringify(SDK)});\n${body}\n`);
  return pluginDir;
}

t.test('plugin loader', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-plugins-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  // "base" owns an extension point and a migration; "consumer" depends on it by path.
  await writePlugin(dir, 'base', `
    const greeters = sdk.createExtensionPoint('base.greeters');
    exports.greeters = greeters;
    const order = (globalThis.__order ??= []);
    module.exports = sdk.definePlugin({
      id: 'base', version: '1.2.3', host: '^1',
      configSchema: sdk.Type.Object({ prefix: sdk.Type.String({ default: 'Hi' }) }, { additionalProperties: false }),
      migrations: [{ name: '001', async up(knex) { await knex.schema.createTable('base_things', (t) => { t.increments('id'); }); await knex('base_things').insert({}); } }],
      register(env) {
        const names = [];
        let frozen = false;
        env.registerExtensionPoint(greeters, { add(n) { if (frozen) throw new Error('frozen'); names.push(n); }, freeze() { frozen = true; } });
        env.registerInit({
          deps: { http: sdk.coreServices.http, config: sdk.coreServices.config, db: sdk.coreServices.database, auth: sdk.coreServices.auth },
          async init({ http, config, db, auth }) {
            order.push('base');
            http.get('/base/greetings', async (req) => ({ user: auth.requireUser(req).username, greetings: names.map((n) => config.prefix + ' ' + n), rows: Number((await db('base_things').count({ n: '*' }))[0].n) }));
            http.get('/base/public', { config: { auth: 'public' } }, async () => ({ ok: true }));
          },
        });
      },
    });
    module.exports.greeters = greeters;`);
  const consumer = await writePlugin(dir, 'consumer', `
    module.exports = sdk.definePlugin({
      id: 'consumer', version: '0.0.1', host: '^1', dependsOn: ['../base'],
      register(env) {
        env.registerInit({
          deps: { greeters: sdk.createExtensionPoint('base.greeters') },
          async init({ greeters }) { (globalThis.__order ??= []).push('consumer'); greeters.add('consumer'); },
        });
      },
    });`);

  t.test('a listed plugin brings its dependencies, initialised first, with their default config', async (t) => {
    (globalThis as any).__order = [];
    const host = await createTestHost({ plugins: { [consumer]: {} } });
    t.teardown(() => host.close());
    t.same(host.host.plugins.map((p) => [p.def.id, p.enabledBy]), [['base', 'consumer'], ['consumer', 'config']]);
    t.same((globalThis as any).__order, ['base', 'consumer']);
    const res = await host.inject({ method: 'GET', url: '/base/greetings', headers: host.authHeaders });
    t.equal(res.statusCode, 200);
    t.same(res.json(), { user: 'admin', greetings: ['Hi consumer'], rows: 1 });
  });

  t.test('plugin routes need a token unless marked public', async (t) => {
    const host = await createTestHost({ plugins: { [consumer]: {} } });
    t.teardown(() => host.close());
    const res = await host.inject({ method: 'GET', url: '/base/greetings' });
    t.equal(res.statusCode, 401);
    t.same(Object.keys(res.json()), ['error']);
    t.equal((await host.inject({ method: 'GET', url: '/base/public' })).statusCode, 200);
  });

  t.test('migrations run once across restarts', async (t) => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'antenna-mig-'));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    for (let i = 0; i < 2; i++) {
      const host = await createTestHost({ plugins: { [consumer]: {} }, dataDir });
      const res = await host.inject({ method: 'GET', url: '/base/greetings', headers: host.authHeaders });
      t.equal(res.json().rows, 1, `start ${i + 1}: the migration's row exists exactly once`);
      await host.close();
    }
  });

  t.test('extension registries are frozen once every plugin has initialised', async (t) => {
    const late = await writePlugin(dir, 'late', `
      module.exports = sdk.definePlugin({ id: 'late', version: '1.0.0', host: '^1', dependsOn: ['../base'],
        register(env) {
          let g;
          env.registerInit({ deps: { greeters: sdk.createExtensionPoint('base.greeters'), lifecycle: sdk.coreServices.lifecycle },
            async init({ greeters, lifecycle }) { g = greeters; lifecycle.onStart(() => g.add('too late')); } });
        } });`);
    await t.rejects(createTestHost({ plugins: { [late]: {} } }), /frozen/);
  });

  t.test('config schema errors name the plugin key, the value and the expectation', async (t) => {
    await t.rejects(createTestHost({ plugins: { [path.join(dir, 'base')]: { prefix: 42 } } }), /plugins\["[^"]*base"\]\.prefix: got 42, expected string/);
    await t.rejects(createTestHost({ plugins: { [path.join(dir, 'base')]: { prefx: 'x' } } }), /base"\]\.prefx: got "x", expected no such key/);
  });

  t.test('a plugin that throws while loading stops start-up naming the plugin and the cause', async (t) => {
    const broken = await writePlugin(dir, 'broken', `throw new Error('kaboom at import');`);
    await t.rejects(createTestHost({ plugins: { [broken]: {} } }), /plugin .*broken: failed to load: kaboom at import/);
    const failingInit = await writePlugin(dir, 'failing-init', `
      module.exports = sdk.definePlugin({ id: 'failing-init', version: '1.0.0', host: '^1',
        register(env) { env.registerInit({ deps: {}, async init() { throw new Error('cannot reach the moon'); } }); } });`);
    await t.rejects(createTestHost({ plugins: { [failingInit]: {} } }), /plugin failing-init: init failed: cannot reach the moon/);
    const notAPlugin = await writePlugin(dir, 'not-a-plugin', `module.exports = { hello: 1 };`);
    await t.rejects(createTestHost({ plugins: { [notAPlugin]: {} } }), /does not export a plugin/);
    await t.rejects(createTestHost({ plugins: { 'no-such-plugin-anywhere': {} } }), /plugin no-such-plugin-anywhere: failed to load: not a first-party plugin/);
    await t.rejects(createTestHost({ plugins: { [path.join(dir, 'missing')]: {} } }), /nothing loadable at/);
  });

  t.test('a plugin built for another SDK major is refused with a clear message', async (t) => {
    const future = await writePlugin(dir, 'future', `
      module.exports = { id: 'future', version: '9.0.0', host: '^2', register() {} };`);
    await t.rejects(createTestHost({ plugins: { [future]: {} } }), /plugin future .*built for Antenna SDK \^2, but this server provides SDK 1\.\d+\.\d+/);
  });

  t.test('dependency cycles and duplicate ids are refused', async (t) => {
    await writePlugin(dir, 'cycle-a', `module.exports = sdk.definePlugin({ id: 'cycle-a', version: '1.0.0', host: '^1', dependsOn: ['../cycle-b'], register() {} });`);
    const b = await writePlugin(dir, 'cycle-b', `module.exports = sdk.definePlugin({ id: 'cycle-b', version: '1.0.0', host: '^1', dependsOn: ['../cycle-a'], register() {} });`);
    await t.rejects(createTestHost({ plugins: { [b]: {} } }), /cycle/);
    const twin = await writePlugin(dir, 'twin', `module.exports = sdk.definePlugin({ id: 'base', version: '1.0.0', host: '^1', register() {} });`);
    await t.rejects(createTestHost({ plugins: { [path.join(dir, 'base')]: {}, [twin]: {} } }), /plugin id base is provided twice/);
  });

  t.test('an extension point nobody provides is a start-up error', async (t) => {
    const orphan = await writePlugin(dir, 'orphan', `
      module.exports = sdk.definePlugin({ id: 'orphan', version: '1.0.0', host: '^1',
        register(env) { env.registerInit({ deps: { x: sdk.createExtensionPoint('nobody.here') }, async init() {} }); } });`);
    await t.rejects(createTestHost({ plugins: { [orphan]: {} } }), /plugin orphan: needs extension point nobody\.here/);
  });
});
