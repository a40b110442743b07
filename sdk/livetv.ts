/**
 * Live-TV contracts. live-tv owns both extension points; a tuner plugin (m3u-tuner,
 * examples/tuner-test-pattern) adds tuners, a guide plugin (xmltv-guide) adds guide
 * sources. Modelled on Jellyfin's ITunerHost and IListingsProvider.
 */
import type { Readable } from 'node:stream';
import type { MediaRepresentation } from './media.js';
import { createExtensionPoint, createServiceRef } from './refs.js';
import type { AccessGrant } from './services.js';

/** One channel as a tuner lists it. */
export interface TunerChannel {
  /** Stable within the tuner across refreshes: tvg-id when present, else the stream URL. */
  key: string;
  /**
   * The key this channel has instead when another channel of the same list has the
   * same `key` (m3u-tuner: the tvg-id with the stream URL, for feeds like @HD/@SD that
   * share a tvg-id). Whether a key repeats is known only once the whole list has been
   * read; with this a tuner can still yield each channel as soon as it has it.
   * Channels whose keys end up equal are duplicates: the first is kept.
   */
  keyIfShared?: string;
  name: string;
  /** Channel number as given (`22.1` allowed); missing numbers are assigned by live-tv. */
  number?: string;
  tvgId?: string;
  tvgName?: string;
  logo?: string;
  /** Category / group-title. A channel in several groups (`News;Public`) lists them all. */
  groups?: string[];
  /** Anything else worth keeping (radio, tvg-country, catchup…). */
  extra?: Record<string, string>;
  /** The tuner's own data for opening the stream later (URL, headers…), stored with the channel and handed back to openStream. */
  data?: Record<string, unknown>;
}

/** What ffmpeg reads for a channel: its input arguments, ending with `-i <input>`. */
export interface StreamSource {
  /** e.g. ['-user_agent', 'VLC', '-i', 'http://…'] or ['-re', '-f', 'lavfi', '-i', 'testsrc2=…']. */
  inputArgs: string[];
  /**
   * Values to redact wherever the arguments or ffmpeg's output are logged or shown: the
   * credentials of the source and of this stream (`sources.secretsOf(url)`), tokens.
   */
  secrets?: string[];
  /** ffmpeg -map values when the input is not one file with video and audio (default ['0:v:0?', '0:a:0?']). */
  maps?: string[];
  /** Codecs the upstream is known to carry, when the tuner knows (skips a probe). */
  videoCodec?: string;
  audioCodec?: string;
  /**
   * Why reading the input failed, when the tuner reads the upstream itself (a relay) and so
   * knows better than ffmpeg, which only sees the tuner's answer. `kind` is for any user
   * ("the source refused the connection"), `detail` for administrators. Since SDK 1.1.
   */
  failure?(): { kind: string; detail: string } | undefined;
}

export interface Tuner {
  /** Unique across tuners, stable across restarts, e.g. `m3u:IPTV`. */
  id: string;
  /** Shown to users (e.g. in "tuner limit reached for IPTV"). */
  name: string;
  /** Simultaneous upstream connections the source allows. */
  maxStreams: number;
  /**
   * The full channel list; called at start, on refresh and on `antenna guide refresh`.
   * An array, or an async iterable (e.g. an `async *listChannels()` generator) for long
   * lists: each channel is reduced to what is stored of it as it is yielded, so a tuner that
   * builds channels one at a time (a playlist parsed as it downloads) never holds them
   * all. It may yield a channel, or several at once as an array (a tuner reading its list in
   * pieces: one async step per piece, not per channel; 100,000 steps cost ~60 ms). The
   * iteration happens outside any database transaction. The first channel of a key wins;
   * later ones with the same key are counted as duplicates. Throwing (or failing the
   * iteration) keeps the previous channels.
   */
  listChannels(options: {
    signal: AbortSignal;
    progress?: (fraction: number, message?: string) => void;
    /**
     * An entry the tuner leaves out (an unsupported scheme, a malformed header…), in one line
     * without credentials: counted in the import's result, the first ones logged. (Since SDK 1.1.)
     */
    warning?: (message: string) => void;
  }): Promise<TunerChannel[]> | AsyncIterable<TunerChannel | readonly TunerChannel[]>;
  /** How to read one channel now. Throw an AppError (502/503) when the upstream is unusable. */
  openStream(options: { channel: TunerChannel; signal: AbortSignal }): Promise<StreamSource>;
  /** How often to call listChannels again (ms); omit for never. */
  refreshMs?: number;
}

