/**
 * A manifest validator for the tests: what a player depends on in the HLS
 * playlists (RFC 8216) and DASH MPDs (ISO/IEC 23009-1) Antenna writes.
 *
 * - `checkHlsMaster`, `checkHlsMedia`, `checkMpd`: rules on one document.
 * - `validateHls(url)` / `validateDash(url)`: fetch a presentation (master,
 *   media playlists, init and media segments) and check it as a whole:
 *   renditions' target durations equal, CODECS against the init segments
 *   (ffprobe), BANDWIDTH at least the measured peak segment bit rate, and, for
 *   DASH, the XSD when `ANTENNA_DASH_XSD` names a DASH-MPD.xsd and xmllint is
 *   installed (a note says when the schema was skipped).
 * - `PlaylistHistory`: reloads of one playlist (target duration never
 *   changes, sequences never go back).
 * Every check returns problems as sentences; an empty list is a pass.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SaxesParser } from 'saxes';

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const FFPROBE: string = require('@ffprobe-installer/ffprobe').path;

export interface Report { problems: string[]; notes: string[] }
export type Fetcher = (url: string) => Promise<{ status: number; body: Buffer }>;

const defaultFetch: Fetcher = async (url) => {
  const res = await fetch(url);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
};

/* ------------------------------------------------------------------ HLS */

interface Tag { name: string; value: string }

/** `KEY=value,KEY="quoted, value"` → map (RFC 8216 §4.2). */
export function attributes(list: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of list.matchAll(/([A-Z0-9-]+)=("[^"]*"|[^,]*)/g)) out.set(m[1], m[2].startsWith('"') ? m[2].slice(1, -1) : m[2]);
  return out;
}

function lines(text: string): string[] {
  return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l.length);
}

const tagOf = (line: string): Tag | undefined => {
  const m = /^#(EXT[A-Z0-9-]*)(?::(.*))?$/.exec(line);
  return m ? { name: m[1], value: m[2] ?? '' } : undefined;
};

/** RFC 8216 §4.3.2.1: rounded to the nearest integer. */
const rounded = (seconds: number) => Math.floor(seconds + 0.5);

export interface MediaSegmentInfo { uri: string; duration: number; sequence: number; discontinuity: boolean; map?: string }
export interface MediaPlaylistInfo {
  targetDuration: number; mediaSequence: number; discontinuitySequence: number; version: number;
  playlistType?: string; endlist: boolean; segments: MediaSegmentInfo[];
}

