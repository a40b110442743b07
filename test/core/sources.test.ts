/**
 * The `sources` core service: a playlist or guide read as chunks (gunzipped by
 * content), with the failures it reports.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { openSource, SourceReaderImpl, streamSource } from '../../core/sources.js';

async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

t.test('streamSource', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-source-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // Several read chunks (256 KB each), with multi-byte characters across their edges.
  const text = '#EXTM3U\n' + Array.from({ length: 20_000 }, (_, i) => `#EXTINF:-1,Канал ${i} 📺\nhttp://s/${i}\n`).join('');
  await writeFile(path.join(dir, 'plain.m3u'), text);
  await writeFile(path.join(dir, 'zipped.m3u'), gzipSync(text)); // gzip told by content, not by name
  const gz = gzipSync(text);
  await writeFile(path.join(dir, 'truncated.m3u.gz'), gz.subarray(0, gz.length - 100));
  await writeFile(path.join(dir, 'tiny'), 'x');

  for (const name of ['plain.m3u', 'zipped.m3u']) {
    const source = await streamSource(name, { baseDir: dir });
    t.equal(source.url, `file://${path.join(dir, name)}`);
    t.equal(source.size, (await import('node:fs')).statSync(path.join(dir, name)).size, `${name}: size as stored`);
    t.equal((await collect(source.chunks)).toString('utf8'), text, `${name}: the bytes, decompressed`);
    t.equal((await collect((await new SourceReaderImpl(dir).open(name)).chunks)).toString('utf8'), text, `${name}: through the service, relative to its directory`);
  }
  t.equal((await collect((await streamSource('tiny', { baseDir: dir })).chunks)).toString(), 'x', 'a one-byte file');

  await t.rejects(collect((await streamSource('truncated.m3u.gz', { baseDir: dir })).chunks), { statusCode: 502, message: /truncated\.m3u\.gz is not valid gzip/ }, 'a truncated gzip: 502');
  await t.rejects(collect((await streamSource('plain.m3u', { baseDir: dir, maxBytes: 100_000 })).chunks), { statusCode: 413, message: /larger than 100000 bytes/ }, 'past maxBytes: 413');
  await t.rejects(collect((await streamSource('zipped.m3u', { baseDir: dir, maxBytes: 100_000 })).chunks), { statusCode: 413, message: /larger than 100000 bytes/ }, 'maxBytes counts the decompressed bytes');
  await t.rejects(streamSource('missing.m3u', { baseDir: dir }), { statusCode: 502, message: /ENOENT/ }, 'a missing file: 502 at once');

  const controller = new AbortController();
  const aborted = await streamSource('plain.m3u', { baseDir: dir, signal: controller.signal });
  const iterator = aborted.chunks[Symbol.asyncIterator]();
  await iterator.next();
  controller.abort(new Error('stopped'));
  await t.rejects(collect({ [Symbol.asyncIterator]: () => iterator }), { message: 'stopped' }, 'an abort ends the reading with the signal\'s reason');
});

t.test('an http(s) source: the timeout is for a server that stops answering, not for a long download', async (t) => {
  const line = '#EXTINF:-1,Channel\nhttp://streams.invalid/1\n';
  const server = http.createServer((req, res) => {
    if (req.url === '/silent') return; // never answers
    if (req.url === '/private.m3u') {
      const ok = req.headers.authorization === `Basic ${Buffer.from('tv user:p@ss:word').toString('base64')}`;
      res.writeHead(ok ? 200 : 401).end(ok ? line : 'who are you');
      return;
    }
    res.writeHead(200, { 'content-type': 'audio/x-mpegurl' });
    if (req.url === '/trickle') { // 1.5 s in all, a line every 100 ms
      let n = 0;
      const timer = setInterval(() => { res.write(line); if (++n === 15) { clearInterval(timer); res.end(); } }, 100);
      req.on('close', () => clearInterval(timer));
    } else if (req.url === '/stalls') {
      res.write(line.repeat(100)); // then nothing, connection open
    } else {
      res.end(line.repeat(50_000)); // 2 MB at once
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const port = (server.address() as AddressInfo).port;
  const authorized = await collect((await streamSource(`http://tv%20user:p%40ss:word@127.0.0.1:${port}/private.m3u`)).chunks);
  t.equal(authorized.toString(), line, 'user:password in the URL is sent as Basic authorization (fetch refuses such a URL)');
  await t.rejects(streamSource(`http://tv%20user:wrong@127.0.0.1:${port}/private.m3u`), { statusCode: 502, message: /HTTP 401/ }, 'wrong credentials: 502 naming the status');
  const closed = await new Promise<number>((resolve) => { const s = http.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as AddressInfo).port; s.close(() => resolve(p)); }); });
  const refused = await streamSource(`http://tv:s3cret-pass@127.0.0.1:${closed}/x.m3u`).then(() => undefined, (err: Error) => err);
  t.match(refused?.message, /cannot fetch http:\/\/\*\*\*@127\.0\.0\.1/, 'a failure names the source');
  t.notMatch(refused?.message, /s3cret-pass/, 'without its password');

  const trickled = await collect((await streamSource(`${base}/trickle`, { timeoutMs: 1000 })).chunks);
  t.equal(trickled.toString(), line.repeat(15), 'a download longer than the timeout, never quiet for that long, is read whole');

  await t.rejects(collect((await streamSource(`${base}/stalls`, { timeoutMs: 500 })).chunks), { statusCode: 502, message: /stalls failed: no data for 500 ms/ }, 'a server that goes quiet mid-body: 502');
  await t.rejects(streamSource(`${base}/silent`, { timeoutMs: 500 }), { statusCode: 502, message: /silent: no answer within 500 ms/ }, 'a server that never answers: 502');

  // The clock runs while waiting for the server, not while the reader is busy (a parser, the database behind it).
  const slow = await openSource(`${base}/all`, { timeoutMs: 300 });
  let bytes = 0;
  let pauses = 0;
  for await (const chunk of slow.stream) {
    bytes += (chunk as Buffer).length;
    if (pauses++ < 3) await sleep(600);
  }
  t.equal(bytes, line.length * 50_000, 'a reader pausing longer than the timeout still gets every byte');
});
