/**
 * sendFile against a bare Fastify app (the core's error handler, no auth):
 * every Range case, validators and conditional requests, HEAD, a file that
 * vanished or changed, and descriptors released when a client goes away.
 */
// The SDK re-exports tsyringe, which wants the metadata polyfill loaded first (as the host does).
import 'reflect-metadata';
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { stat, truncate, unlink, utimes, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { errorHandler } from '../../../core/http/errors.js';
import { contentTypeOf, parseRange, preconditions, READ_CHUNK_BYTES, sendFile, validators, type ServedFile } from '../../../plugins/vod/file-response.js';
import { expectError } from '../../helpers/http.js';
import { tempDir } from './fixtures.js';

/** A bare app serving whatever `current` points at, as the VOD routes do after their lookups. */
async function app(current: () => ServedFile, contentType = 'video/mp4'): Promise<FastifyInstance> {
  const a = Fastify();
  a.setErrorHandler(errorHandler);
  a.route({ method: ['GET', 'HEAD'], url: '/f', handler: (request, reply) => sendFile(request, reply, current(), contentType) });
  await a.ready();
  return a;
}

async function served(file: string): Promise<ServedFile> {
  const s = await stat(file);
  return { path: file, size: s.size, mtimeMs: s.mtimeMs };
}

t.test('parseRange', async (t) => {
  const size = 1000;
  t.same(parseRange(undefined, size), undefined, 'absent');
  t.same(parseRange('bytes=0-99', size), { start: 0, end: 99 }, 'first bytes');
  t.same(parseRange('bytes=100-199', size), { start: 100, end: 199 }, 'middle');
  t.same(parseRange('bytes=900-', size), { start: 900, end: 999 }, 'open-ended');
  t.same(parseRange('bytes=-100', size), { start: 900, end: 999 }, 'suffix');
  t.same(parseRange('bytes=-5000', size), { start: 0, end: 999 }, 'suffix longer than the file: all of it');
  t.same(parseRange('bytes=990-5000', size), { start: 990, end: 999 }, 'last byte past the end: clamped');
  t.same(parseRange('bytes=999-999', size), { start: 999, end: 999 }, 'the last byte');
  t.same(parseRange('BYTES = 5-6', size), { start: 5, end: 6 }, 'unit is case-insensitive, spaces allowed');
  t.same(parseRange('bytes=5-6,', size), { start: 5, end: 6 }, 'empty list elements are allowed');
  t.equal(parseRange('bytes=1000-', size), 'unsatisfiable', 'first byte at the end');
  t.equal(parseRange('bytes=5000-6000', size), 'unsatisfiable', 'past the end');
  t.equal(parseRange('bytes=-0', size), 'unsatisfiable', 'empty suffix');
  t.equal(parseRange('bytes=0-', 0), 'unsatisfiable', 'any range of an empty file');
  for (const bad of ['bytes=abc', 'bytes=5-1', 'items=0-1', 'bytes=', 'bytes=-', 'bytes=1-2-3', 'bytes=0x10-', 'bytes=1.5-2', 'bytes 0-1', '0-1']) {
    t.equal(parseRange(bad, size), undefined, `malformed ${JSON.stringify(bad)} is ignored`);
  }
  t.equal(parseRange('bytes=0-1,5-6', size), undefined, 'several ranges: ignored (the whole file)');
});

t.test('preconditions', async (t) => {
  const mtimeMs = Date.parse('2024-05-01T10:00:00.500Z');
  const { etag, lastModified } = validators(1234, mtimeMs);
  t.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/, 'a strong ETag');
  t.equal(lastModified, 'Wed, 01 May 2024 10:00:00 GMT');
  t.equal(validators(1235, mtimeMs).etag === etag, false, 'the size is part of the ETag');
  t.equal(validators(1234, mtimeMs + 1).etag === etag, false, 'so is the modification time');
  t.equal(preconditions({}, etag, mtimeMs), undefined, 'no conditions');
  t.equal(preconditions({ 'if-none-match': etag }, etag, mtimeMs), 304);
  t.equal(preconditions({ 'if-none-match': `"x", W/${etag}` }, etag, mtimeMs), 304, 'weak comparison, in a list');
  t.equal(preconditions({ 'if-none-match': '*' }, etag, mtimeMs), 304);
  t.equal(preconditions({ 'if-none-match': '"other"' }, etag, mtimeMs), undefined);
  t.equal(preconditions({ 'if-none-match': '"other"', 'if-modified-since': lastModified }, etag, mtimeMs), undefined, 'If-None-Match wins over If-Modified-Since');
  t.equal(preconditions({ 'if-modified-since': lastModified }, etag, mtimeMs), 304);
  t.equal(preconditions({ 'if-modified-since': 'Wed, 01 May 2024 09:59:59 GMT' }, etag, mtimeMs), undefined);
  t.equal(preconditions({ 'if-modified-since': 'yesterday' }, etag, mtimeMs), undefined, 'a bad date is ignored');
  t.equal(preconditions({ 'if-match': '"other"' }, etag, mtimeMs), 412);
  t.equal(preconditions({ 'if-match': `W/${etag}` }, etag, mtimeMs), 412, 'If-Match compares strongly');
  t.equal(preconditions({ 'if-match': etag }, etag, mtimeMs), undefined);
  t.equal(preconditions({ 'if-unmodified-since': 'Wed, 01 May 2024 09:00:00 GMT' }, etag, mtimeMs), 412);
});