/** The rules of one media playlist; `live` (no ENDLIST expected) adds the start rule of §6.3.3. */
export function checkHlsMedia(text: string): { problems: string[]; playlist?: MediaPlaylistInfo } {
  const problems: string[] = [];
  const all = lines(text);
  if (all[0] !== '#EXTM3U') return { problems: ['does not begin with #EXTM3U'] };
  const once = new Map<string, number>();
  let target: number | undefined;
  let version = 1;
  let mediaSequence = 0;
  let discontinuitySequence = 0;
  let playlistType: string | undefined;
  let endlist = false;
  let pendingDuration: number | undefined;
  let discontinuity = false;
  let map: string | undefined;
  const segments: MediaSegmentInfo[] = [];
  const needs = new Map<number, string>();
  const need = (v: number, why: string) => { if (!needs.has(v)) needs.set(v, why); };
  for (const line of all.slice(1)) {
    const tag = tagOf(line);
    if (!tag) {
      if (line.startsWith('#')) continue; // a comment
      if (pendingDuration === undefined) { problems.push(`URI without EXTINF: ${short(line)}`); continue; }
      segments.push({ uri: line, duration: pendingDuration, sequence: mediaSequence + segments.length, discontinuity, map });
      pendingDuration = undefined;
      discontinuity = false;
      continue;
    }
    if (['EXT-X-TARGETDURATION', 'EXT-X-MEDIA-SEQUENCE', 'EXT-X-DISCONTINUITY-SEQUENCE', 'EXT-X-VERSION', 'EXT-X-PLAYLIST-TYPE', 'EXT-X-ENDLIST', 'EXT-X-INDEPENDENT-SEGMENTS'].includes(tag.name)) {
      once.set(tag.name, (once.get(tag.name) ?? 0) + 1);
      if (once.get(tag.name) === 2) problems.push(`${tag.name} appears more than once`);
    }
    switch (tag.name) {
      case 'EXT-X-TARGETDURATION':
        if (!/^\d+$/.test(tag.value)) problems.push(`EXT-X-TARGETDURATION is not a decimal-integer: ${tag.value}`);
        target = Number(tag.value);
        break;
      case 'EXT-X-VERSION': version = Number(tag.value); break;
      case 'EXT-X-MEDIA-SEQUENCE':
      case 'EXT-X-DISCONTINUITY-SEQUENCE':
        if (segments.length || pendingDuration !== undefined) problems.push(`${tag.name} after the first segment`);
        if (tag.name === 'EXT-X-DISCONTINUITY-SEQUENCE' && segments.some((s) => s.discontinuity)) problems.push('EXT-X-DISCONTINUITY-SEQUENCE after a discontinuity');
        if (tag.name === 'EXT-X-MEDIA-SEQUENCE') mediaSequence = Number(tag.value);
        else discontinuitySequence = Number(tag.value);
        break;
      case 'EXT-X-PLAYLIST-TYPE':
        playlistType = tag.value;
        if (!['EVENT', 'VOD'].includes(tag.value)) problems.push(`EXT-X-PLAYLIST-TYPE ${tag.value}`);
        break;
      case 'EXT-X-ENDLIST': endlist = true; break;
      case 'EXT-X-DISCONTINUITY': discontinuity = true; break;
      case 'EXTINF': {
        const seconds = Number(tag.value.split(',')[0]);
        if (!Number.isFinite(seconds) || seconds <= 0) problems.push(`EXTINF ${tag.value}`);
        if (!/^\d+,?/.test(tag.value) || /^\d+\.\d/.test(tag.value)) need(3, 'floating-point EXTINF durations');
        pendingDuration = seconds;
        break;
      }
      case 'EXT-X-MAP': {
        const uri = attributes(tag.value).get('URI');
        if (!uri) problems.push('EXT-X-MAP without URI');
        map = uri;
        need(6, 'EXT-X-MAP in a media playlist');
        break;
      }
      case 'EXT-X-BYTERANGE': need(4, 'EXT-X-BYTERANGE'); break;
      case 'EXT-X-I-FRAMES-ONLY': need(4, 'EXT-X-I-FRAMES-ONLY'); break;
      case 'EXT-X-KEY': if (/KEYFORMAT/.test(tag.value)) need(5, 'KEYFORMAT'); break;
      case 'EXT-X-PROGRAM-DATE-TIME':
        if (Number.isNaN(Date.parse(tag.value))) problems.push(`EXT-X-PROGRAM-DATE-TIME ${tag.value}`);
        break;
      default: break;
    }
  }
  if (target === undefined) problems.push('no EXT-X-TARGETDURATION');
  if (pendingDuration !== undefined) problems.push('EXTINF without a URI at the end');
  for (const [v, why] of needs) if (version < v) problems.push(`EXT-X-VERSION ${version} but ${why} needs ${v}`);
  if (target !== undefined) {
    const over = segments.filter((s) => rounded(s.duration) > target!);
    if (over.length) problems.push(`EXTINF rounded above EXT-X-TARGETDURATION ${target}: ${over.map((s) => s.duration).join(', ')}`);
  }
  if (segments.some((s) => !s.map)) problems.push('a segment without EXT-X-MAP (fMP4 needs its init segment)');
  if (playlistType === 'VOD' && !endlist) problems.push('a VOD playlist without EXT-X-ENDLIST');
  if (!endlist && target !== undefined) {
    const total = segments.reduce((sum, s) => sum + s.duration, 0);
    if (total < 3 * target - 0.05) problems.push(`a live playlist of ${total.toFixed(3)} s: below three target durations (${3 * target} s), RFC 8216 §6.3.3`);
  }
  return {
    problems,
    playlist: { targetDuration: target ?? 0, mediaSequence, discontinuitySequence, version, playlistType, endlist, segments },
  };
}

