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

t.test('SDK 1.1: services between plugins, init order from the refs used', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-services-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // "owner" offers a service; "user" names it. Nothing in dependsOn says who goes first.
  const owner = await writePlugin(dir, 'owner', `
    const counter = sdk.createServiceRef({ id: 'owner.counter', owner: 'owner' });
    module.exports = sdk.definePlugin({ id: 'owner', version: '1.0.0', host: '^1.1',
      register(env) {
        env.registerInit({ deps: { logger: sdk.coreServices.logger }, provides: { counter },
          async init() { (globalThis.__order ??= []).push('owner'); let n = 0; return { counter: { next: () => ++n } }; } });
      } });`);
  // The ref is the same by id wherever it is made (a plugin's api module, another copy of the SDK).
  const user = await writePlugin(dir, 'user', `
    const counter = sdk.createServiceRef({ id: 'owner.counter', owner: 'owner' });
    module.exports = sdk.definePlugin({ id: 'user', version: '1.0.0', host: '^1.1',
      register(env) {
        env.registerInit({ deps: { counter, http: sdk.coreServices.http },
          async init({ counter, http }) { (globalThis.__order ??= []).push('user'); http.get('/user/next', async () => ({ n: counter.next() })); } });
        env.registerCommand({ path: ['user', 'next'], description: 'next', deps: { counter },
          async run(args, io, { counter }) { io.out(String(counter.next())); } });
      } });`);

  t.test('a consumer listed before the owner of what it uses still inits after it', async (t) => {
    (globalThis as any).__order = [];
    const host = await createTestHost({ plugins: { [user]: {}, [owner]: {} } });
    t.teardown(() => host.close());
    t.same((globalThis as any).__order, ['owner', 'user']);
    t.same((await host.inject({ method: 'GET', url: '/user/next', headers: host.authHeaders })).json(), { n: 1 });
    const lines: string[] = [];
    const found = host.host.findCommand(['user', 'next'])!;
    await host.host.runCommand(found.entry, found.args, { progress: { update() {}, done() {} }, out: (l) => lines.push(l) });
    t.same(lines, ['2'], 'a command gets the services its deps name: the same instance the routes use');
  });

  t.test('a service whose owner is not enabled stops start-up naming both and the ref', async (t) => {
    await t.rejects(createTestHost({ plugins: { [user]: {} } }),
      /plugin user: needs service owner\.counter of plugin owner, which is not enabled \(list owner under plugins: or in user's dependsOn\)/);
  });

  t.test('plugins using each other in a cycle stop start-up, naming the plugins and the refs', async (t) => {
    const a = await writePlugin(dir, 'ring-a', `
      module.exports = sdk.definePlugin({ id: 'ring-a', version: '1.0.0', host: '^1.1',
        register(env) { env.registerInit({ deps: { b: sdk.createServiceRef({ id: 'ring-b.api', owner: 'ring-b' }) },
          provides: { a: sdk.createServiceRef({ id: 'ring-a.api', owner: 'ring-a' }) }, async init() { return { a: {} }; } }); } });`);
    const b = await writePlugin(dir, 'ring-b', `
      module.exports = sdk.definePlugin({ id: 'ring-b', version: '1.0.0', host: '^1.1',
        register(env) { env.registerInit({ deps: { a: sdk.createServiceRef({ id: 'ring-a.api', owner: 'ring-a' }) },
          provides: { b: sdk.createServiceRef({ id: 'ring-b.api', owner: 'ring-b' }) }, async init() { return { b: {} }; } }); } });`);
    await t.rejects(createTestHost({ plugins: { [a]: {}, [b]: {} } }),
      /plugins use each other in a cycle: ring-a \(uses ring-b\.api\) -> ring-b \(uses ring-a\.api\) -> ring-a/);
  });

  t.test('an init that does not return a service it provides stops start-up', async (t) => {
    const lazy = await writePlugin(dir, 'lazy', `
      module.exports = sdk.definePlugin({ id: 'lazy', version: '1.0.0', host: '^1.1',
        register(env) { env.registerInit({ deps: {}, provides: { api: sdk.createServiceRef({ id: 'lazy.api', owner: 'lazy' }) }, async init() {} }); } });`);
    await t.rejects(createTestHost({ plugins: { [lazy]: {} } }), /plugin lazy: init did not return api, the lazy\.api it provides/);
  });

  t.test('a command naming a service nobody enabled provides is refused at start', async (t) => {
    const cmd = await writePlugin(dir, 'cmd', `
      module.exports = sdk.definePlugin({ id: 'cmd', version: '1.0.0', host: '^1.1',
        register(env) { env.registerCommand({ path: ['cmd'], description: 'x', deps: { x: sdk.createServiceRef({ id: 'gone.api', owner: 'gone' }) }, async run() {} }); } });`);
    await t.rejects(createTestHost({ plugins: { [cmd]: {} } }), /plugin cmd: needs service gone\.api of plugin gone, which is not enabled/);
  });
});
