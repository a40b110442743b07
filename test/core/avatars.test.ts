/**
 * Avatar uploads: a malformed multipart body (no boundary, a part cut short, an
 * over-long boundary, random bytes) answers 400 {"error"} with one log line;
 * an avatar must be a well-formed image of the type it claims (PNG chunks,
 * JPEG markers to EOI, GIF blocks, WebP RIFF chunks) and is served with
 * `X-Content-Type-Options: nosniff`.
 */
import t from 'tap';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createTestHost } from '../../sdk/testing.js';
import { expectError, multipart, tinyGif, tinyJpeg, tinyPng, tinyWebp } from '../helpers/http.js';

t.test('a malformed multipart upload: 400 {"error"} and one log line, never a 500', async (t) => {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, new Writable({ write(c, _e, cb) { lines.push(...String(c).split('\n').filter(Boolean)); cb(); } }));
  const host = await createTestHost({ logger });
  t.teardown(() => host.close());
  const good = multipart([{ name: 'avatar', filename: 'a.png', contentType: 'image/png', data: tinyPng() }], 'XyZ');
  const cases: [string, string, Buffer | string][] = [
    ['no boundary', 'multipart/form-data', good.body],
    ['an empty boundary', 'multipart/form-data; boundary=', good.body],
    ['a part cut short', good.contentType, good.body.subarray(0, good.body.length - 20)],
    ['cut inside the part headers', good.contentType, good.body.subarray(0, 30)],
    ['a boundary of 300 characters', `multipart/form-data; boundary=${'b'.repeat(300)}`, `--${'b'.repeat(300)}\r\nContent-Disposition: form-data; name="avatar"; filename="a.png"\r\n\r\n${tinyPng().toString('latin1')}\r\n--${'b'.repeat(300)}--\r\n`],
    ['random bytes', good.contentType, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256))],
    ['a body that never starts a part', good.contentType, 'hello\r\n'.repeat(100)],
    ['a header line without a colon', good.contentType, '--XyZ\r\nnot a header\r\n\r\ndata\r\n--XyZ--\r\n'],
  ];
  for (const [what, contentType, body] of cases) {
    const before = lines.length;
    const res = await host.inject({ method: 'POST', url: '/api/user/me/avatar', headers: { ...host.authHeaders, 'content-type': contentType }, payload: body });
    t.ok(res.statusCode === 400 || res.statusCode === 415, `${what}: ${res.statusCode}`);
    expectError(t, res, res.statusCode, undefined, what);
    const logged = lines.slice(before).map((l) => JSON.parse(l));
    t.equal(logged.filter((r) => r.level >= 30).length, 1, `${what}: one log line (at info and above)`);
    t.notOk(logged.some((r) => r.level >= 50 || /stack|at \//.test(JSON.stringify(r))), `${what}: no error and no stack logged`);
  }
  // The well-formed request still works.
  const ok = await host.inject({ method: 'POST', url: '/api/user/me/avatar', headers: { ...host.authHeaders, 'content-type': good.contentType }, payload: good.body });
  t.equal(ok.statusCode, 200, 'the same upload, whole');
});

t.test('an avatar must be the image it claims to be, through its structure; served with nosniff', async (t) => {
  const host = await createTestHost();
  t.teardown(() => host.close());
  const upload = (data: Buffer) => {
    const { body, contentType } = multipart([{ name: 'avatar', filename: 'a.img', contentType: 'application/octet-stream', data }]);
    return host.inject({ method: 'POST', url: '/api/user/me/avatar', headers: { ...host.authHeaders, 'content-type': contentType }, payload: body });
  };
  const png = tinyPng();
  const jpeg = tinyJpeg();
  const gif = tinyGif();
  const webp = tinyWebp();
  const html = Buffer.from('<html><script>alert(document.cookie)</script></html>');
  const flipped = Buffer.from(png);
  flipped[png.length - 20] ^= 0xff; // a byte of IDAT: its CRC no longer matches
  const bad: [string, Buffer][] = [
    ['a PNG signature, then HTML', Buffer.concat([png.subarray(0, 8), html])],
    ['a PNG signature and IHDR, then HTML', Buffer.concat([png.subarray(0, 33), html])],
    ['a PNG without IEND', png.subarray(0, png.length - 12)],
    ['a PNG with a corrupt chunk', flipped],
    ['a PNG with bytes after IEND', Buffer.concat([png, html])],
    ['a JPEG SOI, then HTML', Buffer.concat([jpeg.subarray(0, 3), html])],
    ['a JPEG cut before EOI', jpeg.subarray(0, jpeg.length - 2)],
    ['a JPEG without a frame', Buffer.concat([jpeg.subarray(0, 20), Buffer.from([0xff, 0xd9])])],
    ['a GIF header, then HTML', Buffer.concat([gif.subarray(0, 6), html])],
    ['a GIF without its trailer', gif.subarray(0, gif.length - 1)],
    ['a GIF with no image', Buffer.concat([gif.subarray(0, 13 + 6), Buffer.from([0x3b])])],
    ['a RIFF WEBP header, then HTML', Buffer.concat([webp.subarray(0, 12), html])],
    ['a WebP whose RIFF size is wrong', Buffer.concat([webp.subarray(0, 4), Buffer.from([0xff, 0xff, 0, 0]), webp.subarray(8)])],
    ['a WebP with a VP8L chunk cut short', webp.subarray(0, webp.length - 6)],
  ];
  for (const [what, data] of bad) expectError(t, await upload(data), 415, 'avatar must be a PNG, JPEG, WebP or GIF image', what);
  for (const [type, data] of [['image/png', png], ['image/jpeg', jpeg], ['image/gif', gif], ['image/webp', webp]] as const) {
    t.equal((await upload(data)).statusCode, 200, `a well-formed ${type}`);
    const res = await host.inject({ method: 'GET', url: '/api/user/me/avatar', headers: host.authHeaders });
    t.equal(res.headers['content-type'], type, `${type} served as such`);
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${type} served with nosniff`);
  }
});
