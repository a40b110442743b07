/** Shapes of the admin API (/api/admin/*, the OpenAPI document has them all). */

export interface ConfigChange { changed: string[]; applied: string[]; restartNeeded: string[]; error?: string }

export interface Editable { editable: boolean; reason?: string }

export interface JobState { state: string; progress: number; message?: string; error?: string }

export interface AdminUser {
  id: number; username: string; active: boolean; admin: boolean; all_libraries_access: boolean;
  libraries: string[];
  locked_for: number | null;
}

export interface AdminLibrary {
  id: number; name: string; type: 'movies' | 'shows' | 'recordings'; paths: string[]; item_count: number;
  source: 'config' | 'demo' | 'plugin';
  scan: JobState | null;
  last_scan: { at: string; ok: boolean; error?: string; files?: number; added?: number; changed?: number; removed?: number; unreadable?: number; items?: number } | null;
}

export interface SourceStatus {
  id: string; name: string; kind: 'tuner' | 'guide'; max_streams?: number; channels?: number;
  refresh_ms: number | null; next_refresh: string | null;
  last_import: ({ at: string; ok: boolean; error?: string } & Record<string, number | string | boolean>) | null;
  job: JobState | null;
}

export interface Playlist { id: string; name: string; url: string; maxStreams: number; refresh: string; userAgent?: string }
export interface GuideSource { id: string; name?: string; url: string; refresh: string; preferredLanguage?: string }

export interface SettingsField {
  key: string; kind: 'string' | 'integer' | 'number' | 'boolean' | 'choice' | 'duration';
  choices?: string[]; minimum?: number; maximum?: number; default?: unknown; description?: string;
  value?: unknown; effective?: unknown; secret: boolean; live: boolean; restartNeeded: boolean; readOnly: boolean;
}
export interface SettingsSection { id: string; title: string; plugin?: string; description?: string; fields: SettingsField[] }
export interface SettingsPage { file: { path: string | null } & Editable; sections: SettingsSection[] }

export interface JobsPage {
  jobs: ({ key: string; kind: string; startedAt: string } & JobState)[];
  tasks: { id: string; kind: string; next_run: string; every_ms: number | null }[];
}

export interface LogEntry { time: string; level: string; source: string | null; msg: string; fields: Record<string, unknown> }

export interface ChannelGuideMatch { channel_id: string; source: string; method: 'manual' | 'tvg_id' | 'tvg_id_folded' | 'name' | 'fuzzy'; score: number }
export interface AdminChannel {
  id: number; name: string; number: string; logo: string | null; categories: string[]; hidden: boolean;
  tvg_id: string | null; tvg_shift: number; guide: ChannelGuideMatch | null;
  streams: AdminChannelStream[];
}
export interface AdminChannelStream {
  id: number; source: string; name: string; url: string | null;
  /** playing now; cooldown: failed lately, passed over; standby. */
  state: 'playing' | 'cooldown' | 'standby';
  last_failure: { reason: string; at: string } | null;
  viewers: number;
}
export interface GuideChannelChoice { channel_id: string; source: string; names: string[] }
