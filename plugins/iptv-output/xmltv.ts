/**
 * The guide as an XMLTV document, written as it is read: a few channels'
 * programmes at a time, so the whole guide is never in memory. Elements follow
 * the XMLTV DTD's order (channel: display-name, icon; programme: title,
 * sub-title, desc, category, icon, every episode-num, previously-shown,
 * premiere, new).
 */
import type { LiveChannelListing, LiveGuideProgramme, LiveTvAccess } from 'antenna/sdk';

/** Channels whose programmes are read with one query and sent as one piece (14 days of 10 channels: ~1.5 MB). */
const BATCH = 10;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
// XML 1.0 allows no C0 control character but tab, LF and CR: a guide that had one loses it.
// eslint-disable-next-line no-control-regex
const esc = (s: string) => s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** `YYYYMMDDhhmmss +0000`. */
export function xmltvTime(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:T]/g, '').slice(0, 14) + ' +0000';
}

/** The system of an episode number as the guide store keeps it (one per programme: onscreen, else xmltv_ns). */
const XMLTV_NS = /^\s*\d*\s*(\/\s*\d+\s*)?\.\s*\d*\s*(\/\s*\d+\s*)?\.\s*\d*\s*(\/\s*\d+\s*)?$/;

function programme(p: LiveGuideProgramme, channelId: string): string {
  let out = `<programme start="${xmltvTime(p.start)}" stop="${xmltvTime(p.stop)}" channel="${esc(channelId)}">`;
  out += `<title>${esc(p.title)}</title>`;
  if (p.subTitle) out += `<sub-title>${esc(p.subTitle)}</sub-title>`;
  if (p.description) out += `<desc>${esc(p.description)}</desc>`;
  for (const c of p.categories ?? []) out += `<category>${esc(c)}</category>`;
  if (p.icon) out += `<icon src="${esc(p.icon)}"/>`;
  if (p.episodeNums?.length) for (const e of p.episodeNums) out += `<episode-num system="${esc(e.system)}">${esc(e.value)}</episode-num>`;
  else if (p.episodeNum) out += `<episode-num system="${XMLTV_NS.test(p.episodeNum) ? 'xmltv_ns' : 'onscreen'}">${esc(p.episodeNum)}</episode-num>`;
  if (p.previouslyShown) out += p.previouslyShown.start === undefined ? '<previously-shown/>' : `<previously-shown start="${xmltvTime(p.previouslyShown.start)}"/>`;
  if (p.premiere) out += '<premiere/>';
  if (p.isNew) out += '<new/>';
  return out + '</programme>\n';
}

/** Each channel's XMLTV id (the M3U's tvg-id): its tvg-id when no other channel has it, else one made of its Antenna id. */
export function xmltvIds(channels: readonly LiveChannelListing[]): Map<number, string> {
  const count = new Map<string, number>();
  for (const c of channels) if (c.tvgId) count.set(c.tvgId, (count.get(c.tvgId) ?? 0) + 1);
  return new Map(channels.map((c) => [c.id, c.tvgId && count.get(c.tvgId) === 1 ? c.tvgId : `${c.id}.antenna`]));
}

/** The document in pieces: the head and channels, then each batch of channels' programmes. */
export async function* xmltvDocument(live: LiveTvAccess, channels: readonly LiveChannelListing[], from: number, to: number): AsyncGenerator<string> {
  const ids = xmltvIds(channels);
  let head = '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE tv SYSTEM "xmltv.dtd">\n<tv generator-info-name="Antenna">\n';
  for (const c of channels) {
    head += `<channel id="${esc(ids.get(c.id)!)}"><display-name>${esc(c.name)}</display-name><display-name>${esc(c.number)}</display-name>`;
    if (c.logo) head += `<icon src="${esc(c.logo)}"/>`;
    head += '</channel>\n';
  }
  yield head;
  for (let i = 0; i < channels.length; i += BATCH) {
    const batch = channels.slice(i, i + BATCH);
    const guide = await live.guide(batch.map((c) => c.id), from, to);
    let text = '';
    for (const c of batch) for (const p of guide.get(c.id) ?? []) text += programme(p, ids.get(c.id)!);
    if (text) yield text;
  }
  yield '</tv>\n';
}
