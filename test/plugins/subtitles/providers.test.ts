/**
 * Provider plugins that misbehave: a listing never waits longer than
 * listTimeout for one, a provider that throws is left out of the listing (and
 * its fetch answers 502), a track with an invalid id is dropped, and a second
 * provider with a taken id stops start-up.
 */
import t from 'tap';
import path from 'node:path';
import { expectError } from '../../helpers/http.js';
import { clip, tempDir, vodHost } from '../vod/fixtures.js';
import { parseVtt } from './vtt-reader.js';

const FIXTURE = path.join(__dirname, 'fixture-providers.js');

t.test('misbehaving providers never break a listing', async (t) => {
  const dir = await tempDir(t, 'antenna-subs-providers-');
  await clip(path.join(dir, 'movies', 'Plain (2022).mp4'), { seconds: 1, width: 320, height: 180, audio: 'none' });
  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }], {
    plugins: { subtitles: { listTimeout: '1s' }, [FIXTURE]: {} },
  });
  t.teardown(() => host.close());
  const get = (url: string) => host.inject({ method: 'GET', url, headers: host.authHeaders });
  const id = (await get('/library/1')).json().items[0].id as string;

  const list = await get(`/api/items/${id}/subtitle-tracks`);
  t.equal(list.statusCode, 200, 'the listing answers although one provider never does and one throws');
  t.strictSame(list.json().tracks, [{
    label: 'Plain commentary (Spanish, SDH, External)', language: 'es', url: `/api/items/${id}/subtitle/good/ok.1`,
    codec: 'webvtt', forced: false, default: false, external: true, hearing_impaired: true,
  }], 'only the good track (the one with an invalid id is dropped)');

  const good = await get(`/api/items/${id}/subtitle/good/ok.1`);
  t.equal(good.statusCode, 200);
  t.strictSame(parseVtt(good.body).map((c) => [c.start, c.end, c.text]), [[250, 1000, 'Hola']], 'through the SDK\'s toWebVtt');
  expectError(t, await get(`/api/items/${id}/subtitle/broken/0`), 502, /broken/, 'a provider whose fetch throws');
  expectError(t, await get(`/api/items/${id}/subtitle/good/nope`), 404, undefined, 'a track the provider does not have');
  expectError(t, await get(`/api/items/${id}/subtitle/silent/0`), 404);
});

t.test('a provider id can be registered once', async (t) => {
  await t.rejects(vodHost([], { plugins: { subtitles: {}, [FIXTURE]: { duplicate: true } } }), /subtitle provider embedded is already registered/);
});
