/**
 * The contracts of the core services a plugin can depend on. The core provides
 * the implementations; plugins only ever see these interfaces.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Knex } from 'knex';
import type { Logger as PinoLogger } from 'pino';
import type { Readable, Writable } from 'node:stream';
import type { DependencyContainer } from 'tsyringe';
import './http.js';

/** pino logger, labelled with the plugin id. One line per event; never log secrets. */
export type Logger = PinoLogger;

/** The knex instance shared by the core and every plugin (SQLite by default, PostgreSQL by config). */
export type Database = Knex;

/**
 * The plugin's own Fastify scope. Routes are authenticated unless their config
 * says otherwise:
 *   config: { auth: 'public' }            no token needed (login, version, static files)
 *   config: { auth: 'media', mediaScope } bearer, ?api_key=<token>, or a signed ?key= for that scope
 * `request.user` holds the caller on every authenticated route.
 */
export type HttpScope = FastifyInstance;

export interface AuthUser {
  id: number;
  username: string;
  active: boolean;
  admin: boolean;
  all_libraries_access: boolean;
  /** Library ids granted when all_libraries_access is false. */
  libraries: string[];
  /** The device session the token belongs to. */
  sessionId: string;
  deviceId: string;
  /**
   * Set when the request was signed in by a signed media key (`?key=`): when that key expires
   * (ms since epoch). Keys signed for this user expire no later, so a key never renews itself.
   */
  mediaKeyExpiresAt?: number;
  /**
   * Set when the caller is no user but a client an access key let in, through a media key the key
   * minted (AccessGrant.mediaKey): the key's name, or '' for a client of an `accessKeys.open`
   * network. Such a caller has id 0 and no libraries; keys signed for it live as long as that
   * access key. (Since SDK 1.2.)
   */
  accessKey?: string;
}

export interface AuthService {
  /** The caller of an authenticated request; throws 401 when there is none. */
  requireUser(request: FastifyRequest): AuthUser;
  /** 403 unless the caller is an administrator. */
  requireAdmin(request: FastifyRequest): AuthUser;
  /** Whether the user may see a library (admins and all_libraries_access users see all). */
  canAccessLibrary(user: AuthUser, libraryId: string | number): boolean;
  /**
   * A short-lived key for URLs handed to players (segments, media playlists).
   * It is bound to a scope such as `live:12` and the user, never the user's token.
   * Only a bearer token or `api_key` gets a fresh lifetime: for a request signed in by a
   * media key, the key expires with the one it came with.
   */
  signMediaKey(user: AuthUser, scope: string, ttlSeconds?: number): string;
  /**
   * What admitted a request of an `auth: 'access-key'` route (since SDK 1.2); 401 on any other.
   */
  requireAccessKey(request: FastifyRequest): AccessGrant;
  /** The key of the active access key with this name, for URLs the server announces (HDHomeRun discovery); undefined when there is none. (Since SDK 1.2.) */
  accessKey(name: string): Promise<string | undefined>;
  /** Adds a field to the `user` object of GET /me (live-tv adds `favorites`). Called on every /me: keep it cheap (cache, no query per call). */
  addProfileField(name: string, compute: (user: AuthUser) => unknown | Promise<unknown>): void;
}

/**
 * An access key that let a request in (`name`), or a client of an `accessKeys.open` network
 * that gave none (no name). Access keys are made with `antenna access-key create` or the admin API.
 */
export interface AccessGrant {
  name?: string;
  /**
   * Calls `listener` once when the key is revoked (at once when this server revokes it, within a
   * second when the CLI does): close what the request opened. Returns how to stop listening.
   */
  onRevoked(listener: () => void): () => void;
  /**
   * A media key for `scope` (such as `live:12`) that works as long as this access key does: no
   * expiry, refused at once when the key is revoked (an open network's key: from those networks
   * only). For URLs handed to clients that keep them for days (an M3U's HLS URLs). (Since SDK 1.2.)
   */
  mediaKey(scope: string): string;
}

export type JobState = 'running' | 'completed' | 'failed' | 'stopped';

