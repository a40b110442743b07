#!/usr/bin/env node
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline/promises';
import pino from 'pino';
import { loadConfig } from '../config/load.js';
import type { AntennaConfig } from '../config/schema.js';
import { Host } from '../host.js';
import { openDatabase } from '../db/database.js';
import { runMigrations } from '../db/migrations.js';
import { notifyNodes } from '../cluster/messages.js';
import { coreMigrations } from '../db/core-migrations.js';
import { AccountStore } from '../auth/accounts.js';
import { AccessKeys, openNetworks, type AccessKeyView } from '../auth/access-keys.js';
import { loadOrCreateSecret } from '../auth/secret.js';
import { loadPlugins } from '../plugins/loader.js';
import { pluginCommands } from '../plugins/commands.js';
import { createProgress } from './progress.js';
import { startupBanner } from './banner.js';
import { VERSION } from '../version.js';
import { mkdir } from 'node:fs/promises';

/** The core's commands: usage, then what it does. */
const CORE_COMMANDS: [string, string][] = [
  ['serve', 'start the server (default)'],
  ['user add NAME --password P [--admin] [--inactive] [--library ID ...]', 'create a user; --library restricts them to those libraries'],
  ['user passwd NAME [--password P]', 'set a password (prompts when --password is omitted); signs the user out'],
  ['user set NAME [--active|--inactive] [--admin|--no-admin] [--library ID ... | --all-libraries]', 'change a user'],
  ['user remove NAME', 'remove a user with their sessions, favorites and progress'],
  ['user list', 'list users'],
  ['access-key create NAME', 'a key for clients that cannot sign in (HDHomeRun, M3U/XMLTV); prints it with its URLs'],
  ['access-key list', 'the access keys with their URLs'],
  ['access-key revoke NAME|ID', 'revoke a key: it stops working and its open streams close'],
  ['plugins', 'what is loaded, from where, with which version'],
  ['help', 'this list, with the commands of the enabled plugins'],
];

const table = (rows: [string, string][]) => rows.map(([usage, what]) => `  ${usage}\n      ${what}`).join('\n');

const USAGE = `antenna ${VERSION}

Usage: antenna <command> [--config FILE]

${table(CORE_COMMANDS)}

Config: --config FILE or ANTENNA_CONFIG; ANTENNA_PORT, ANTENNA_HOST, ANTENNA_DATA_DIR override it.
With no config the demo runs (data in ./data).`;

/** The usage, then every command the enabled plugins add (or why they could not be read). */
async function help(file: string | undefined): Promise<string> {
  let plugins: string;
  try {
    const commands = pluginCommands(await loadPlugins(loadConfig({ file })));
    plugins = commands.length
      ? table(commands.map((c) => [c.usage, `${c.description} (plugin ${c.plugin})`]))
      : '  (none)';
  } catch (err) {
    plugins = `  (the plugins' commands are not known: ${(err as Error).message.split('\n')[0]})`;
  }
  return `${USAGE}\n\nCommands of the enabled plugins:\n${plugins}`;
}

class UsageError extends Error {}

function out(line = ''): void {
  process.stdout.write(line + '\n');
}

/**
 * Runs `fn` on the accounts; `changed(id)` tells running servers that a user's sessions or rights
 * changed: at once in cluster mode (the nodes listen), else they see it within 5 s.
 */
async function withAccounts<T>(config: AntennaConfig, fn: (store: AccountStore, changed: (userId: number) => Promise<void>) => Promise<T>): Promise<T> {
  await mkdir(config.server.dataDir, { recursive: true, mode: 0o700 });
  const knex = await openDatabase(config);
  const changed = async (userId: number) => {
    if (config.cluster && config.database.client === 'pg') await notifyNodes(knex, 'auth', `u:${userId}`);
  };
  try {
    await runMigrations(knex, 'core', coreMigrations);
    return await fn(new AccountStore(knex), changed);
  } finally {
    await knex.destroy();
  }
}

async function askPassword(prompt: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: !!process.stdin.isTTY });
  try {
    return (await rl.question(prompt)).trim();
  } finally {
    rl.close();
  }
}