export interface GuideChannel {
  /** The guide's own channel id (XMLTV `<channel id>`); matched to tvg-id, then to names. */
  id: string;
  displayNames: string[];
  icon?: string;
}

export interface GuideProgramme {
  /** The guide channel id this programme belongs to. */
  channel: string;
  /** ms since epoch, UTC. */
  start: number;
  stop: number;
  title: string;
  subTitle?: string;
  description?: string;
  categories?: string[];
  /** The `<episode-num>` people read best (onscreen, else xmltv_ns, else the first). */
  episodeNum?: string;
  icon?: string;
  /** Every `<episode-num>` in file order, whatever its system (xmltv_ns, onscreen, dd_progid…). Since SDK 1.2. */
  episodeNums?: { system: string; value: string }[];
  /** `<new/>`: a first showing. Since SDK 1.2. */
  isNew?: boolean;
  /** `<premiere>`. Since SDK 1.2. */
  premiere?: boolean;
  /** `<previously-shown>`, with its `start` (ms) when given. Since SDK 1.2. */
  previouslyShown?: { start?: number };
  /** `<live/>`. Since SDK 1.2. */
  live?: boolean;
}

/** Where a guide source delivers what it reads. Batches keep memory flat on huge guides. */
export interface GuideSink {
  channel(channel: GuideChannel): void;
  /** Awaited: a source reading a stream should pause it until the batch is stored. */
  programmes(batch: GuideProgramme[]): Promise<void>;
  /** A skipped element or an odd value, counted and logged, never fatal. */
  warning(message: string): void;
  progress(fraction: number, message?: string): void;
}

export interface GuideLoadResult {
  channels: number;
  programmes: number;
  skipped: number;
  warnings: number;
}

export interface GuideSource {
  id: string;
  name: string;
  /** Reads the whole guide into the sink. Rejects (and nothing is replaced) when the source is unusable. */
  load(options: { signal: AbortSignal; sink: GuideSink }): Promise<GuideLoadResult>;
  refreshMs?: number;
}

/**
 * Tuners are added during init; after start a plugin whose sources
 * changed may add and remove its tuners: an added one is imported at once and
 * refreshed on its schedule, a removed one's channels are hidden (they keep
 * their ids for when it returns). Adding a tuner with the id of one just
 * removed replaces it: its channels stay.
 */
export interface TunerRegistry {
  addTuner(tuner: Tuner): void;
  /** Removes a tuner this plugin added; false when there is none with this id. */
  removeTuner(id: string): boolean;
}

/** Guide sources, added during init; after start they may be added and removed as tuners are. */
export interface GuideRegistry {
  addGuideSource(source: GuideSource): void;
  /** Removes a guide source this plugin added; its programmes leave the guide. False when there is none with this id. */
  removeGuideSource(id: string): boolean;
}

export const tunersExtensionPoint = createExtensionPoint<TunerRegistry>({ id: 'live-tv.tuners', owner: 'live-tv' });
export const guidesExtensionPoint = createExtensionPoint<GuideRegistry>({ id: 'live-tv.guides', owner: 'live-tv' });

/**
 * What live-tv offers the plugins that build on live TV (the DVR): channel and
 * guide lookups, and a way to keep a channel's live session running. A held
 * session is the very job viewers use (`live:<id>`): one ffmpeg, one upstream
 * connection and one tuner slot, however many viewers and recordings share it.
 *
 *   env.registerInit({ deps: { live: liveTvService }, init({ live }) { … } })
 */
