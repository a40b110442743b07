/**
 * Access keys: long random path segments for the clients that cannot sign in
 * (Plex, Jellyfin, Kodi, TiviMate… reading `/hdhr/<key>/`, `/iptv/<key>/`).
 * A key is derived from the server's secret and its row (id and a random salt),
 * so the database alone does not reveal it while the server can show it again
 * (the admin's "copy", discovery announcing it). Clients of the `open` networks
 * get the same paths without a key.
 *
 * A key also mints media keys (`?key=` of the routes with a mediaScope, such as
 * live HLS) for the URLs it hands out: they name the key, not a user, and hold
 * exactly as long as it does, so a playlist a client keeps for days stays valid
 * until the key is revoked, and not a moment longer.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import type { Knex } from 'knex';
import { errors } from '../../sdk/errors.js';
import type { AccessGrant, AuthUser } from '../../sdk/services.js';

export interface AccessKeyRow { id: number; name: string; created_at: number; revoked_at: number | null }

/** A key as the admin API and the CLI show it; `key` only while it is active. */
export interface AccessKeyView { id: number; name: string; key: string | null; created_at: string; revoked_at: string | null }

const KEY_LENGTH = 32; // base64url characters: 192 bits
/** How long the active keys are trusted before the database is read again (a revocation by the CLI shows within this). */
const FRESH_MS = 1000;
const NAME = /^[^\s\p{C}/\\]{1,64}$/u;
/** The body of a media key an access key minted: `k.<key id>`, or `k.open` for an open network's client. */
const MINTED = /^k\.(\d{1,15}|open)$/;

declare module 'fastify' {
  interface FastifyRequest {
    accessGrant?: AccessGrant;
  }
}

/** `10.0.0.0/8`, `192.168.1.7`, `fd00::/8` → a BlockList; throws naming the entry that is not a CIDR. */
export function openNetworks(cidrs: readonly string[], key = 'accessKeys.open'): BlockList {
  const list = new BlockList();
  cidrs.forEach((cidr, i) => {
    const [address, bits, extra] = cidr.trim().split('/');
    const family = isIP(address ?? '');
    const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
    if (!family || extra !== undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32) || (bits !== undefined && !/^\d+$/.test(bits))) {
      throw new Error(`invalid config:\n  ${key}[${i}]: got ${JSON.stringify(cidr)}, expected a network such as 192.168.1.0/24 or fd00::/8`);
    }
    list.addSubnet(address!, prefix, family === 6 ? 'ipv6' : 'ipv4');
  });
  return list;
}