export interface RestartPolicy {
  /** How many times a failed run is started again before the job fails (Infinity allowed). */
  maxRestarts: number;
  /** First delay; doubled after every failure up to maxDelayMs. */
  initialDelayMs: number;
  maxDelayMs: number;
}

export interface JobContext<D> {
  readonly key: string;
  /** Aborted when the job is stopped (explicitly, by idle timeout or at shutdown). */
  readonly signal: AbortSignal;
  /** The job's shared data, the same object callers see as `job.data`. */
  readonly data: D;
  /** Which run this is: 0 for the first, 1 after the first restart… */
  readonly attempt: number;
  readonly log: Logger;
  /** 0..1, with an optional human message; shown in the API and on a terminal. */
  progress(fraction: number, message?: string): void;
}

export interface JobSpec<D> {
  /** What kind of job this is (live, transcode, import, recording…), for listings and logs. */
  kind: string;
  /** Created once per job and shared with every caller of ensure(). */
  data: D;
  /**
   * The work. Resolves when the work is finished (the job completes), rejects
   * when it failed (the restart policy decides what follows). Must honour ctx.signal.
   */
  run(ctx: JobContext<D>): Promise<void>;
  /** Stop the job when nobody called touch() (or ensure()) for this long. */
  idleTimeoutMs?: number;
  restart?: RestartPolicy;
}

export interface Job<D> {
  readonly key: string;
  readonly kind: string;
  readonly data: D;
  readonly state: JobState;
  readonly progress: number;
  readonly message: string | undefined;
  readonly error: string | undefined;
  readonly startedAt: number;
  readonly signal: AbortSignal;
  /** Settles when the job has ended, whatever the outcome (never rejects). */
  readonly done: Promise<JobState>;
  /** Refresh the idle timer. */
  touch(): void;
  /** Abort the run and wait for it to end. */
  stop(reason?: string): Promise<void>;
}

export interface JobSummary {
  key: string; kind: string; state: JobState; progress: number; message?: string; error?: string; startedAt: string;
}

export interface JobManager {
  /**
   * The running job for `key`, or a new one started from `spec()`. Synchronous,
   * so concurrent callers can never start two jobs for one key.
   */
  ensure<D>(key: string, spec: () => JobSpec<D>): Job<D>;
  get<D = unknown>(key: string): Job<D> | undefined;
  list(): JobSummary[];
  /** Stops every job (used at shutdown). */
  stopAll(reason?: string): Promise<void>;
}

export interface ScheduledTask {
  /** Unique id; scheduling the same id again replaces the earlier entry. */
  id: string;
  /** Handler name registered with scheduler.handle(). */
  kind: string;
  /** When to run (ms since epoch). */
  at: number;
  /** Repeat every N ms after each run; omit for a one-shot task. */
  everyMs?: number;
  payload?: unknown;
}

/**
 * Persisted timers. Tasks survive restarts: at start every stored task is
 * re-armed, and one whose time passed while the server was down runs at once.
 */
export interface Scheduler {
  handle(kind: string, handler: (task: ScheduledTask, signal: AbortSignal) => Promise<void>): void;
  schedule(task: ScheduledTask): Promise<void>;
  /** schedule() for many tasks, in a few statements (a DVR's rules schedule hundreds at once). */
  scheduleMany(tasks: ScheduledTask[]): Promise<void>;
  cancel(id: string): Promise<boolean>;
  list(kind?: string): Promise<ScheduledTask[]>;
}

/**
 * A named lease held by this node (cluster mode: a row in PostgreSQL, renewed
 * while held). `token` grows on every take, so work stamped with an older token
 * is known to be stale; `lost` aborts when the lease could not be renewed
 * (another node may have it now): stop the work at once.
 */
export interface Lease {
  readonly name: string;
  readonly token: number;
  readonly lost: AbortSignal;
  /** Gives it up now; another node may take it at once. */
  release(): Promise<void>;
}

/**
 * The nodes sharing one database. Single node (SQLite, or PostgreSQL without
 * `cluster`): `enabled` is false, every lease is granted, and nothing is published.
 */
