import { Type, type Static } from '@sinclair/typebox';

const MiB = 1024 * 1024;

/** The root config file (PRODUCT.md §1). Unknown keys are errors, so typos never pass silently. */
export const ConfigSchema = Type.Object({
  server: Type.Object({
    host: Type.String({ default: '0.0.0.0', minLength: 1 }),
    port: Type.Integer({ default: 8096, minimum: 0, maximum: 65535 }),
    dataDir: Type.String({ default: './data', minLength: 1 }),
    /** Announced in logs and by the CLI; defaults to http://<host>:<port>. */
    publicUrl: Type.Optional(Type.String({ minLength: 1 })),
    avatarMaxBytes: Type.Integer({ default: 5 * MiB, minimum: 1024, maximum: 100 * MiB }),
    /** Trust X-Forwarded-For behind a reverse proxy (affects the login rate limit's client address). */
    trustProxy: Type.Boolean({ default: false }),
  }, { additionalProperties: false, default: {} }),
  database: Type.Object({
    client: Type.Union([Type.Literal('sqlite3'), Type.Literal('pg')], { default: 'sqlite3' }),
    /** pg: a connection string or object. sqlite3: ignored (the file is <dataDir>/antenna.db). */
    connection: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Record(Type.String(), Type.Unknown())])),
  }, { additionalProperties: false, default: {} }),
  ffmpeg: Type.Object({
    ffmpegPath: Type.String({ default: 'auto', minLength: 1 }),
    ffprobePath: Type.String({ default: 'auto', minLength: 1 }),
    /**
     * ffmpeg runs that encode video at once (VOD transcodes and transcoding live sessions); 0 = one per CPU core.
     * In cluster mode: across all the nodes (0 = only each node's cluster.maxNodeTranscodes).
     */
    maxTranscodes: Type.Integer({ default: 0, minimum: 0, maximum: 256 }),
    /** Of those, at most this many for one ordinary user (admins and recordings are never refused); across the nodes in cluster mode. */
    maxTranscodesPerUser: Type.Integer({ default: 2, minimum: 1, maximum: 256 }),
  }, { additionalProperties: false, default: {} }),
  clients: Type.Object({
    dashOnly: Type.Object({
      exact: Type.Array(Type.String({ minLength: 1 }), { default: ['STB'] }),
      prefix: Type.Array(Type.String({ minLength: 1 }), { default: ['Android'] }),
    }, { additionalProperties: false, default: {} }),
  }, { additionalProperties: false, default: {} }),
  auth: Type.Object({
    /**
     * Failed logins allowed per username from one client address (and wrong current passwords per
     * user on a password change), then per client address, within the window.
     */
    maxFailuresPerUser: Type.Integer({ default: 5, minimum: 1 }),
    maxFailuresPerAddress: Type.Integer({ default: 20, minimum: 1 }),
    failureWindowSeconds: Type.Integer({ default: 900, minimum: 1 }),
    /** Lifetime of the signed keys put in manifest and segment URLs. */
    mediaKeyTtlSeconds: Type.Integer({ default: 6 * 3600, minimum: 60 }),
    /** A device session unused for this many days expires (0: never). */
    sessionIdleDays: Type.Integer({ default: 90, minimum: 0 }),
  }, { additionalProperties: false, default: {} }),
  accessKeys: Type.Object({
    /** Networks (CIDR) served the access-key paths (/hdhr/, /iptv/) without a key. */
    open: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { default: [], maxItems: 100 }),
  }, { additionalProperties: false, default: {} }),
  /**
   * Several nodes on one PostgreSQL database (README "Running several nodes"): given, and with
   * database.client pg, this node registers, takes leases for work that runs once and tells the
   * others of revocations. Absent: a single node, as always.
   */
  cluster: Type.Optional(Type.Object({
    /** This node's name among the others; default: the host name. */
    nodeId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' })),
    /** How the other nodes (and viewers they redirect) reach this one, e.g. http://10.0.0.2:8096. */
    advertiseUrl: Type.Optional(Type.String({ minLength: 1, pattern: '^https?://' })),
    /** A dead node's leases (recordings, refreshes) are taken over after this many seconds. */
    leaseSeconds: Type.Integer({ default: 15, minimum: 1, maximum: 3600 }),
    /**
     * How many transcodes (VOD and live) this node runs at most, its capacity: a VOD play request
     * on a node without room is redirected (307) to the node with the most. 0 (default): one per
     * core, at most ffmpeg.maxTranscodes, which in cluster mode counts across the nodes.
     */
    maxNodeTranscodes: Type.Integer({ default: 0, minimum: 0, maximum: 256 }),
  }, { additionalProperties: false })),
  logging: Type.Object({
    level: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  }, { additionalProperties: false, default: {} }),
  /** A plugin is enabled by being listed: first-party by name, third-party by npm package name or path. */
  plugins: Type.Record(Type.String({ minLength: 1 }), Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]), { default: {} }),
}, { additionalProperties: false });

export type AntennaConfig = Static<typeof ConfigSchema> & {
  /** Directory relative paths in the file are resolved against (the config file's, else cwd). */
  baseDir: string;
  /** The file the config came from; undefined for the demo. */
  file?: string;
};
