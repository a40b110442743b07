/**
 * A small, strict WebVTT reader for the tests (independent of the plugin's
 * writer): cues with ms timings and their text as a viewer sees it (tags
 * removed, entities decoded). Throws on what browsers would reject or misread.
 */
export interface ReadCue { start: number; end: number; text: string; raw: string }

const TIME = /^(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})$/;
const ms = (s: string): number => {
  const m = TIME.exec(s);
  if (!m) throw new Error(`bad WebVTT timestamp ${JSON.stringify(s)}`);
  return ((Number(m[1] ?? 0) * 60 + Number(m[2])) * 60 + Number(m[3])) * 1000 + Number(m[4]);
};

export function plainText(cueText: string): string {
  if (/<(?!\/?(?:i|b|u|c|v|ruby|rt|lang)\b)[^>]*>/.test(cueText)) throw new Error(`unknown tag or bare < in cue text ${JSON.stringify(cueText)}`);
  if (/&(?!amp;|lt;|gt;|nbsp;|lrm;|rlm;)/.test(cueText)) throw new Error(`bare & in cue text ${JSON.stringify(cueText)}`);
  return cueText.replace(/<[^>]*>/g, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&nbsp;/g, '\u00a0').replace(/&amp;/g, '&');
}

export function parseVtt(vtt: string): ReadCue[] {
  if (!/^WEBVTT(?:[ \t][^\n]*)?\n/.test(vtt)) throw new Error('no WEBVTT header');
  if (vtt.includes('\r')) throw new Error('CR in WebVTT');
  const blocks = vtt.split(/\n{2,}/).slice(1).filter((b) => b.trim());
  const cues: ReadCue[] = [];
  for (const block of blocks) {
    const lines = block.replace(/\n+$/, '').split('\n');
    const at = lines.findIndex((l) => l.includes('-->'));
    if (at < 0) continue; // STYLE, NOTE, REGION
    const [from, rest] = lines[at]!.split(/\s+-->\s+/);
    const start = ms(from!.trim());
    const end = ms(rest!.trim().split(/\s+/)[0]!);
    if (!(end > start)) throw new Error(`cue ends before it starts: ${lines[at]}`);
    const raw = lines.slice(at + 1).join('\n');
    if (!raw) throw new Error(`empty cue at ${lines[at]}`);
    if (raw.includes('-->')) throw new Error(`arrow inside cue text at ${lines[at]}`);
    if (cues.length && start < cues[cues.length - 1]!.start) throw new Error(`cues out of order at ${lines[at]}`);
    cues.push({ start, end, text: plainText(raw), raw });
  }
  return cues;
}