async function serve(config: AntennaConfig): Promise<void> {
  // Handlers go in before start-up: a signal while plugins start (and may already run ffmpeg)
  // must still shut down cleanly instead of killing the process and orphaning children.
  let host: Host | undefined;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    if (!host) return; // still starting: closed as soon as start-up ends
    host.logger.info({ event: 'shutdown', signal }, 'shutting down');
    await host.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  host = await Host.create({ config, mode: 'server' });
  if (stopping) {
    await host.close();
    process.exit(0);
  }
  const banner = () => startupBanner({
    version: VERSION, url: host!.publicUrl, host: config.server.host, port: Number(new URL(host!.publicUrl).port) || config.server.port,
    adminPassword: host!.firstAdminPassword,
  });
  try {
    await host.listen();
  } catch (err) {
    // The generated password is in no other place: say it even when the port is taken.
    if (host.firstAdminPassword) process.stderr.write(banner().replace(' is running.', ' could not start.'));
    throw err;
  }
  process.stderr.write(banner());
}

async function userCommand(config: AntennaConfig, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true, strict: true,
    options: {
      password: { type: 'string' }, admin: { type: 'boolean' }, 'no-admin': { type: 'boolean' },
      inactive: { type: 'boolean' }, active: { type: 'boolean' }, library: { type: 'string', multiple: true },
      'all-libraries': { type: 'boolean' }, config: { type: 'string' },
    },
  });
  const [sub, name] = positionals;
  await withAccounts(config, async (store, changed) => {
    switch (sub) {
      case 'add': {
        if (!name) throw new UsageError('user add needs a NAME');
        const password = values.password ?? (await askPassword(`Password for ${name}: `));
        const user = await store.createUser({ username: name, password, admin: !!values.admin, active: !values.inactive, libraries: values.library ?? [] });
        out(`created user ${user.username} (id ${user.id})${user.admin ? ' admin' : ''}${user.active ? '' : ' inactive'}`);
        return;
      }
      case 'passwd': {
        if (!name) throw new UsageError('user passwd needs a NAME');
        const user = await store.findByUsername(name);
        if (!user) throw new Error(`no user named ${name}`);
        const password = values.password ?? (await askPassword(`New password for ${user.username}: `));
        await store.setPassword(user.id, password);
        const revoked = await store.revokeSessions(user.id);
        await changed(user.id);
        out(`password of ${user.username} changed; ${revoked.length} session(s) signed out`);
        return;
      }
      case 'set': {
        if (!name) throw new UsageError('user set needs a NAME');
        const user = await store.findByUsername(name);
        if (!user) throw new Error(`no user named ${name}`);
        if (values.active && values.inactive) throw new UsageError('--active and --inactive exclude each other');
        const fields: Parameters<AccountStore['update']>[1] = {};
        if (values.active) fields.active = true;
        if (values.inactive) fields.active = false;
        if (values.admin) fields.admin = true;
        if (values['no-admin']) fields.admin = false;
        if (Object.keys(fields).length) await store.update(user.id, fields);
        if (values.library?.length) await store.setLibraries(user.id, values.library);
        if (values['all-libraries']) await store.setLibraries(user.id, []);
        await changed(user.id);
        out(`updated user ${user.username}`);
        return;
      }
      case 'remove': {
        if (!name) throw new UsageError('user remove needs a NAME');
        const user = await store.findByUsername(name);
        if (!user) throw new Error(`no user named ${name}`);
        const admins = (await store.listUsers()).filter((u) => u.admin && u.active);
        if (user.admin && user.active && admins.length === 1) throw new Error(`${user.username} is the only active administrator; make another user one first (user set NAME --admin)`);
        await store.deleteUser(user.id);
        await changed(user.id);
        out(`removed user ${user.username}`);
        return;
      }
      case 'list': {
        const users = await store.listUsers();
        out(['ID', 'USERNAME', 'ADMIN', 'ACTIVE', 'LIBRARIES'].join('\t'));
        for (const u of users) out([u.id, u.username, u.admin ? 'yes' : 'no', u.active ? 'yes' : 'no', u.all_libraries_access ? 'all' : u.libraries.join(',')].join('\t'));
        return;
      }
      default:
        throw new UsageError(`unknown user command ${sub ?? ''}`.trim());
    }
  });
}

/** The URLs of a key, from server.publicUrl (else http://<host>:<port>). */
function keyUrls(config: AntennaConfig, key: string): string[] {
  const s = config.server;
  const base = (s.publicUrl ?? `http://${s.host === '0.0.0.0' || s.host === '::' ? '<this-machine>' : s.host}:${s.port}`).replace(/\/+$/, '');
  return [`HDHomeRun tuner: ${base}/hdhr/${key}/`, `M3U playlist:   ${base}/iptv/${key}/channels.m3u`, `  (HLS streams): ${base}/iptv/${key}/channels.m3u?format=hls`, `XMLTV guide:    ${base}/iptv/${key}/guide.xml.gz`];
}

