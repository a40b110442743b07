/**
 * A recording on disk: `<dir>/p<n>/` per part, each with `part.json` (when it
 * began, its representations), `segments.tsv` (one line per segment, appended
 * after the segment file is in place, so every line names a complete file),
 * `init-<rep>.mp4` and `<rep>-<index>.mp4`. A part is one unbroken run of the
 * live session; a new part starts after a restart of the server, of the
 * session, or a switch of its codecs. Nothing else is needed to play it.
 */
import { mkdir, open, readdir, readFile, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { segmentStart } from './media-times.js';

/** A representation of a part, as its part.json keeps it. */
export interface RepInfo {
  id: string;
  contentType: 'video' | 'audio' | 'text';
  mimeType: string;
  codecs: string;
  bandwidth: number;
  width?: number;
  height?: number;
  frameRate?: string;
  sampleRate?: number;
  channels?: number;
  timescale: number;
}

export interface Segment {
  /** 1, 2, … within the part and representation: the file `<rep>-<index padded to 5>.mp4`. */
  index: number;
  /** Media time and duration in the representation's timescale. */
  t: number;
  d: number;
  bytes: number;
}

export interface Part {
  index: number;
  /** Wall-clock time (ms) the part's media begins at. */
  startedAt: number;
  reps: RepInfo[];
  segments: Map<string, Segment[]>;
  /** Bytes of its init and media segments. */
  bytes: number;
  /** The live session's target duration when it was recorded (seconds); absent in parts of older versions. */
  targetDuration?: number;
}

export const partDir = (dir: string, index: number) => path.join(dir, `p${index}`);
export const initFile = (repId: string) => `init-${repId}.mp4`;
export const segmentFile = (repId: string, index: number) => `${repId}-${String(index).padStart(5, '0')}.mp4`;

/** The representation a part's length is measured on: its video, else its first. */
export function mainRep(part: Part): RepInfo | undefined {
  return part.reps.find((r) => r.contentType === 'video') ?? part.reps[0];
}

/** Seconds of media in the part. */
export function partSeconds(part: Part): number {
  const rep = mainRep(part);
  if (!rep) return 0;
  let sum = 0;
  for (const s of part.segments.get(rep.id) ?? []) sum += s.d;
  return sum / rep.timescale;
}

export function recordedSeconds(parts: readonly Part[]): number {
  return parts.reduce((sum, p) => sum + partSeconds(p), 0);
}

/** Where a part's media ends (seconds), by its segments' `tfdt` and by their `sidx` (see media-times.ts). */
export interface MediaEnd { tfdt: number; sidx?: number }

/**
 * Where the part's media ends: the latest end of its representations' last segments, read from
 * the files (a file that cannot be read counts by its recorded time, and no `sidx`).
 */
export async function partEnd(dir: string, part: Part): Promise<MediaEnd> {
  const end: MediaEnd = { tfdt: 0 };
  for (const rep of part.reps) {
    const last = part.segments.get(rep.id)?.at(-1);
    if (!last) continue;
    const file = await readFile(path.join(partDir(dir, part.index), segmentFile(rep.id, last.index))).catch(() => Buffer.alloc(0));
    const start = segmentStart(file, rep.timescale);
    const seconds = last.d / rep.timescale;
    end.tfdt = Math.max(end.tfdt, (start.tfdt ?? last.t / rep.timescale) + seconds);
    if (start.sidx !== undefined) end.sidx = Math.max(end.sidx ?? 0, start.sidx + seconds);
  }
  return end;
}

/**
 * Creates a part: its directory, its init segments (written by `addInits`, which returns
 * their bytes), then its description; a crash before the description leaves a part that
 * readParts skips.
 */
export async function createPart(dir: string, index: number, startedAt: number, reps: RepInfo[], addInits: (at: string) => Promise<number>, targetDuration?: number): Promise<PartWriter> {
  const at = partDir(dir, index);
  await mkdir(at, { recursive: true, mode: 0o700 });
  const initBytes = await addInits(at);
  await writeFile(path.join(at, 'part.json'), JSON.stringify({ startedAt, reps, initBytes, targetDuration }));
  const part: Part = { index, startedAt, reps, segments: new Map(reps.map((r) => [r.id, []])), bytes: initBytes, targetDuration };
  return new PartWriter(part, await open(path.join(at, 'segments.tsv'), 'a'));
}

/** Appends index lines to a part's segments.tsv (one handle held open while recording). */
export class PartWriter {
  constructor(readonly part: Part, private readonly handle: FileHandle) {}

  async add(repId: string, segment: Segment): Promise<void> {
    await this.handle.write(`${repId}\t${segment.index}\t${segment.t}\t${segment.d}\t${segment.bytes}\n`);
    this.part.segments.get(repId)?.push(segment);
    this.part.bytes += segment.bytes;
  }

  async close(): Promise<void> {
    await this.handle.close().catch(() => {});
  }
}

/** Every readable part of a recording, in order; a part whose description is damaged is skipped. */
export async function readParts(dir: string): Promise<Part[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const indexes = names.map((n) => /^p(\d+)$/.exec(n)).filter((m): m is RegExpExecArray => !!m).map((m) => Number(m[1])).sort((a, b) => a - b);
  const parts: Part[] = [];
  for (const index of indexes) {
    const at = partDir(dir, index);
    let meta: { startedAt: number; reps: RepInfo[]; initBytes?: number; targetDuration?: number };
    try {
      meta = JSON.parse(await readFile(path.join(at, 'part.json'), 'utf8'));
      if (!Number.isFinite(meta.startedAt) || !Array.isArray(meta.reps)) continue;
    } catch {
      continue;
    }
    const part: Part = {
      index, startedAt: meta.startedAt, reps: meta.reps, segments: new Map(meta.reps.map((r) => [r.id, []])), bytes: Number(meta.initBytes) || 0,
      targetDuration: Number.isFinite(meta.targetDuration) ? meta.targetDuration : undefined,
    };
    const text = await readFile(path.join(at, 'segments.tsv'), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      const f = line.split('\t');
      if (f.length !== 5 || !f.slice(1).every((v) => /^\d+$/.test(v))) continue; // the line a crash cut short
      const list = part.segments.get(f[0]);
      if (!list) continue;
      const segment = { index: Number(f[1]), t: Number(f[2]), d: Number(f[3]), bytes: Number(f[4]) };
      list.push(segment);
      part.bytes += segment.bytes;
    }
    if ([...part.segments.values()].some((l) => l.length)) parts.push(part);
  }
  return parts;
}

/** The next free part number of a recording (parts are never renumbered). */
export async function nextPartIndex(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.reduce((n, name) => { const m = /^p(\d+)$/.exec(name); return m ? Math.max(n, Number(m[1]) + 1) : n; }, 0);
}
