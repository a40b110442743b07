/**
 * The rows a guide import leaves in the database: a new import replaces every
 * programme and guide channel of the one before (deleted a few channels at a
 * time), and what an import stopped midway wrote is deleted at the next start.
 */
import t from 'tap';
import { m3u, refresh, startHost, tempDir, write, xmltv, xt, type GuideChannelDef, type GuideProgrammeDef } from './fixtures.js';
import type { TestHost } from '../../../sdk/testing.js';

const SOURCE = 'xmltv:Guide';
const day = Date.parse('2030-01-01T00:00:00Z');

/** A guide of `channels` channels (more than one delete statement's worth), `perChannel` programmes each. */
function guideOf(channels: number, perChannel: number, title: string): string {
  const defs: GuideChannelDef[] = [];
  const programmes: GuideProgrammeDef[] = [];
  for (let c = 0; c < channels; c++) {
    defs.push({ id: `ch${c}.example`, names: [`Channel ${c}`] });
    for (let k = 0; k < perChannel; k++) {
      programmes.push({ channel: `ch${c}.example`, start: xt(new Date(day + k * 3_600_000).toISOString()), stop: xt(new Date(day + (k + 1) * 3_600_000).toISOString()), title: `${title} ${k}` });
    }
  }
  return xmltv(defs, programmes);
}

async function rowsByGeneration(host: TestHost, table: string): Promise<Record<number, number>> {
  const rows = await host.host.knex(table).where({ source_id: SOURCE }).groupBy('generation').select('generation').count({ n: '*' }) as { generation: number; n: number }[];
  return Object.fromEntries(rows.map((r) => [Number(r.generation), Number(r.n)]));
}

async function titles(host: TestHost): Promise<Set<string>> {
  return new Set((await host.host.knex('livetv_programs').where({ source_id: SOURCE }).distinct('title')).map((r) => String(r.title).split(' ')[0]));
}

t.test('an import replaces every programme and guide channel of the one before', async (t) => {
  const dir = await tempDir(t);
  const playlist = await write(dir, 'tv.m3u', m3u([{ name: 'Channel 1', tvgId: 'ch1.example', url: 'http://streams.invalid/1' }]));
  const guideFile = await write(dir, 'guide.xml', guideOf(250, 3, 'First'));
  const host = await startHost(t, { playlists: [{ name: 'IPTV', url: playlist }], guides: [{ url: guideFile, name: 'Guide' }] });
  t.strictSame(await rowsByGeneration(host, 'livetv_programs'), { 1: 750 });
  t.strictSame(await rowsByGeneration(host, 'livetv_guide_channels'), { 1: 250 });

  // Fewer channels, other programmes: nothing of the first import stays.
  await write(dir, 'guide.xml', guideOf(240, 2, 'Second'));
  await refresh(host);
  t.strictSame(await rowsByGeneration(host, 'livetv_programs'), { 2: 480 }, 'only the new programmes');
  t.strictSame(await rowsByGeneration(host, 'livetv_guide_channels'), { 2: 240 }, 'only the new guide channels');
  t.strictSame(await titles(host), new Set(['Second']));
});

t.test('what an import stopped midway wrote is deleted at the next start, the current guide kept', async (t) => {
  const dir = await tempDir(t);
  const dataDir = await tempDir(t, 'antenna-data-');
  const playlist = await write(dir, 'tv.m3u', m3u([{ name: 'Channel 1', tvgId: 'ch1.example', url: 'http://streams.invalid/1' }]));
  const guideFile = await write(dir, 'guide.xml', guideOf(150, 2, 'Kept'));
  const first = await startHost(t, { dataDir, playlists: [{ name: 'IPTV', url: playlist }], guides: [{ url: guideFile, name: 'Guide' }] });
  // As an import of generation 2 stopped midway leaves it: programmes, some of their guide
  // channels (stored last, so maybe none), and generation 3's first rows.
  const leftover = (generation: number, c: number, k: number) => ({
    id: generation * 1e6 + c * 100 + k, source_id: SOURCE, generation, guide_id: `ch${c}.example`, start: day + k * 3_600_000, stop: day + (k + 1) * 3_600_000, title: `Leftover ${k}`,
  });
  const rows = [];
  for (let c = 0; c < 150; c++) for (let k = 0; k < 2; k++) rows.push(leftover(2, c, k));
  rows.push(leftover(3, 7, 0));
  for (let i = 0; i < rows.length; i += 100) await first.host.knex('livetv_programs').insert(rows.slice(i, i + 100));
  await first.host.knex('livetv_guide_channels').insert({ source_id: SOURCE, generation: 2, guide_id: 'ch3.example', names: '["Channel 3"]' });
  t.strictSame(await rowsByGeneration(first, 'livetv_programs'), { 1: 300, 2: 300, 3: 1 });
  await first.close();

  const second = await startHost(t, { dataDir, playlists: [{ name: 'IPTV', url: playlist }], guides: [{ url: guideFile, name: 'Guide' }], liveTv: { initialImport: 'skip' } });
  t.strictSame(await rowsByGeneration(second, 'livetv_programs'), { 1: 300 }, 'the unfinished generations gone');
  t.strictSame(await rowsByGeneration(second, 'livetv_guide_channels'), { 1: 150 });
  t.strictSame(await titles(second), new Set(['Kept']));
});