export interface Cluster {
  readonly enabled: boolean;
  readonly nodeId: string;
  /** How long a lease outlives its node: a dead node's work is taken over after this. */
  readonly leaseMs: number;
  /**
   * The lease for this node, or undefined while another node holds it. With `group` and
   * `limit`: also undefined when `limit` other leases of the group are held (by any node),
   * e.g. the streams of one tuner across the cluster. `subject` records what the lease is
   * taken for (a job), when its name is one of a pool.
   */
  take(name: string, options?: { group: string; limit: number; subject?: string }): Promise<Lease | undefined>;
  /** Which node holds the lease now, and how to reach it (its advertiseUrl); undefined when nobody does. */
  holder(name: string): Promise<{ node: string; url: string | null } | undefined>;
  /** Tells the other nodes (within a second); a node does not hear its own messages. */
  publish(channel: string, message: string): void;
  subscribe(channel: string, handler: (message: string) => void): () => void;
  /**
   * Work the nodes starting together should do once, such as an import or a scan at start:
   * the node that takes the lease `name` runs `work`, unless a run with the same
   * `fingerprint` (say, of the sources) ended within `withinMs`; the other nodes skip it,
   * with `wait` once that node is done. A run counts only when `work` returns true (complete).
   * Resolves to whether this node ran it. A single node always runs it.
   */
  once(name: string, options: { fingerprint: string; withinMs: number; wait: boolean }, work: () => Promise<boolean>): Promise<boolean>;
  /**
   * A secret every node signs with (a key for URLs the nodes hand out): the first node to ask
   * stores its `own()` in the database, so what it signed before keeps verifying, and the
   * others read it. A single node gets `own()`.
   */
  secret(name: string, own: () => Promise<string>): Promise<string>;
}

export interface ProbeStream {
  index: number;
  codec_type: 'video' | 'audio' | 'subtitle' | 'data' | 'attachment' | string;
  codec_name?: string;
  profile?: string;
  width?: number;
  height?: number;
  channels?: number;
  color_transfer?: string;
  bit_rate?: string;
  tags?: Record<string, string>;
  disposition?: Record<string, number>;
  [key: string]: unknown;
}

export interface ProbeResult {
  format: { format_name?: string; duration?: string; bit_rate?: string; size?: string; tags?: Record<string, string>; [key: string]: unknown };
  streams: ProbeStream[];
}

export interface SpawnOptions {
  /** Stops the process (SIGTERM to its group, SIGKILL after a grace period). */
  signal?: AbortSignal;
  cwd?: string;
  /** Strings (URLs with credentials, keys) replaced by *** wherever args or stderr are logged. */
  secrets?: string[];
  /** Short name for logs, e.g. `live:12`. */
  label?: string;
  /** Called with each stderr line (progress parsing). */
  onStderrLine?: (line: string) => void;
  /** Keep stdout as a stream (default: ignored). */
  stdout?: 'pipe' | 'ignore';
  /**
   * Pipes to write input to: ffmpeg reads the first as `pipe:3`, the next as `pipe:4`… (a live
   * session's video and audio for a remux). They are `FfmpegProcess.inputs`. (Since SDK 1.2.)
   */
  inputPipes?: number;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when we asked it to stop (abort, stop(), shutdown). */
  expected: boolean;
  /** The last lines of stderr, secrets redacted. */
  stderrTail: string;
}

export interface FfmpegProcess {
  readonly pid: number;
  readonly stdout: Readable | null;
  /** The pipes `SpawnOptions.inputPipes` asked for, in order: `pipe:3`, `pipe:4`… (Since SDK 1.2.) */
  readonly inputs: Writable[];
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<ExitInfo>;
  /** SIGTERM to the whole process group, SIGKILL after the grace period; resolves on exit. */
  stop(): Promise<ExitInfo>;
}