export interface VariantInfo { bandwidth: number; codecs?: string; uri: string; audio?: string; resolution?: string; frameRate?: string }
export interface RenditionInfo { type: string; group: string; name: string; uri?: string; channels?: string; language?: string }

export function checkHlsMaster(text: string): { problems: string[]; variants: VariantInfo[]; renditions: RenditionInfo[] } {
  const problems: string[] = [];
  const variants: VariantInfo[] = [];
  const renditions: RenditionInfo[] = [];
  const all = lines(text);
  if (all[0] !== '#EXTM3U') return { problems: ['does not begin with #EXTM3U'], variants, renditions };
  let pending: Map<string, string> | undefined;
  let independent = false;
  for (const line of all.slice(1)) {
    const tag = tagOf(line);
    if (!tag) {
      if (line.startsWith('#')) continue;
      if (!pending) { problems.push(`URI without EXT-X-STREAM-INF: ${short(line)}`); continue; }
      const bandwidth = Number(pending.get('BANDWIDTH'));
      if (!(bandwidth > 0)) problems.push(`EXT-X-STREAM-INF without a BANDWIDTH: ${short(line)}`);
      variants.push({ bandwidth, codecs: pending.get('CODECS'), uri: line, audio: pending.get('AUDIO'), resolution: pending.get('RESOLUTION'), frameRate: pending.get('FRAME-RATE') });
      pending = undefined;
      continue;
    }
    if (tag.name === 'EXTINF' || tag.name === 'EXT-X-TARGETDURATION') problems.push(`${tag.name} in a master playlist`);
    if (tag.name === 'EXT-X-INDEPENDENT-SEGMENTS') independent = true;
    if (tag.name === 'EXT-X-STREAM-INF') pending = attributes(tag.value);
    if (tag.name === 'EXT-X-MEDIA') {
      const a = attributes(tag.value);
      for (const required of ['TYPE', 'GROUP-ID', 'NAME']) if (!a.get(required)) problems.push(`EXT-X-MEDIA without ${required}`);
      if (a.get('TYPE') === 'AUDIO' && !a.get('CHANNELS')) problems.push(`audio rendition ${a.get('NAME')} without CHANNELS`);
      renditions.push({ type: a.get('TYPE') ?? '', group: a.get('GROUP-ID') ?? '', name: a.get('NAME') ?? '', uri: a.get('URI'), channels: a.get('CHANNELS'), language: a.get('LANGUAGE') });
    }
  }
  if (pending) problems.push('EXT-X-STREAM-INF without a URI');
  if (!independent) problems.push('no EXT-X-INDEPENDENT-SEGMENTS');
  for (const v of variants) {
    if (!v.codecs) problems.push(`variant ${short(v.uri)} without CODECS`);
    if (v.audio && !renditions.some((r) => r.type === 'AUDIO' && r.group === v.audio)) problems.push(`AUDIO="${v.audio}" names no EXT-X-MEDIA group`);
    if (v.resolution && !v.frameRate) problems.push(`video variant ${short(v.uri)} without FRAME-RATE`);
  }
  return { problems, variants, renditions };
}

export interface HlsReport extends Report {
  master: ReturnType<typeof checkHlsMaster>;
  playlists: Map<string, MediaPlaylistInfo>;
}

/**
 * Fetches a master playlist and everything it names (media playlists, their init
 * segments, and their media segments when `segments` is not false) and checks the
 * presentation as a whole.
 */