t.test('contentTypeOf', async (t) => {
  t.equal(contentTypeOf('mp4'), 'video/mp4');
  t.equal(contentTypeOf('mkv'), 'video/x-matroska');
  t.equal(contentTypeOf('webm'), 'video/webm');
  t.equal(contentTypeOf('ts'), 'video/mp2t');
  t.equal(contentTypeOf('avi'), 'video/x-msvideo');
  t.equal(contentTypeOf('nonsense'), 'application/octet-stream');
});

t.test('serving a file', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'clip.mp4');
  // Several read chunks long and not a multiple of one, so ranges cross chunk boundaries.
  const data = randomBytes(READ_CHUNK_BYTES * 3 + 12_345);
  await writeFile(file, data);
  let current = await served(file);
  const a = await app(() => current);
  t.teardown(() => a.close());
  const size = data.length;
  const get = (headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') => a.inject({ method, url: '/f', headers });

  const whole = await get();
  t.equal(whole.statusCode, 200, 'no Range: 200');
  t.equal(whole.headers['content-type'], 'video/mp4');
  t.equal(whole.headers['accept-ranges'], 'bytes');
  t.equal(whole.headers['content-length'], String(size));
  t.notOk(whole.headers['content-range'], 'no Content-Range on a 200');
  t.ok(whole.rawPayload.equals(data), 'bytes equal to the file');
  const etag = String(whole.headers.etag);
  const lastModified = String(whole.headers['last-modified']);
  t.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/, 'a strong ETag');
  t.equal(lastModified, new Date(Math.floor(current.mtimeMs / 1000) * 1000).toUTCString(), 'Last-Modified is the file mtime');

  const cases: [string, string, number, number][] = [
    ['first bytes', 'bytes=0-99', 0, 99],
    ['middle, across a chunk boundary', `bytes=${READ_CHUNK_BYTES - 10}-${READ_CHUNK_BYTES * 2 + 10}`, READ_CHUNK_BYTES - 10, READ_CHUNK_BYTES * 2 + 10],
    ['open-ended', `bytes=${size - 5000}-`, size - 5000, size - 1],
    ['suffix', 'bytes=-777', size - 777, size - 1],
    ['suffix longer than the file', `bytes=-${size * 2}`, 0, size - 1],
    ['last byte past the end (clamped)', `bytes=${size - 10}-${size + 1000}`, size - 10, size - 1],
    ['a single byte', 'bytes=5-5', 5, 5],
  ];
  for (const [what, range, start, end] of cases) {
    const res = await get({ range });
    t.equal(res.statusCode, 206, `${what}: 206`);
    t.equal(res.headers['content-range'], `bytes ${start}-${end}/${size}`, `${what}: Content-Range`);
    t.equal(res.headers['content-length'], String(end - start + 1), `${what}: Content-Length`);
    t.equal(res.headers['content-type'], 'video/mp4', `${what}: Content-Type`);
    t.ok(res.rawPayload.equals(data.subarray(start, end + 1)), `${what}: the bytes of the file`);
  }

  for (const range of [`bytes=${size}-`, `bytes=${size + 1}-${size + 100}`, 'bytes=-0']) {
    const res = await get({ range });
    expectError(t, res, 416, /not satisfiable/, range);
    t.equal(res.headers['content-range'], `bytes */${size}`, `${range}: Content-Range names the size`);
  }

  for (const range of ['bytes=abc', 'bytes=9-1', 'lines=0-1', 'bytes=0-1,5-6']) {
    const res = await get({ range });
    t.equal(res.statusCode, 200, `${range}: ignored, 200`);
    t.equal(res.headers['content-length'], String(size), `${range}: the whole file`);
    t.ok(res.rawPayload.equals(data), `${range}: its bytes`);
  }

  const head = await get({}, 'HEAD');
  t.equal(head.statusCode, 200, 'HEAD: 200');
  t.equal(head.rawPayload.length, 0, 'HEAD: no body');
  for (const h of ['content-type', 'content-length', 'accept-ranges', 'etag', 'last-modified']) t.equal(head.headers[h], whole.headers[h], `HEAD: same ${h} as GET`);
  const headRange = await get({ range: 'bytes=10-19' }, 'HEAD');
  t.equal(headRange.statusCode, 206, 'HEAD with a Range: the same status as GET');
  t.equal(headRange.headers['content-range'], `bytes 10-19/${size}`);
  t.equal(headRange.headers['content-length'], '10');
  t.equal(headRange.rawPayload.length, 0, 'and no body');
  t.equal((await get({ range: `bytes=${size}-` }, 'HEAD')).statusCode, 416, 'HEAD past the end: 416');

  const notModified = await get({ 'if-none-match': etag });
  t.equal(notModified.statusCode, 304, 'If-None-Match with the ETag: 304');
  t.equal(notModified.rawPayload.length, 0, '304 has no body');
  t.equal(notModified.headers.etag, etag, '304 repeats the ETag');
  t.equal((await get({ 'if-none-match': '"stale"' })).statusCode, 200, 'If-None-Match with another tag: 200');
  t.equal((await get({ 'if-modified-since': lastModified })).statusCode, 304, 'If-Modified-Since the Last-Modified: 304');
  t.equal((await get({ 'if-modified-since': new Date(Date.parse(lastModified) - 3600_000).toUTCString() })).statusCode, 200, 'If-Modified-Since earlier: 200');
  expectError(t, await get({ 'if-match': '"stale"' }), 412, undefined, 'If-Match with another tag');

  const ifRange = async (value: string) => get({ range: 'bytes=0-9', 'if-range': value });
  t.equal((await ifRange(etag)).statusCode, 206, 'If-Range with the current ETag: the range');
  t.equal((await ifRange(lastModified)).statusCode, 206, 'If-Range with the current date: the range');
  for (const stale of ['"stale"', `W/${etag}`, 'Mon, 01 Jan 2001 00:00:00 GMT', 'garbage']) {
    const res = await ifRange(stale);
    t.equal(res.statusCode, 200, `If-Range ${stale}: stale, the whole file`);
    t.equal(res.headers['content-length'], String(size));
  }

  // What the scan saw no longer matches the disk: never serve other bytes than it described.
  const touched = new Date(current.mtimeMs + 60_000);
  await utimes(file, touched, touched);
  expectError(t, await get(), 404, /no longer where the library scan found it/, 'modified after the scan');
  current = await served(file);
  t.equal((await get()).statusCode, 200, 'served again once rescanned');
  await truncate(file, size - 1);
  await utimes(file, touched, touched);
  expectError(t, await get(), 404, undefined, 'another size after the scan');
  t.equal((await get({}, 'HEAD')).statusCode, 404, 'HEAD of a changed file: 404');
  await unlink(file);
  expectError(t, await get(), 404, /rescan/, 'deleted after the scan');
  current = { path: dir, size: 4096, mtimeMs: 0 };
  expectError(t, await get(), 404, undefined, 'a directory is never served');
  // A FIFO where the file was: answered at once (opening it must not wait for a writer), never read.
  execFileSync('mkfifo', [file]);
  current = { path: file, size: 0, mtimeMs: 0 };
  expectError(t, await get(), 404, undefined, 'a FIFO is never served');
});

