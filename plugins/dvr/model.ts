import { Type } from 'antenna/sdk';

export type RecordingStatus = 'scheduled' | 'recording' | 'completed' | 'failed' | 'cancelled';

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
}

const iso = (ms: number) => new Date(ms).toISOString();

export const RecordingSchema = Type.Object({
  id: Type.Integer(),
  channel_id: Type.Integer(),
  program_id: Type.Integer({ description: 'The guide programme (GET /programs); follows it when the guide moves it before it starts' }),
  status: Type.Union(['scheduled', 'recording', 'completed', 'failed', 'cancelled'].map((s) => Type.Literal(s))),
  title: Type.String(),
  start: Type.String({ format: 'date-time', description: 'Programme start (recording begins prePadding earlier)' }),
  stop: Type.String({ format: 'date-time', description: 'Programme stop (recording ends postPadding later)' }),
  error: Type.Optional(Type.String({ description: 'Why it failed (only when status is failed)' })),
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
    size_bytes: r.sizeBytes, duration: Math.round(r.duration * 1000) / 1000,
    gaps: r.gaps.map((g) => ({ start: iso(g.start), stop: iso(g.stop) })),
  };
}