export async function validateHls(masterUrl: string, options: { fetch?: Fetcher; segments?: boolean } = {}): Promise<HlsReport> {
  const get = options.fetch ?? defaultFetch;
  const notes: string[] = [];
  const problems: string[] = [];
  const masterRes = await get(masterUrl);
  if (masterRes.status !== 200) return { problems: [`master: HTTP ${masterRes.status}`], notes, master: { problems: [], variants: [], renditions: [] }, playlists: new Map() };
  const master = checkHlsMaster(masterRes.body.toString('utf8'));
  problems.push(...master.problems.map((p) => `master: ${p}`));
  const playlists = new Map<string, MediaPlaylistInfo>();
  const peaks = new Map<string, number>();
  const uris = new Set([...master.variants.map((v) => v.uri), ...master.renditions.map((r) => r.uri).filter((u): u is string => !!u)]);
  for (const uri of uris) {
    const url = new URL(uri, masterUrl).href;
    const res = await get(url);
    if (res.status !== 200) { problems.push(`${short(uri)}: HTTP ${res.status} (the master names a playlist that does not exist)`); continue; }
    const checked = checkHlsMedia(res.body.toString('utf8'));
    problems.push(...checked.problems.map((p) => `${short(uri)}: ${p}`));
    if (!checked.playlist) continue;
    playlists.set(uri, checked.playlist);
    const inits = [...new Set(checked.playlist.segments.map((s) => s.map).filter((m): m is string => !!m))];
    for (const init of inits) {
      const r = await get(new URL(init, url).href);
      if (r.status !== 200 || !r.body.length) problems.push(`${short(init)}: HTTP ${r.status}, ${r.body.length} bytes`);
    }
    if (options.segments !== false) {
      let peak = 0;
      for (const s of checked.playlist.segments) {
        const r = await get(new URL(s.uri, url).href);
        if (r.status !== 200) { problems.push(`${short(s.uri)}: HTTP ${r.status}`); continue; }
        peak = Math.max(peak, (r.body.length * 8) / s.duration);
      }
      peaks.set(uri, peak);
    }
  }
  const targets = new Set([...playlists.values()].map((p) => p.targetDuration));
  if (targets.size > 1) problems.push(`renditions' target durations differ: ${[...playlists].map(([u, p]) => `${short(u)} ${p.targetDuration}`).join(', ')} (RFC 8216 §6.2.4)`);
  for (const v of master.variants) {
    const audioUri = master.renditions.find((r) => r.type === 'AUDIO' && r.group === v.audio)?.uri;
    const measured = (peaks.get(v.uri) ?? 0) + (audioUri ? peaks.get(audioUri) ?? 0 : 0);
    if (options.segments !== false && v.bandwidth < measured) problems.push(`BANDWIDTH ${v.bandwidth} below the measured peak ${Math.round(measured)} (${short(v.uri)})`);
    const media: { init: string; segment?: string }[] = [];
    for (const uri of [v.uri, audioUri]) {
      const p = uri ? playlists.get(uri) : undefined;
      const last = p?.segments[p.segments.length - 1];
      const base = uri && new URL(uri, masterUrl);
      if (base && last?.map) media.push({ init: new URL(last.map, base).href, segment: new URL(last.uri, base).href });
    }
    if (v.codecs) problems.push(...(await checkCodecs(v.codecs, media, get)).map((p) => `${short(v.uri)}: ${p}`));
  }
  return { problems, notes, master, playlists };
}

/** Reloads of one media playlist: the target duration never changes, sequences never go back (RFC 8216 §6.2.1, §6.2.2). */
export class PlaylistHistory {
  private last: MediaPlaylistInfo | undefined;
  readonly problems: string[] = [];