export interface LiveChannelInfo {
  id: number;
  name: string;
  /** Channel number as shown. */
  number: string;
  /** The tuner the channel comes from; its maxStreams bounds the channels running at once. */
  tunerId: string;
  tunerName: string;
  maxStreams: number;
}

/** A channel as clients that list channels get it (M3U playlists, HDHomeRun lineups). (Since SDK 1.2.) */
export interface LiveChannelListing {
  id: number;
  /** Channel number as shown, unique across channels. */
  number: string;
  name: string;
  tvgId?: string;
  /** The playlist's logo, else the icon of the guide channel it is mapped to. */
  logo?: string;
  /** Its groups (categories), in the playlist's order. */
  groups: string[];
}

/** A programme with what the guide said of it, as its guide gave it, with its id here. (Since SDK 1.2.) */
export interface LiveGuideProgramme extends Omit<GuideProgramme, 'channel'> {
  id: number;
}

/** A programme of the guide as it is now. Its id stays while its start time stays. */
export interface LiveProgramme {
  id: number;
  channelId: number;
  title: string;
  /** ms since epoch, UTC. */
  start: number;
  stop: number;
  /** What the guide says of it as an episode (as /programs gives it). Since SDK 1.2. */
  episodeTitle?: string | null;
  season?: number | null;
  episode?: number | null;
  isNew?: boolean;
  isRepeat?: boolean;
  isLive?: boolean;
  seriesKey?: string | null;
  /** Which episode this is, the same on every airing and channel of it; null when the guide cannot tell. */
  episodeKey?: string | null;
}

/** What picks programmes of the guide (one of): a title (compared without case, accents or extra spaces), a `dd_progid` series id, a keyword of the title or episode title, a regular expression on the title. */
export type AiringMatch = { title: string } | { seriesId: string } | { keyword: string } | { regex: string };

/** A programme of a channel that some of the matches pick: their indices. */
export interface MatchedAiring extends LiveProgramme {
  matches: number[];
}

/**
 * A representation of a live session's run: `id` is 'video' or 'audio' in every run, and
 * `bandwidth` the peak bit rate of the session's segments so far, with a margin.
 */
export type LiveRepresentation = MediaRepresentation;

/**
 * A finished segment of a live session, as the session announces it to its
 * holders. Segments of one run share a timeline and init segments; a new run
 * (ffmpeg restarted, the upstream dropped, codecs switched) starts a new one.
 * The files stay at their paths for at least a minute after the announcement:
 * link or copy them at once.
 */
export interface LiveSegment {
  /** The run it belongs to; grows with every restart of the session. */
  run: number;
  representation: LiveRepresentation;
  /** Absolute path of the run's init segment for this representation. */
  initPath: string;
  /** Absolute path of the media segment. */
  path: string;
  /** Its number in the session: consecutive and never reused; the same number in every representation covers the same stretch. */
  sequence: number;
  /** Media time and duration, in the representation's timescale (the times inside the file). */
  start: number;
  duration: number;
  /** The wall-clock time its start stands for (ms since epoch). */
  wallClock: number;
  /** The session's target duration (seconds): every segment's duration, rounded, is at most this. */
  targetDuration: number;
}

/** A channel's live session kept running by a holder until release(). */
export interface LiveHold {
  /**
   * Calls `listener` with every finished segment of every representation: first the ones the
   * session still keeps (oldest first), then each new one as it finishes. Returns a function that
   * stops the calls. A listener must not throw.
   */
  onSegment(listener: (segment: LiveSegment) => void): () => void;
  /** Why the session is not producing right now (upstream failure), if it is not. */
  lastError(): string | undefined;
  /** Settles when the session has ended (shutdown, stopped): hold again to go on. */
  readonly ended: Promise<void>;
  release(): void;
}

/** A channel's live session as one continuous MPEG-TS. (Since SDK 1.2.) */
export interface LiveMpegTs {
  /** The bytes; ends when the session ends, a recording takes its tuner slot, or close() is called. */
  readonly stream: Readable;
  /** Stops the stream and releases its hold (also done when `stream` is destroyed). */
  close(): void;
}

