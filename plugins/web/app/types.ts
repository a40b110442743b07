/** Shapes of the client API the app reads (spec/client-api.md, PRODUCT.md §2, the OpenAPI document at /api/docs). */

export interface Me {
  id: number;
  username: string;
  active: boolean;
  admin: boolean;
  all_libraries_access: boolean;
  favorites: number[];
}

export interface Channel {
  id: number;
  name: string;
  tvg_chno: string;
  favorited: boolean;
  logo?: string | null;
  category?: string | null;
  tvg_id?: string | null;
  source?: string | null;
}

export interface Program {
  id: number;
  title: string;
  start: string;
  stop: string;
  description?: string;
  sub_title?: string;
  categories?: string[];
  episode_num?: string;
  icon?: string;
  season?: number | null;
  episode?: number | null;
  is_new?: boolean;
  is_repeat?: boolean;
  series_key?: string | null;
}

export interface GuideEntry {
  id: number;
  name: string;
  programs: Program[];
}

export interface GuidePage {
  total_channels: number;
  offset: number;
  channels: GuideEntry[];
}

export type RecordingStatus = 'scheduled' | 'recording' | 'completed' | 'failed' | 'cancelled' | 'skipped' | 'conflict';

export interface Recording {
  id: number;
  channel_id: number;
  program_id: number;
  status: RecordingStatus;
  title: string;
  start: string;
  stop: string;
  error?: string;
  size_bytes?: number;
  /** The series rule that scheduled it; null for a one-off. */
  rule_id?: number | null;
  /** What holds the tuner, for a conflict. */
  reason?: string;
  series_key?: string | null;
  season?: number | null;
  episode?: number | null;
  episode_title?: string | null;
}

/** A series rule (/api/dvr/rules). */
export interface Rule {
  id: number;
  title: string | null;
  series_id: string | null;
  keyword: string | null;
  regex: string | null;
  channel_id: number | null;
  days: number[];
  airings: 'all' | 'new' | 'new-or-unknown';
  keep: null | { latest: number } | { days: number };
  priority: number;
  created_by: number | null;
  next: { recording_id: number; channel_id: number; program_id: number; start: string; status: RecordingStatus; reason?: string }[];
}

export interface ContinueEntry {
  videoId: string;
  libraryId: number | string;
  contentType: 'movie' | 'episode' | 'recording';
  title: string;
  position: number;
  duration: number;
  watched: boolean;
  /** null: a video never played (GET /api/continue-watching/{id}). */
  updated_at: string | null;
  /** Episodes: their series and numbers. */
  series_title?: string | null;
  season_number?: number | null;
  episode_number?: number | null;
  /** In the list (GET /api/continue-watching): the video's picture. */
  poster_url?: string | null;
}

export interface SubtitleTrack {
  label: string;
  language: string;
  url: string;
  codec?: string;
  forced?: boolean;
  default?: boolean;
  external?: boolean;
}

export interface PlayInfo {
  method: 'direct' | 'remux' | 'audio-only' | 'transcode';
  url: string;
  format: 'mkv' | 'mp4' | 'dash' | 'hls';
  resume_position?: number;
  /** Why it is not played directly. */
  reasons?: string[];
  /** transcode: the height it is encoded at. */
  height?: number;
}

export interface Library {
  id: number;
  name: string;
  type: 'movies' | 'shows' | 'recordings';
  item_count: number;
}

export type ItemType = 'movie' | 'series' | 'season' | 'episode' | 'recording';

export interface ItemSummary {
  id: string;
  type: ItemType;
  title: string;
  year: number | null;
  library_id: number;
  season_number: number | null;
  episode_number: number | null;
  /** Seconds (playable items). */
  duration: number | null;
  /** Seasons of a series, episodes of a season. */
  child_count: number | null;
  added_at: string;
  /** The poster (an episode: its still); `&width=` asks for a smaller copy. */
  poster_url: string | null;
  /** The user's progress (absent without continue-watching). */
  watched?: boolean;
  position?: number;
}

export interface LibraryPage extends Library {
  items: ItemSummary[];
  total: number;
  limit: number;
  offset: number;
  genres: string[];
  /** In title order: where each first letter starts. */
  letters: { letter: string; offset: number }[];
}

export interface VideoStream {
  index: number; codec: string; profile: string | null; width: number; height: number;
  hdr: boolean; bitrate: number | null; fps: number | null;
}

export interface AudioStream {
  index: number;
  /** The value of audioTrack that selects it. */
  track: number;
  codec: string; channels: number; language: string | null; title: string | null; default: boolean;
}

export interface SubtitleStream {
  index: number; codec: string; language: string | null; title: string | null; default: boolean; forced: boolean;
}

export interface ItemVersion {
  version: number;
  label: string | null;
  file_name: string;
  container: string;
  size: number;
  duration: number;
  bitrate: number;
  video: VideoStream | null;
  audio: AudioStream[];
  subtitles: SubtitleStream[];
}

export interface ItemDetail extends ItemSummary {
  parent_id: string | null;
  versions: ItemVersion[];
  children: ItemSummary[];
  plot: string | null;
  tagline: string | null;
  original_title: string | null;
  genres: string[];
  cast: { name: string; role: string | null }[];
  directors: string[];
  studios: string[];
  /** 0 to 10. */
  rating: number | null;
  content_rating: string | null;
  premiered: string | null;
  backdrop_url: string | null;
  series_id: string | null;
  series_title: string | null;
  next_episode_id: string | null;
}

export interface SearchItem {
  id: string;
  type: 'movie' | 'series' | 'episode';
  title: string;
  year: number | null;
  library_id: number;
  series_title: string | null;
  season_number: number | null;
  episode_number: number | null;
  poster_url: string | null;
}

export interface SearchResult {
  query: string;
  movies: SearchItem[];
  shows: SearchItem[];
  episodes: SearchItem[];
  channels: { id: number; name: string; number: string; logo: string | null }[];
  programmes: { id: number; channel_id: number; channel_name: string; channel_number: string; title: string; sub_title: string | null; start: string; stop: string }[];
}