  add(playlist: MediaPlaylistInfo): void {
    const before = this.last;
    this.last = playlist;
    if (!before) return;
    if (playlist.targetDuration !== before.targetDuration) this.problems.push(`EXT-X-TARGETDURATION changed from ${before.targetDuration} to ${playlist.targetDuration}`);
    if (playlist.mediaSequence < before.mediaSequence) this.problems.push(`EXT-X-MEDIA-SEQUENCE went back from ${before.mediaSequence} to ${playlist.mediaSequence}`);
    if (playlist.discontinuitySequence < before.discontinuitySequence) this.problems.push('EXT-X-DISCONTINUITY-SEQUENCE went back');
    for (const s of playlist.segments) {
      const old = before.segments.find((o) => o.sequence === s.sequence);
      if (old && old.uri.split('?')[0] !== s.uri.split('?')[0]) this.problems.push(`segment ${s.sequence} changed from ${short(old.uri)} to ${short(s.uri)}`);
    }
  }
}

/* ----------------------------------------------------------------- CODECS */

/** What an init segment (with a media segment after it: ffprobe 4.1 reads the profile from a sample) holds: codecs with profile and level. */
async function probeInit(data: Buffer): Promise<{ codec: string; profile?: string; level?: number }[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-validator-'));
  try {
    const file = path.join(dir, 'init.mp4');
    await writeFile(file, data);
    const out = await new Promise<string>((resolve, reject) => execFile(FFPROBE, ['-v', 'error', '-show_streams', '-of', 'json', file], (err, stdout) => (err ? reject(err) : resolve(stdout))));
    return (JSON.parse(out).streams ?? []).map((s: any) => ({ codec: s.codec_name, profile: s.profile, level: s.level }));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const HEVC_PROFILES: Record<number, string[]> = { 1: ['Main'], 2: ['Main 10'], 3: ['Main Still Picture'], 4: ['Rext'] };
const H264_PROFILES: Record<number, string[]> = { 66: ['Baseline', 'Constrained Baseline'], 77: ['Main'], 88: ['Extended'], 100: ['High'], 110: ['High 10'], 122: ['High 4:2:2'], 244: ['High 4:4:4 Predictive'] };

/** Every entry of CODECS matches a stream of the init segments (each with a media segment), and every stream is declared. */
export async function checkCodecs(codecs: string, media: { init: string; segment?: string }[], get: Fetcher = defaultFetch): Promise<string[]> {
  const problems: string[] = [];
  const streams: { codec: string; profile?: string; level?: number }[] = [];
  for (const { init, segment } of media) {
    const parts = await Promise.all([init, segment].filter((u): u is string => !!u).map((u) => get(u)));
    const failed = parts.find((r) => r.status !== 200);
    if (failed) { problems.push(`init ${short(init)}: HTTP ${failed.status}`); continue; }
    streams.push(...(await probeInit(Buffer.concat(parts.map((r) => r.body)))));
  }
  const declared = codecs.split(',').map((c) => c.trim());
  for (const c of declared) {
    const avc = /^avc[13]\.([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(c);
    const aac = /^mp4a\.40\.(\d+)$/.exec(c);
    const hevc = /^(?:hvc1|hev1)\.[ABC]?(\d+)\.[0-9A-F]+\.[LH](\d+)(?:\.[0-9A-F]{1,2})*$/i.exec(c);
    if (avc) {
      const s = streams.find((x) => x.codec === 'h264');
      const profile = parseInt(avc[1], 16);
      const level = parseInt(avc[3], 16);
      if (!s) problems.push(`CODECS ${c} but no H.264 stream in the init segments`);
      else if (!(H264_PROFILES[profile] ?? []).includes(s.profile ?? '')) problems.push(`CODECS ${c} says profile ${profile}, the init segment ${s.profile}`);
      else if (s.level !== level) problems.push(`CODECS ${c} says level ${level}, the init segment ${s.level}`);
    } else if (aac) {
      const s = streams.find((x) => x.codec === 'aac');
      const expected = s?.profile === 'HE-AAC' ? '5' : s?.profile === 'HE-AACv2' ? '29' : '2';
      if (!s) problems.push(`CODECS ${c} but no AAC stream in the init segments`);
      else if (aac[1] !== expected) problems.push(`CODECS ${c} but the init segment's AAC is ${s.profile}`);
    } else if (hevc) {
      // hvc1.<space><profile>.<compat>.<tier><level>[.constraints]; ffprobe's level is general_level_idc.
      const s = streams.find((x) => x.codec === 'hevc');
      const profile = Number(hevc[1]);
      if (!s) problems.push(`CODECS ${c} but no HEVC stream in the init segments`);
      else if (!(HEVC_PROFILES[profile] ?? []).includes(s.profile ?? '')) problems.push(`CODECS ${c} says profile ${profile}, the init segment ${s.profile}`);
      else if (s.level !== Number(hevc[2])) problems.push(`CODECS ${c} says level ${hevc[2]}, the init segment ${s.level}`);
    } else {
      problems.push(`CODECS entry ${c} not checked (unknown form)`);
    }
  }
  for (const s of streams) {
    const prefix = s.codec === 'h264' ? /^avc[13]\./ : s.codec === 'aac' ? /^mp4a\./ : s.codec === 'hevc' ? /^(hvc1|hev1)\./ : undefined;
    if (prefix && !declared.some((c) => prefix.test(c))) problems.push(`the init segments hold ${s.codec}, which CODECS does not declare`);
  }
  return problems;
}

/* ----------------------------------------------------------------- DASH */

interface XmlNode { name: string; attrs: Record<string, string>; children: XmlNode[] }

function parseXml(text: string): XmlNode {
  const parser = new SaxesParser({ xmlns: false });
  const root: XmlNode = { name: '#document', attrs: {}, children: [] };
  const stack = [root];
  parser.on('opentag', (tag) => {
    const node: XmlNode = { name: tag.name, attrs: Object.fromEntries(Object.entries(tag.attributes).map(([k, v]) => [k, String(v)])), children: [] };
    stack[stack.length - 1].children.push(node);
    if (!tag.isSelfClosing) stack.push(node);
  });
  parser.on('closetag', (tag) => { if (!tag.isSelfClosing) stack.pop(); });
  parser.write(text).close();
  return root.children[0];
}

const kids = (n: XmlNode, name: string) => n.children.filter((c) => c.name === name);

/** xs:duration as ffmpeg and Antenna write it (PT…H…M…S), in seconds. */
export function durationSeconds(value: string | undefined): number | undefined {
  const m = value === undefined ? null : /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?)?$/.exec(value);
  if (!m) return undefined;
  return Number(m[1] ?? 0) * 86400 + Number(m[2] ?? 0) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
}

export interface MpdRepresentation { id: string; bandwidth: number; codecs: string; mimeType: string; timescale: number; init: string; media: string; segments: { number: number; t: number; d: number }[] }

/** The rules of one MPD: required attributes, SegmentTimeline sanity, what GStreamer needs to recognise it. */
export function checkMpd(text: string): { problems: string[]; type?: string; representations: MpdRepresentation[] } {
  const problems: string[] = [];
  const representations: MpdRepresentation[] = [];
  let mpd: XmlNode;
  try {
    mpd = parseXml(text);
  } catch (err) {
    return { problems: [`not well-formed XML: ${(err as Error).message}`], representations };
  }
  if (mpd?.name !== 'MPD') return { problems: ['the root element is not MPD'], representations };
  const a = mpd.attrs;
  if (a.xmlns !== 'urn:mpeg:dash:schema:mpd:2011') problems.push(`xmlns ${a.xmlns} (GStreamer recognises urn:mpeg:dash:schema:mpd:2011)`);
  if (/urn:mpeg:DASH:schema:MPD:2011/.test(a['xsi:schemaLocation'] ?? '')) problems.push('xsi:schemaLocation names the wrong-case namespace (GStreamer then sniffs plain XML)');
  for (const required of ['profiles', 'minBufferTime']) if (!a[required]) problems.push(`MPD@${required} missing`);
  const type = a.type ?? 'static';
  const positive = (name: string) => {
    if (a[name] === undefined) return;
    const s = durationSeconds(a[name]);
    if (!(s! > 0)) problems.push(`MPD@${name} ${a[name]} is not a positive duration`);
  };
  if (type === 'dynamic') {
    for (const required of ['availabilityStartTime', 'publishTime']) if (!a[required] || Number.isNaN(Date.parse(a[required]))) problems.push(`dynamic MPD@${required} missing or not a date`);
    ['minimumUpdatePeriod', 'timeShiftBufferDepth', 'suggestedPresentationDelay'].forEach(positive);
  } else if (!durationSeconds(a.mediaPresentationDuration)) {
    problems.push('static MPD without mediaPresentationDuration');
  }
  positive('minBufferTime');
  const periods = kids(mpd, 'Period');
  if (!periods.length) problems.push('no Period');
  if (type === 'dynamic' && periods.length) {
    // A player starting suggestedPresentationDelay behind the clock must find a Period there: GStreamer 1.22's
    // dashdemux fails with "Invalid manifest" ("Unable to find live period active at …") otherwise.
    const at = (Date.parse(a.publishTime!) - Date.parse(a.availabilityStartTime!)) / 1000 - (durationSeconds(a.suggestedPresentationDelay) ?? 0);
    const first = durationSeconds(periods[0]!.attrs.start) ?? 0;
    if (at < first) problems.push(`publishTime − suggestedPresentationDelay is ${at.toFixed(3)} s into the presentation, before its first Period (${first.toFixed(3)} s)`);
  }
  let lastStart = -1;
  for (const period of periods) {
    const start = durationSeconds(period.attrs.start);
    if (type === 'dynamic' && start === undefined) problems.push(`Period ${period.attrs.id}: no start in a dynamic MPD`);
    if (start !== undefined && start < lastStart) problems.push(`Period ${period.attrs.id} starts before the previous one`);
    lastStart = start ?? lastStart;
    if (!period.attrs.id) problems.push('a Period without id');
    for (const set of kids(period, 'AdaptationSet')) {
      for (const rep of kids(set, 'Representation')) {
        const where = `Period ${period.attrs.id} Representation ${rep.attrs.id}`;
        if (!rep.attrs.id) problems.push(`${where}: no id`);
        const bandwidth = Number(rep.attrs.bandwidth);
        if (!(bandwidth > 0)) problems.push(`${where}: no bandwidth`);
        const mimeType = rep.attrs.mimeType ?? set.attrs.mimeType;
        if (!mimeType) problems.push(`${where}: no mimeType`);
        const codecs = rep.attrs.codecs ?? set.attrs.codecs;
        if (!codecs) problems.push(`${where}: no codecs`);
        const template = kids(rep, 'SegmentTemplate')[0] ?? kids(set, 'SegmentTemplate')[0];
        if (!template) { problems.push(`${where}: no SegmentTemplate`); continue; }
        const ta = template.attrs;
        for (const required of ['media', 'initialization', 'timescale']) if (!ta[required]) problems.push(`${where}: SegmentTemplate@${required} missing`);
        const timeline = kids(template, 'SegmentTimeline')[0];
        const segments: MpdRepresentation['segments'] = [];
        let number = Number(ta.startNumber ?? 1);
        let t = 0;
        for (const s of timeline ? kids(timeline, 'S') : []) {
          const d = Number(s.attrs.d);
          if (!(d > 0)) problems.push(`${where}: S@d ${s.attrs.d}`);
          if (s.attrs.t !== undefined) {
            const next = Number(s.attrs.t);
            if (segments.length && next < t) problems.push(`${where}: S@t ${next} overlaps the previous segment (ends ${t})`);
            t = next;
          }
          for (let i = 0; i <= Number(s.attrs.r ?? 0); i++) {
            segments.push({ number: number++, t, d });
            t += d;
          }
        }
        if (!segments.length) problems.push(`${where}: empty SegmentTimeline`);
        const pto = Number(ta.presentationTimeOffset ?? 0);
        if (segments.length && segments[0].t < pto && type === 'static') problems.push(`${where}: first segment before presentationTimeOffset`);
        representations.push({ id: rep.attrs.id, bandwidth, codecs: codecs ?? '', mimeType: mimeType ?? '', timescale: Number(ta.timescale ?? 1), init: ta.initialization ?? '', media: ta.media ?? '', segments });
      }
    }
  }
  return { problems, type, representations };
}

/** A SegmentTemplate URL for one representation and number. */
export function templateUrl(template: string, repId: string, number?: number): string {
  return template
    .replace(/\$RepresentationID\$/g, repId)
    .replace(/\$Number(?:%0(\d+)d)?\$/g, (_, width: string | undefined) => String(number ?? 0).padStart(width ? Number(width) : 0, '0'));
}

/** xmllint is installed and ANTENNA_DASH_XSD names a DASH-MPD.xsd: the schema check runs. */
function schemaAtHand(): string | undefined {
  const xsd = process.env.ANTENNA_DASH_XSD;
  if (!xsd || !existsSync(xsd)) return undefined;
  try {
    execFileSync('xmllint', ['--version'], { stdio: 'ignore' });
    return xsd;
  } catch {
    return undefined;
  }
}

export async function checkMpdSchema(text: string): Promise<Report> {
  const xsd = schemaAtHand();
  if (!xsd) return { problems: [], notes: ['DASH schema skipped: set ANTENNA_DASH_XSD to a DASH-MPD.xsd and install xmllint to check it'] };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-validator-'));
  try {
    const file = path.join(dir, 'manifest.mpd');
    await writeFile(file, text);
    const result = await new Promise<{ ok: boolean; out: string }>((resolve) => execFile('xmllint', ['--noout', '--schema', xsd, file], (err, _o, stderr) => resolve({ ok: !err, out: stderr })));
    return { problems: result.ok ? [] : [`XSD: ${result.out.trim().split('\n').slice(0, 5).join(' | ')}`], notes: [`DASH schema checked with ${path.basename(xsd)}`] };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Fetches an MPD and its segments and checks it: the document, the schema, init segments, bandwidth against the measured peak, codecs. */
export async function validateDash(mpdUrl: string, options: { fetch?: Fetcher; segments?: boolean } = {}): Promise<Report & { type?: string }> {
  const get = options.fetch ?? defaultFetch;
  const res = await get(mpdUrl);
  if (res.status !== 200) return { problems: [`MPD: HTTP ${res.status}`], notes: [] };
  const text = res.body.toString('utf8');
  const checked = checkMpd(text);
  const schema = await checkMpdSchema(text);
  const problems = [...checked.problems, ...schema.problems];
  for (const rep of checked.representations) {
    const init = new URL(templateUrl(rep.init, rep.id), mpdUrl).href;
    const segment = rep.segments.length ? new URL(templateUrl(rep.media, rep.id, rep.segments[rep.segments.length - 1].number), mpdUrl).href : undefined;
    problems.push(...(await checkCodecs(rep.codecs, [{ init, segment }], get)).map((p) => `Representation ${rep.id}: ${p}`));
    if (options.segments === false) continue;
    let peak = 0;
    for (const s of rep.segments) {
      const r = await get(new URL(templateUrl(rep.media, rep.id, s.number), mpdUrl).href);
      if (r.status !== 200) { problems.push(`Representation ${rep.id} segment ${s.number}: HTTP ${r.status}`); continue; }
      peak = Math.max(peak, (r.body.length * 8 * rep.timescale) / s.d);
    }
    if (rep.bandwidth < peak) problems.push(`Representation ${rep.id}: bandwidth ${rep.bandwidth} below the measured peak ${Math.round(peak)}`);
  }
  return { problems, notes: schema.notes, type: checked.type };
}

const short = (uri: string) => uri.split('?')[0];
