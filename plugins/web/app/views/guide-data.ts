/**
 * The guide's data: pages of channels (GET /programs?limit&offset&from&to, in
 * channel-number order) fetched as their rows come into view and kept for the
 * life of the view, so 500 channels × 24 h never arrive at once.
 */
import { api } from '../api.js';
import type { Program, Recording } from '../types.js';

/** Channels per request: about two screens of rows. */
export const GUIDE_PAGE = 40;

export interface GuideProgram extends Program {
  /** Start and stop in ms, parsed once. */
  s: number;
  e: number;
}

export interface GuideRow {
  id: number;
  name: string;
  tvg_chno: string;
  logo: string | null;
  programs: GuideProgram[];
}

interface ProgramsPage {
  total_channels: number;
  offset: number;
  channels: { id: number; name: string; tvg_chno: string; logo: string | null; programs: Program[] }[];
}

export class GuidePages {
  /** Channels in the guide (known once the first page arrived). */
  total: number | undefined;
  error: Error | undefined;
  private readonly rows: GuideRow[] = [];
  private readonly requested = new Set<number>();
  private readonly controller = new AbortController();

  constructor(
    private readonly category: string | undefined,
    private readonly from: number,
    private readonly to: number,
    private readonly onChange: () => void,
  ) {}

  row(index: number): GuideRow | undefined {
    return this.rows[index];
  }

  /** Fetches the pages holding rows first…last that are not here or on their way. */
  ensure(first: number, last: number): void {
    if (this.controller.signal.aborted) return;
    const end = this.total === undefined ? last : Math.min(last, this.total - 1);
    for (let page = Math.floor(Math.max(0, first) / GUIDE_PAGE); page * GUIDE_PAGE <= end; page++) {
      if (!this.requested.has(page)) void this.load(page);
    }
  }

  /** After an error: forget the pages that failed and fetch what is in view again. */
  retry(first: number, last: number): void {
    this.error = undefined;
    for (const page of [...this.requested]) if (!this.rows[page * GUIDE_PAGE]) this.requested.delete(page);
    this.ensure(first, last);
    this.onChange();
  }

  dispose(): void {
    this.controller.abort();
  }

  private async load(page: number): Promise<void> {
    this.requested.add(page);
    const query = new URLSearchParams({
      limit: String(GUIDE_PAGE), offset: String(page * GUIDE_PAGE),
      from: new Date(this.from).toISOString(), to: new Date(this.to).toISOString(),
    });
    if (this.category !== undefined) query.set('category', this.category);
    try {
      const body = await api<ProgramsPage>(`/programs?${query}`, { signal: this.controller.signal });
      this.total = body.total_channels;
      body.channels.forEach((c, i) => {
        this.rows[body.offset + i] = {
          id: c.id, name: c.name, tvg_chno: c.tvg_chno, logo: c.logo,
          programs: c.programs.map((p) => ({ ...p, s: Date.parse(p.start), e: Date.parse(p.stop) })),
        };
      });
    } catch (err) {
      if (this.controller.signal.aborted) return;
      this.error = err as Error;
    }
    this.onChange();
  }
}

/** The first programme of a row (sorted by start) still running at `time`. */
export function firstEndingAfter(programs: GuideProgram[], time: number): number {
  let lo = 0;
  let hi = programs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (programs[mid].e <= time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export const recordingKey = (channelId: number, programId: number) => `${channelId}:${programId}`;

/** Scheduled and running recordings by channel and programme: the guide marks them. */
export async function activeRecordings(): Promise<Map<string, Recording>> {
  const list = await api<Recording[]>('/recordings');
  const map = new Map<string, Recording>();
  for (const r of list) if (r.status === 'scheduled' || r.status === 'recording') map.set(recordingKey(r.channel_id, r.program_id), r);
  return map;
}