export interface FfmpegService {
  readonly ffmpegPath: string;
  readonly ffprobePath: string;
  /** e.g. `ffmpeg version 4.1 …` first line of `ffmpeg -version`. */
  version(): Promise<string>;
  spawn(args: string[], options?: SpawnOptions): FfmpegProcess;
  /** Runs ffmpeg to completion; rejects with the stderr tail unless it exits 0. */
  run(args: string[], options?: SpawnOptions): Promise<void>;
  probe(input: string, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<ProbeResult>;
}

/**
 * The server's CPU budget for ffmpeg runs that encode video (VOD transcodes,
 * live sessions that transcode). Copying runs (remux, audio-only) are nearly
 * free and take no slot. Take a slot before spawning, release it once the
 * process has exited; a refusal names its reason and when to try again
 * (answer it as `errors.unavailable(refusal.message, refusal.retryAfter)`).
 *
 * Ordinary users are held to `max` running slots in all and `perUser` each.
 * Admins and system work (the DVR's recordings) are never refused, but their
 * slots count toward the total, so users are refused sooner while they run.
 */
export interface TranscodeBudget {
  /** This node's limits (in cluster mode `max` is the node's capacity, cluster.maxNodeTranscodes). */
  readonly limits: { max: number; perUser: number };
  reserve(request: TranscodeRequest): { slot: TranscodeSlot } | TranscodeRefusal;
  /** Slots in use: in all, and per user id (system work under 'system'). */
  usage(): { total: number; byUser: Record<string, number> };
  /**
   * Cluster mode: the transcode's place in the limits counted across the nodes (leases for
   * ffmpeg.maxTranscodes and maxTranscodesPerUser, held until released; `job` names the work, so
   * other nodes find where it runs: `runner`). A single node grants it at once: its slots are the limits.
   */
  share(request: TranscodeRequest & { job?: string }): Promise<{ share: TranscodeShare } | TranscodeRefusal>;
  /** Cluster mode: when this node has no spare capacity, an alive node that has some (most first); else undefined. */
  placement(): Promise<{ node: string; url: string } | undefined>;
  /** Cluster mode: the other node running the job named in `share`, and its advertiseUrl; undefined when none does. */
  runner(job: string): Promise<{ node: string; url: string } | undefined>;
}

export interface TranscodeRefusal {
  refused: 'server' | 'user';
  message: string;
  retryAfter: number;
}

export interface TranscodeShare {
  /** Gives the place back (idempotent). */
  release(): Promise<void>;
}

export interface TranscodeRequest {
  /** Whose work it is: a user (limits apply unless admin), or 'system' for work no viewer waits on (recordings). */
  owner: Pick<AuthUser, 'id' | 'admin'> | 'system';
  /** What it is, for logs and usage: `vod:<item>`, `live:<channel>`. */
  label: string;
}

export interface TranscodeSlot {
  readonly label: string;
  /** Gives the slot back (idempotent). */
  release(): void;
}

export interface EventBus {
  emit(event: string, payload?: unknown): void;
  on(event: string, handler: (payload: unknown) => void): () => void;
}

export interface Clock {
  /** Milliseconds since epoch. Tests may replace the clock. */
  now(): number;
}

/** Where the plugin may keep files: `<dataDir>/plugins/<pluginId>`, created on first use, owner-only. */
export interface PluginPaths {
  dataDir: string;
  pluginDir(): Promise<string>;
}

/** What a command writes to: a progress bar (or plain lines off a terminal) and lines of output. */
export interface CommandIo {
  progress: ProgressReporter;
  out: (line: string) => void;
}

/** A command added to the `antenna` CLI with SDK 1.0's shape (PluginCommand adds `deps`). */
export interface CliCommand {
  /** Words after `antenna`, e.g. ['guide', 'refresh']. */
  path: string[];
  description: string;
  usage?: string;
  run(args: string[], io: CommandIo): Promise<void>;
}

export interface ProgressReporter {
  /** Starts or updates a bar: `label  [#####    ] 40% message` on a terminal, plain lines otherwise. */
  update(label: string, fraction: number, message?: string): void;
  done(label: string, message?: string): void;
}

export interface Lifecycle {
  /** Runs after every plugin's init, before the server listens (extension registries are frozen). */
  onStart(fn: () => Promise<void> | void): void;
  /** Runs at shutdown, in reverse order of registration. */
  onShutdown(fn: () => Promise<void> | void): void;
}

/**
 * What a change to a plugin's config did. A key is applied when the plugin
 * took the new value at once; restartNeeded lists the keys whose new value is
 * in the config file but takes effect only at the next start.
 */
export interface ConfigChangeResult {
  /** Top-level keys of the block whose value changed. */
  changed: string[];
  applied: string[];
  /** Every key of the block still waiting for a restart (this change's and earlier ones'). */
  restartNeeded: string[];
  /** Why the plugin could not apply the change (then every changed key needs a restart). */
  error?: string;
}

/**
 * The plugin's block of the config file, to change at runtime (the admin
 * routes of a plugin: vod's libraries, m3u-tuner's playlists) and to apply
 * changes without a restart. The YAML file stays the one source of truth:
 * a change is validated with the plugin's configSchema and written back to
 * it, comments and order kept.
 */
export interface PluginSettings<C = Record<string, unknown>> {
  /** The config in effect: what init got, with the changes applied since. */
  current(): C;
  /** Whether the config file can be changed; the reason when it cannot (no config file, the demo; not writable). */
  editable(): Promise<{ editable: boolean; reason?: string }>;
  /**
   * Changes the plugin's block: `edit` gets it as written in the file (no
   * defaults applied) and changes it in place. The result is validated (400
   * naming the key), written to the file and handed to the onChange handlers
   * whose keys changed. 409 with the reason when the file cannot be changed.
   */
  update(edit: (block: Record<string, unknown>) => void): Promise<ConfigChangeResult>;
  /**
   * Applies changes of these top-level keys without a restart: the handler gets
   * the whole new config and the one in effect. A change of any other key
   * needs a restart; a handler that throws leaves its keys needing one too.
   */
  onChange(keys: (keyof C & string)[], handler: (next: C, previous: C) => Promise<void> | void): void;
}

export interface SourceOptions {
  signal?: AbortSignal;
  /** Relative paths are resolved against this directory (default: the config file's). */
  baseDir?: string;
  /**
   * Give up when the server has not answered within this time, or sends nothing for this long
   * while its bytes are wanted (default 30 s). A download that keeps going is never cut.
   */
  timeoutMs?: number;
  userAgent?: string;
  /** At most this many bytes, after decompression (default 512 MiB): past it, a 413 AppError. */
  maxBytes?: number;
}

export interface SourceChunks {
  /** The bytes in order, gunzipped when the source is gzip (by content, not by name). Iterate once. */
  chunks: AsyncIterable<Buffer>;
  /** Bytes as stored or sent (compressed, for gzip), when known: for progress. */
  size?: number;
  /** Bytes of `size` read so far: progress is bytesRead() / size. */
  bytesRead(): number;
  /** The absolute URL (file:// for files), e.g. to resolve relative links. */
  url: string;
}

/**
 * Reads playlists and guides given as a path, a file:// URL or an http(s) URL
 * (`http://user:pass@host/…` is sent as Basic authorization). Every failure is
 * an AppError naming the source with its credentials redacted: 502 when it
 * cannot be read, 413 past maxBytes, 400 for an unsupported scheme.
 */
export interface SourceReader {
  /** The source as byte chunks, for parsing while it downloads; the whole file never sits in memory. */
  open(location: string, options?: SourceOptions): Promise<SourceChunks>;
  /**
   * A URL or text with credentials replaced by `***`, for logs and messages: `user:pass@`,
   * secret query values (password, token, key…), Xtream-style path credentials
   * (`/live/<user>/<password>/<id>.ts`, `http://host/<user>/<password>/<id>`), auth headers,
   * and `secrets` (values known to be secret, such as a source's password) wherever they stand alone.
   */
  redact(text: string, secrets?: readonly string[]): string;
  /**
   * The credentials those rules find in a URL or text (`user`, `pass`, query values…): what a
   * tuner hands over as `StreamSource.secrets`, so that they are redacted wherever they appear.
   */
  secretsOf(text: string): string[];
}

export type { DependencyContainer };
