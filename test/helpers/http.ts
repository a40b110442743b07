/**
 * Helpers for the core's HTTP tests: error-body checks, hand-built images,
 * multipart bodies and JWTs, temp dirs.
 */
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';

export { REPO_ROOT, CLI } from './repo.js';

/** The part of a tap Test these helpers use. */
interface Tap {
  equal(...args: any[]): unknown;
  strictSame(...args: any[]): unknown;
  match(...args: any[]): unknown;
  teardown(fn: () => unknown): void;
}

/**
 * Asserts an error response: the status, a JSON body that is exactly
 * `{"error": "<string>"}`, and the message when `message` is given.
 */
export function expectError(t: Tap, res: { statusCode: number; body: string; headers: Record<string, any> }, status: number, message?: RegExp | string, what = ''): Record<string, unknown> {
  const label = what ? `${what}: ` : '';
  t.equal(res.statusCode, status, `${label}status ${status}`);
  t.match(String(res.headers['content-type'] ?? ''), /^application\/json/, `${label}error body is JSON`);
  let body: any;
  try {
    body = JSON.parse(res.body);
  } catch {
    body = { unparsable: res.body };
  }
  t.strictSame(Object.keys(body ?? {}), ['error'], `${label}error body has exactly one key, error`);
  t.equal(typeof body?.error, 'string', `${label}error is a string`);
  if (typeof message === 'string') t.equal(body?.error, message, `${label}message`);
  else if (message) t.match(body?.error, message, `${label}message`);
  return body;
}

/** Same, for a fetch Response (body already read as text). */
export function expectFetchError(t: Tap, res: Response, text: string, status: number, message?: RegExp | string, what = ''): void {
  expectError(t, { statusCode: res.status, body: text, headers: { 'content-type': res.headers.get('content-type') } }, status, message, what);
}

export async function tmpDir(t: Tap, prefix = 'antenna-core-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/* ------------------------------------------------------------------ images */

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A valid 1×1 RGB PNG: signature, IHDR, IDAT (zlib), IEND, with real CRCs. */
export function tinyPng(): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0); // width
  ihdr.writeUInt32BE(1, 4); // height
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour
  const scanline = Buffer.from([0, 0xff, 0x80, 0x00]); // filter 0, one orange pixel
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr), pngChunk('IDAT', deflateSync(scanline)), pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A 1×1 baseline JPEG (SOI, APP0/JFIF, DQT, SOF0, DHT, SOS, EOI). */
export function tinyJpeg(): Buffer {
  return Buffer.from(
    'ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432' +
    'ffc0000b080001000101011100ffc4001f0000010501010101010100000000000000000102030405060708090a0bffc400b5100002010303020403050504040000017d01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9fa' +
    'ffda0008010100003f00fbd3ffd9',
    'hex',
  );
}

/** A 1×1 lossless WebP: RIFF header, WEBP, VP8L chunk. */
export function tinyWebp(): Buffer {
  return Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64');
}

/** The classic 1×1 transparent GIF89a. */
export function tinyGif(): Buffer {
  return Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
}

/** A well-formed PNG of exactly `size` bytes (for size limits): the 1×1 image with a private chunk of padding before IEND. */
export function pngOfSize(size: number): Buffer {
  const png = tinyPng();
  const iend = png.subarray(png.length - 12);
  const padding = size - png.length - 12;
  if (padding < 0) throw new Error(`a PNG takes at least ${png.length + 12} bytes`);
  return Buffer.concat([png.subarray(0, png.length - 12), pngChunk('prVt', Buffer.alloc(padding, 0x42)), iend]);
}

/* --------------------------------------------------------------- multipart */

export interface Part { name: string; filename?: string; contentType?: string; data: Buffer | string }

/** A multipart/form-data body built by hand, with its content-type header. */
export function multipart(parts: Part[], boundary = '----antenna-test-' + Math.random().toString(16).slice(2)): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(Buffer.from(head + '\r\n', 'latin1'), Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/* --------------------------------------------------------------------- JWT */

export const b64url = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** An HS256 JWT signed by hand with `secret`. */
export function signJwt(payload: Record<string, unknown>, secret: string, header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' }): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

export function decodeJwtPayload(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
}

/** Flips one character in the middle of the signature (the last one may only carry padding bits). */
export function tamperSignature(token: string): string {
  const [h, p, s] = token.split('.') as [string, string, string];
  const i = Math.floor(s.length / 2);
  const flipped = s[i] === 'A' ? 'B' : 'A';
  return `${h}.${p}.${s.slice(0, i)}${flipped}${s.slice(i + 1)}`;
}

/* ------------------------------------------------------------ raw requests */

export interface RawResponse { status: number; headers: http.IncomingHttpHeaders; body: Buffer }

/**
 * A GET over real HTTP with the path sent exactly as given (no URL or
 * dot-segment normalisation) and header names as given, as a hostile client sends it.
 */
export function rawGet(base: string, rawPath: string, headers: Record<string, string> = {}, timeoutMs = 60_000): Promise<RawResponse> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: rawPath, method: 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`GET ${rawPath.replace(/(api_key|key)=[^&]*/g, '$1=***')}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** A rawGet result in the shape expectError takes. */
export const asInject = (r: RawResponse) => ({ statusCode: r.status, body: r.body.toString('utf8'), headers: r.headers as Record<string, any> });

/** Opens a stream and reads it until `bytes` have come (or it ends); resolves with the response and a way to close it. */
export function openStream(url: string, bytes = 188 * 100): Promise<{ status: number; headers: http.IncomingHttpHeaders; received: () => number; ended: Promise<void>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      let received = 0;
      let settled = false;
      const ended = new Promise<void>((done) => { res.on('close', () => done()); res.on('end', () => done()); });
      const result = { status: res.statusCode!, headers: res.headers, received: () => received, ended, close: () => req.destroy() };
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (!settled && received >= bytes) { settled = true; resolve(result); }
      });
      res.on('error', () => {});
      void ended.then(() => { if (!settled) { settled = true; resolve(result); } });
    });
    req.on('error', reject);
  });
}