export interface LiveTvAccess {
  /** A present channel of a registered tuner. */
  channel(id: number): Promise<LiveChannelInfo | undefined>;
  /** The tuners (sources) channels come from, with the streams each allows at once. (Since SDK 1.2.) */
  tuners(): { id: string; name: string; maxStreams: number }[];
  /** Every present channel, in number order. (Since SDK 1.2.) */
  channels(): Promise<LiveChannelListing[]>;
  /**
   * The programmes of these channels overlapping [from, to), by start, with their details. For the
   * whole guide, ask a few dozen channels at a time. (Since SDK 1.2.)
   */
  guide(channelIds: number[], from: number, to: number): Promise<Map<number, LiveGuideProgramme[]>>;
  /** One programme of one channel. */
  programme(channelId: number, programmeId: number): Promise<LiveProgramme | undefined>;
  /** The channel's programmes overlapping [from, to), by start. */
  programmes(channelId: number, from: number, to: number): Promise<LiveProgramme[]>;
  /** Changes whenever the channels or the guide change (an import here or in the CLI). */
  guideVersion(): Promise<string>;
  /**
   * Every programme on a present channel overlapping [from, to) that any of `matches` picks, by
   * start (a guide channel feeding two channels gives two). A regex that does not compile picks
   * nothing. Since SDK 1.2.
   */
  findAirings(matches: AiringMatch[], from: number, to: number): Promise<MatchedAiring[]>;
  /**
   * Starts the channel's session if it is not running (taking a tuner slot; when
   * the tuner is full, a session only viewers use gives way: recordings come
   * first) and keeps it running until release(). Throws 404 for an unknown
   * channel and 409 when every slot is held by other holders.
   *
   * `{ viewer: true }` (since SDK 1.2) holds for a viewer watching through another protocol (an
   * HDHomeRun client's MPEG-TS): it never stops another session (409 when the tuner is full) and,
   * like HLS viewers, gives way to a recording, which ends the hold.
   */
  hold(channelId: number, label: string, options?: { viewer?: boolean }): Promise<LiveHold>;
  /**
   * The channel's live session as MPEG-TS, for clients that read one stream (HDHomeRun, M3U): a
   * viewer's hold (above) whose segments are copied into MPEG-TS, starting with the newest ones the
   * session keeps. Resolves once there is something to send; 404 unknown channel, 409 tuner full,
   * 503 when the stream does not start. `signal` (the client went away) closes it; so does the
   * revocation of `grant`'s access key, the stream then cut off at once. In cluster mode, when
   * another node runs the channel, the stream is that node's, read with a key `grant` mints and
   * passed on (no second upstream connection or tuner slot; without `grant`, 409). (Since SDK 1.2.)
   */
  mpegTs(channelId: number, options: { label: string; signal?: AbortSignal; grant?: AccessGrant }): Promise<LiveMpegTs>;
  /**
   * The path of the channel's HLS master playlist (`/watch/live/<id>/master.m3u8?key=…`) with a key
   * the grant minted: it plays with no header, manifests and segments alike, for as long as the
   * grant's access key lives. Does not tune the channel. (Since SDK 1.2.)
   */
  hlsPath(channelId: number, grant: AccessGrant): string;
  /**
   * Channels whose name or number contains `query`, in channel order, and programmes on
   * now or later whose title contains it, by start time: up to `limit` of each. Case and
   * accents aside (programme titles: case aside). (Since SDK 1.2.)
   */
  search(query: string, limit: number): Promise<LiveSearchResult>;
}

export interface LiveSearchResult {
  channels: { id: number; name: string; number: string; logo: string | null }[];
  programmes: (LiveProgramme & { subTitle: string | null })[];
}

export const liveTvService = createServiceRef<LiveTvAccess>({ id: 'live-tv.access', owner: 'live-tv' });

/** @deprecated since SDK 1.1: the same service under its 1.0 name; use `liveTvService`. */
export const liveTvExtensionPoint = liveTvService;
