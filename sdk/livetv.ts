/**
 * Live-TV contracts. live-tv owns both extension points; a tuner plugin (m3u-tuner,
 * examples/tuner-test-pattern) adds tuners, a guide plugin (xmltv-guide) adds guide
 * sources. Modelled on Jellyfin's ITunerHost and IListingsProvider.
 */
import { createExtensionPoint } from './refs.js';

/** One channel as a tuner lists it. */
export interface TunerChannel {
  /** Stable within the tuner across refreshes: tvg-id when present, else the stream URL. */
  key: string;
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
  /** Values to redact wherever the arguments are logged (tokens in URLs…). */
  secrets?: string[];
  /** ffmpeg -map values when the input is not one file with video and audio (default ['0:v:0?', '0:a:0?']). */
  maps?: string[];
  /** Codecs the upstream is known to carry, when the tuner knows (skips a probe). */
  videoCodec?: string;
  audioCodec?: string;
}

export interface Tuner {
  /** Unique across tuners, stable across restarts, e.g. `m3u:IPTV`. */
  id: string;
  /** Shown to users (e.g. in "tuner limit reached for IPTV"). */
  name: string;
  /** Simultaneous upstream connections the source allows. */
  maxStreams: number;
  /** The full channel list; called at start, on refresh and on `antenna guide refresh`. */
  listChannels(options: { signal: AbortSignal; progress?: (fraction: number, message?: string) => void }): Promise<TunerChannel[]>;
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
  episodeNum?: string;
  icon?: string;
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

export interface TunerRegistry {
  addTuner(tuner: Tuner): void;
}

export interface GuideRegistry {
  addGuideSource(source: GuideSource): void;
}

export const tunersExtensionPoint = createExtensionPoint<TunerRegistry>('live-tv.tuners');
export const guidesExtensionPoint = createExtensionPoint<GuideRegistry>('live-tv.guides');
