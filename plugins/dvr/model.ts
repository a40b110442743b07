import { Type } from 'antenna/sdk';

/** `skipped`: an airing of a rule a user cancelled (never scheduled again); `conflict`: a rule's airing without a free tuner. */
export type RecordingStatus = 'scheduled' | 'recording' | 'completed' | 'failed' | 'cancelled' | 'skipped' | 'conflict';

/** Scheduled and running recordings: the ones that still need a tuner and block a duplicate. */
export const ACTIVE: ReadonlySet<RecordingStatus> = new Set(['scheduled', 'recording']);

export interface Gap { start: number; stop: number }

export interface Recording {
  id: number;
  channelId: number;
  programId: number;
  tunerId: string;
  title: string;
  /** Programme times (ms); the recording runs from start - prePadding to stop + postPadding. */
  start: number;
  stop: number;
  status: RecordingStatus;
  error: string | null;
  sizeBytes: number;
  /** Seconds of media recorded. */
  duration: number;
  gaps: Gap[];
  dir: string;
  createdBy: number | null;
  createdAt: number;
  /** The series rule that made it; null for a one-off. */
  ruleId: number | null;
  /** Which episode it is (the guide's identity), to record each once; null when the guide cannot tell. */
  episodeKey: string | null;
  seriesKey: string | null;
  season: number | null;
  episode: number | null;
  episodeTitle: string | null;
  /** Seconds; null: the configured ones. */
  prePadding: number | null;
  postPadding: number | null;
  /** When someone first played it. */
  watchedAt: number | null;
}

/** A recording's programme-and-episode part, as a rule or a one-off makes it. */
export type EpisodeFields = Pick<Recording, 'episodeKey' | 'seriesKey' | 'season' | 'episode' | 'episodeTitle'>;

const iso = (ms: number) => new Date(ms).toISOString();

export const RecordingSchema = Type.Object({
  id: Type.Integer(),
  channel_id: Type.Integer(),
  program_id: Type.Integer({ description: 'The guide programme (GET /programs); follows it when the guide moves it before it starts' }),
  status: Type.Union(['scheduled', 'recording', 'completed', 'failed', 'cancelled', 'skipped', 'conflict'].map((s) => Type.Literal(s)), {
    description: 'skipped: an airing of a series rule a user cancelled; conflict: an airing of a rule that no tuner is free for (see reason)',
  }),
  title: Type.String(),
  start: Type.String({ format: 'date-time', description: 'Programme start (recording begins prePadding earlier)' }),
  stop: Type.String({ format: 'date-time', description: 'Programme stop (recording ends postPadding later)' }),
  error: Type.Optional(Type.String({ description: 'Why it failed (only when status is failed)' })),
  reason: Type.Optional(Type.String({ description: 'What is in the way (only when status is conflict): the recordings holding the tuner' })),
  rule_id: Type.Union([Type.Integer(), Type.Null()], { description: 'The series rule that scheduled it (GET /api/dvr/rules); null for a one-off' }),
  series_key: Type.Union([Type.String(), Type.Null()], { description: 'The series_key of its programme' }),
  season: Type.Union([Type.Integer(), Type.Null()]),
  episode: Type.Union([Type.Integer(), Type.Null()]),
  episode_title: Type.Union([Type.String(), Type.Null()]),
  size_bytes: Type.Integer(),
  duration: Type.Number({ description: 'Seconds of media recorded so far' }),
  gaps: Type.Array(Type.Object({ start: Type.String({ format: 'date-time' }), stop: Type.String({ format: 'date-time' }) }), {
    description: 'Stretches with nothing recorded (server down, upstream lost); playback joins the parts around them',
  }),
});

/** The API's Recording (PRODUCT.md §2), plus duration and gaps. */
export function recordingView(r: Recording): Record<string, unknown> {
  return {
    id: r.id, channel_id: r.channelId, program_id: r.programId, status: r.status, title: r.title,
    start: iso(r.start), stop: iso(r.stop),
    ...(r.status === 'failed' ? { error: r.error ?? 'failed' } : {}),
    ...(r.status === 'conflict' ? { reason: r.error ?? 'no free tuner' } : {}),
    rule_id: r.ruleId, series_key: r.seriesKey, season: r.season, episode: r.episode, episode_title: r.episodeTitle,
    size_bytes: r.sizeBytes, duration: Math.round(r.duration * 1000) / 1000,
    gaps: r.gaps.map((g) => ({ start: iso(g.start), stop: iso(g.stop) })),
  };
}