t.test('an empty file', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'empty.mkv');
  await writeFile(file, '');
  const current = await served(file);
  const a = await app(() => current, 'video/x-matroska');
  t.teardown(() => a.close());
  const res = await a.inject({ method: 'GET', url: '/f' });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-length'], '0');
  t.equal(res.headers['content-type'], 'video/x-matroska');
  expectError(t, await a.inject({ method: 'GET', url: '/f', headers: { range: 'bytes=0-' } }), 416);
});

const openFds = () => readdirSync('/proc/self/fd').length;

t.test('clients that go away mid-file do not leak descriptors', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'big.mkv');
  // Sparse: 512 MiB that take no disk, far more than socket buffers absorb.
  await writeFile(file, '');
  await truncate(file, 512 * 2 ** 20);
  const current = await served(file);
  const a = await app(() => current);
  t.teardown(() => a.close());
  await a.listen({ host: '127.0.0.1', port: 0 });
  const port = (a.server.address() as AddressInfo).port;

  const before = openFds();
  const aborted = Array.from({ length: 8 }, (_, i) => new Promise<number>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/f', agent: false, headers: i % 2 ? { range: `bytes=${i * 2 ** 20}-` } : {} }, (res) => {
      res.once('data', () => { req.destroy(); resolve(res.statusCode ?? 0); });
    });
    req.on('error', (err) => { if (!req.destroyed) reject(err); });
  }));
  const statuses = await Promise.all(aborted);
  t.same(statuses, [200, 206, 200, 206, 200, 206, 200, 206], 'every request had started streaming');
  // Closing is asynchronous (the socket's close, then the stream's): wait for it, never long.
  const deadline = Date.now() + 10_000;
  while (openFds() > before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.equal(openFds(), before, 'every descriptor opened for them is closed');
});