function isOpen(list: BlockList, ip: string): boolean {
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  const address = v4 ?? ip;
  const family = isIP(address);
  return family !== 0 && list.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

interface ActiveKeys { at: number; byKey: Map<string, AccessKeyRow>; byId: Map<number, AccessKeyRow> }

export class AccessKeys {
  private readonly secret: Buffer;
  private readonly mediaSecret: Buffer;
  private active?: ActiveKeys;
  private loading?: Promise<ActiveKeys>;
  /** Listeners of open streams, by key id; the database is watched while there are any. */
  private readonly watchers = new Map<number, Set<() => void>>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly knex: Knex, serverSecret: string, private readonly open: BlockList, private readonly now: () => number = Date.now,
  ) {
    this.secret = createHmac('sha256', serverSecret).update('antenna access keys v1').digest();
    this.mediaSecret = createHmac('sha256', serverSecret).update('antenna access-key media keys v1').digest();
  }

  private derive(id: number, salt: string): string {
    return createHmac('sha256', this.secret).update(`${id}.${salt}`).digest('base64url').slice(0, KEY_LENGTH);
  }

  private view(row: AccessKeyRow & { salt: string }): AccessKeyView {
    return {
      id: row.id, name: row.name, key: row.revoked_at === null ? this.derive(row.id, row.salt) : null,
      created_at: new Date(Number(row.created_at)).toISOString(), revoked_at: row.revoked_at === null ? null : new Date(Number(row.revoked_at)).toISOString(),
    };
  }

  async list(): Promise<AccessKeyView[]> {
    const rows = await this.knex('access_keys').orderBy('id').select('id', 'name', 'salt', 'created_at', 'revoked_at');
    return rows.map((r) => this.view(r));
  }

  async create(name: string): Promise<AccessKeyView> {
    const trimmed = name.normalize('NFKC').trim();
    if (!NAME.test(trimmed)) throw errors.badRequest('name must be 1-64 characters without spaces, slashes or control characters');
    if (/^\d+$/.test(trimmed)) throw errors.badRequest('name must not be a number (revoke takes a name or an id)');
    return this.knex.transaction(async (trx) => {
      if (await trx('access_keys').where({ name: trimmed }).whereNull('revoked_at').first('id')) throw errors.conflict(`An access key named ${trimmed} exists`);
      const salt = randomBytes(16).toString('base64url');
      const [inserted] = await trx('access_keys').insert({ name: trimmed, salt, created_at: this.now(), revoked_at: null }, ['id']);
      const id = Number(typeof inserted === 'object' ? inserted.id : inserted);
      this.active = undefined;
      return this.view(await trx('access_keys').where({ id }).first());
    });
  }

  /** Revokes the active key with this name, or with this id; its open streams are closed at once. */
  async revoke(nameOrId: string | number): Promise<AccessKeyView> {
    const q = this.knex('access_keys').whereNull('revoked_at');
    const row = await (typeof nameOrId === 'number' || /^\d+$/.test(nameOrId) ? q.where({ id: Number(nameOrId) }) : q.where({ name: nameOrId.normalize('NFKC').trim() })).first();
    if (!row) throw errors.notFound(`No active access key ${nameOrId}`);
    await this.knex('access_keys').where({ id: row.id }).update({ revoked_at: this.now() });
    this.active = undefined;
    this.revoked(row.id);
    return this.view({ ...row, revoked_at: this.now() });
  }

  /** The key of the active key named `name` (what discovery announces). */
  async keyOf(name: string): Promise<string | undefined> {
    const row = await this.knex('access_keys').where({ name }).whereNull('revoked_at').first('id', 'salt');
    return row ? this.derive(row.id, row.salt) : undefined;
  }

  private async activeKeys(): Promise<ActiveKeys> {
    if (this.active && this.now() - this.active.at < FRESH_MS) return this.active;
    this.loading ??= (async () => {
      const rows: (AccessKeyRow & { salt: string })[] = await this.knex('access_keys').whereNull('revoked_at').select('id', 'name', 'salt', 'created_at', 'revoked_at');
      const byKey = new Map<string, AccessKeyRow>(rows.map((r) => [this.derive(r.id, r.salt), r]));
      const byId = new Map<number, AccessKeyRow>(rows.map((r) => [Number(r.id), r]));
      this.active = { at: this.now(), byKey, byId };
      for (const id of [...this.watchers.keys()]) if (!byId.has(id)) this.revoked(id);
      return this.active;
    })().finally(() => { this.loading = undefined; });
    return this.loading;
  }

  /** The onRequest check of an 'access-key' route: the `:key` parameter, or a client of an open network without one. */
  async authenticate(request: FastifyRequest): Promise<void> {
    const given = (request.params as { key?: unknown } | undefined)?.key;
    if (given === undefined) {
      if (!isOpen(this.open, request.ip)) throw errors.unauthorized('An access key is needed in the URL');
      request.accessGrant = { onRevoked: () => () => {}, mediaKey: (scope) => this.mint('k.open', scope) };
      return;
    }
    const row = typeof given === 'string' && given.length === KEY_LENGTH ? (await this.activeKeys()).byKey.get(given) : undefined;
    if (!row) throw errors.unauthorized('Invalid access key');
    request.accessGrant = { name: row.name, onRevoked: (listener) => this.watch(row.id, listener), mediaKey: (scope) => this.mint(`k.${row.id}`, scope) };
  }

  /** Whether a media key's body is one an access key minted (else it is a user's). */
  static minted(body: string): boolean {
    return MINTED.test(body);
  }

  /** A media key for `scope` minted by the access key a caller came in with (`holder`: its session id, `k.<id>` or `k.open`). */
  mint(holder: string, scope: string): string {
    if (!MINTED.test(holder)) throw new Error('not an access key holder');
    return `${Buffer.from(holder).toString('base64url')}.${this.mediaMac(scope, holder)}`;
  }

  private mediaMac(scope: string, body: string): string {
    return createHmac('sha256', this.mediaSecret).update(scope).update('\n').update(body).digest('base64url');
  }

  /**
   * The caller a minted media key lets into a route of `scope`: 401 when the key is forged or for
   * another scope, its access key revoked, or it is an open network's and the client is not on one.
   */
  async mediaKeyUser(request: FastifyRequest, scope: string, body: string, sig: string): Promise<AuthUser> {
    const expected = Buffer.from(this.mediaMac(scope, body));
    const given = Buffer.from(sig);
    if (!MINTED.test(body) || expected.length !== given.length || !timingSafeEqual(expected, given)) throw errors.unauthorized('Invalid media key');
    const holder = body.slice(2);
    let name = '';
    if (holder === 'open') {
      if (!isOpen(this.open, request.ip)) throw errors.unauthorized('An access key is needed in the URL');
    } else {
      const row = (await this.activeKeys()).byId.get(Number(holder));
      if (!row) throw errors.unauthorized('Invalid access key');
      name = row.name;
    }
    return {
      id: 0, username: name ? `access key ${name}` : 'open network', active: true, admin: false, all_libraries_access: false, libraries: [],
      sessionId: body, deviceId: body, accessKey: name,
    };
  }

  private watch(id: number, listener: () => void): () => void {
    let set = this.watchers.get(id);
    if (!set) this.watchers.set(id, (set = new Set()));
    set.add(listener);
    this.timer ??= setInterval(() => { this.activeKeys().catch(() => {}); }, FRESH_MS).unref();
    return () => {
      set!.delete(listener);
      if (!set!.size) this.watchers.delete(id);
      this.idle();
    };
  }

  private revoked(id: number): void {
    const set = this.watchers.get(id);
    this.watchers.delete(id);
    for (const listener of set ?? []) {
      try { listener(); } catch { /* a listener closes a stream; it must not stop the others */ }
    }
    this.idle();
  }

  private idle(): void {
    if (this.watchers.size || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  stop(): void {
    this.watchers.clear();
    this.idle();
  }
}
