/**
 * HDHomeRun discovery (libhdhomerun's UDP protocol, port 65001): a packet is a
 * big-endian type and payload length, the payload (tag, length, value…), then a
 * little-endian CRC-32 of all that. A discover request (0x0002) for tuners (or
 * any type) and this device's id (or any) gets a reply (0x0003) naming the
 * device, its tuner count and the URLs of one access key. Anything else,
 * malformed or not, is ignored.
 */
import dgram from 'node:dgram';
import { crc32 } from 'node:zlib';
import type { Logger } from 'antenna/sdk';
import type { DeviceIdentity } from './device.js';

export const DISCOVER_REQUEST = 0x0002;
export const DISCOVER_REPLY = 0x0003;
export const TAG = { deviceType: 0x01, deviceId: 0x02, tunerCount: 0x10, lineupUrl: 0x27, baseUrl: 0x2a, deviceAuth: 0x2b } as const;
const DEVICE_TYPE_TUNER = 0x00000001;
const WILDCARD = 0xffffffff;
/** A discover request is a few dozen bytes; anything much larger is not one. */
const MAX_PACKET = 1460;

export type Tlv = Map<number, Buffer>;

/** A packet's type and tags, or undefined when it is not a well-formed packet (length, CRC, TLVs). */
export function parsePacket(packet: Buffer): { type: number; tags: Tlv } | undefined {
  if (packet.length < 8 || packet.length > MAX_PACKET) return undefined;
  const length = packet.readUInt16BE(2);
  if (4 + length + 4 !== packet.length) return undefined;
  if (crc32(packet.subarray(0, 4 + length)) !== packet.readUInt32LE(4 + length)) return undefined;
  const tags: Tlv = new Map();
  let pos = 4;
  const end = 4 + length;
  while (pos < end) {
    if (pos + 2 > end) return undefined;
    const tag = packet[pos++]!;
    let len = packet[pos++]!;
    if (len & 0x80) {
      if (pos >= end) return undefined;
      len = (len & 0x7f) | (packet[pos++]! << 7);
    }
    if (pos + len > end) return undefined;
    tags.set(tag, packet.subarray(pos, pos + len));
    pos += len;
  }
  return { type: packet.readUInt16BE(0), tags };
}

/** A packet of this type with these tags, in order, and its CRC. */
export function buildPacket(type: number, tags: [number, Buffer][]): Buffer {
  const parts: Buffer[] = [];
  for (const [tag, value] of tags) {
    const len = value.length;
    parts.push(Buffer.from(len < 128 ? [tag, len] : [tag, (len & 0x7f) | 0x80, len >> 7]), value);
  }
  const payload = Buffer.concat(parts);
  const head = Buffer.alloc(4);
  head.writeUInt16BE(type, 0);
  head.writeUInt16BE(payload.length, 2);
  const body = Buffer.concat([head, payload]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32LE(crc32(body), 0);
  return Buffer.concat([body, crc]);
}

const u32 = (n: number) => { const b = Buffer.alloc(4); b.writeUInt32BE(n >>> 0, 0); return b; };

/** Whether a request's device type and id (either may be absent) ask for this device. */
function asksForUs(tags: Tlv, deviceId: number): boolean {
  const type = tags.get(TAG.deviceType);
  const id = tags.get(TAG.deviceId);
  if (type && (type.length !== 4 || ![DEVICE_TYPE_TUNER, WILDCARD].includes(type.readUInt32BE(0)))) return false;
  if (id && (id.length !== 4 || ![deviceId, WILDCARD].includes(id.readUInt32BE(0)))) return false;
  return true;
}

export interface DiscoveryOptions {
  port: number;
  address: string;
  identity: DeviceIdentity;
  log: Logger;
  tunerCount(): Promise<number>;
  /** The URLs to announce to a client reached from this local address; undefined to stay silent. */
  urls(localAddress: string): Promise<{ base: string; lineup: string } | undefined>;
}

/** The local address this machine reaches `address` from (the one the client can reach us at). */
async function localAddressFor(address: string, port: number): Promise<string> {
  const probe = dgram.createSocket(address.includes(':') ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.connect(port, address, () => resolve());
    });
    return probe.address().address;
  } finally {
    probe.close();
  }
}

export async function startDiscovery(options: DiscoveryOptions): Promise<{ port: number; close(): Promise<void> }> {
  const deviceId = parseInt(options.identity.deviceId, 16);
  const socket = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  socket.on('error', (err) => options.log.warn({ err: err.message }, 'hdhomerun: discovery socket error'));
  socket.on('message', (packet, from) => {
    const parsed = parsePacket(packet);
    if (!parsed || parsed.type !== DISCOVER_REQUEST || !asksForUs(parsed.tags, deviceId)) return;
    void (async () => {
      const urls = await options.urls(await localAddressFor(from.address, from.port));
      if (!urls) return;
      const reply = buildPacket(DISCOVER_REPLY, [
        [TAG.deviceType, u32(DEVICE_TYPE_TUNER)],
        [TAG.deviceId, u32(deviceId)],
        [TAG.tunerCount, Buffer.from([Math.min(255, await options.tunerCount())])],
        [TAG.baseUrl, Buffer.from(urls.base)],
        [TAG.lineupUrl, Buffer.from(urls.lineup)],
        [TAG.deviceAuth, Buffer.from(options.identity.deviceAuth)],
      ]);
      socket.send(reply, from.port, from.address);
    })().catch((err) => options.log.warn({ err: (err as Error).message }, 'hdhomerun: could not answer a discover request'));
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(options.port, options.address, () => { socket.off('error', reject); resolve(); });
  });
  const port = socket.address().port;
  options.log.info({ event: 'hdhomerun_discovery', port, address: options.address }, 'hdhomerun: answering discovery');
  return { port, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}