async function accessKeyCommand(config: AntennaConfig, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, strict: true, options: { config: { type: 'string' } } });
  const [sub, name] = positionals;
  await mkdir(config.server.dataDir, { recursive: true, mode: 0o700 });
  const knex = await openDatabase(config);
  try {
    await runMigrations(knex, 'core', coreMigrations);
    const keys = new AccessKeys(knex, await loadOrCreateSecret(config.server.dataDir), openNetworks([]));
    const show = (k: AccessKeyView) => {
      out(`${k.id}\t${k.name}\t${k.key ?? 'revoked ' + k.revoked_at}`);
      if (k.key) for (const url of keyUrls(config, k.key)) out(`    ${url}`);
    };
    switch (sub) {
      case 'create':
        if (!name) throw new UsageError('access-key create needs a NAME');
        show(await keys.create(name));
        return;
      case 'list':
        for (const k of await keys.list()) show(k);
        return;
      case 'revoke': {
        if (!name) throw new UsageError('access-key revoke needs a NAME or an ID');
        const k = await keys.revoke(name);
        out(`revoked access key ${k.name} (id ${k.id}); a running server closes its streams within a second`);
        return;
      }
      default:
        throw new UsageError(`unknown access-key command ${sub ?? ''}`.trim());
    }
  } finally {
    await knex.destroy();
  }
}

async function pluginsCommand(config: AntennaConfig): Promise<void> {
  const plugins = await loadPlugins(config);
  if (!plugins.length) {
    out('no plugins enabled (list them under plugins: in the config file)');
    return;
  }
  out(['ID', 'VERSION', 'SOURCE', 'ENABLED BY', 'FROM'].join('\t'));
  for (const p of plugins) out([p.def.id, p.def.version, p.source, p.enabledBy, p.location].join('\t'));
}

/** Commands plugins add (`guide refresh`, `library scan`): run inside a host that does not listen. */
async function pluginCommand(config: AntennaConfig, argv: string[]): Promise<boolean> {
  const host = await Host.create({ config, mode: 'cli', logger: pino({ level: process.env.ANTENNA_LOG_LEVEL ?? 'warn' }) });
  try {
    const found = host.findCommand(argv);
    if (!found) return false;
    await host.runCommand(found.entry, found.args, { progress: createProgress(), out });
    return true;
  } finally {
    await host.close();
  }
}

/** Runs one command; the exit code, or -1 while the server keeps running. */
export async function main(argv: string[]): Promise<number> {
  const configIndex = argv.indexOf('--config');
  let file: string | undefined;
  if (configIndex >= 0) {
    file = argv[configIndex + 1];
    if (!file) {
      process.stderr.write('antenna: --config needs a file\n');
      return 2;
    }
    argv = [...argv.slice(0, configIndex), ...argv.slice(configIndex + 2)];
  }
  const [command = 'serve', ...rest] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    out(await help(file));
    return 0;
  }
  if (command === '--version' || command === 'version') {
    out(VERSION);
    return 0;
  }
  try {
    const config = loadConfig({ file });
    if (command === 'serve') {
      await serve(config);
      return -1; // keeps running until a signal
    }
    if (command === 'user') await userCommand(config, rest);
    else if (command === 'access-key') await accessKeyCommand(config, rest);
    else if (command === 'plugins') await pluginsCommand(config);
    else if (!(await pluginCommand(config, argv))) throw new UsageError(`unknown command: ${argv.join(' ')}`);
    return 0;
  } catch (err) {
    process.stderr.write(`antenna: ${(err as Error).message}\n`);
    // parseArgs rejects unknown or malformed options with ERR_PARSE_ARGS_* codes: a usage error too.
    const usage = err instanceof UsageError || String((err as NodeJS.ErrnoException).code ?? '').startsWith('ERR_PARSE_ARGS');
    if (usage) process.stderr.write(`\n${USAGE}\n`);
    return usage ? 2 : 1;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    if (code === 0) process.exitCode = 0; // let stdout drain; nothing is left running
    else if (code > 0) process.exit(code);
  });
}
