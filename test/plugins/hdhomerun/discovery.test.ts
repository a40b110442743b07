/**
 * HDHomeRun discovery over real UDP: a discover request unicast to 127.0.0.1
 * gets a reply naming the device and the URLs of the configured key; malformed
 * packets get nothing and break nothing. When the test may create network
 * namespaces (root with `ip`), the same round trip as a broadcast from inside a
 * namespace over a veth pair the test makes: never on the machine's own interfaces.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { createTestHost } from '../../../sdk/testing.js';
import { m3u, tempDir, write } from '../live-tv/fixtures.js';
import { unusedPort } from '../../helpers/env.js';
import { parsePacket } from '../../../plugins/hdhomerun/discovery.js';

const run = promisify(execFile);

/** A discover request as libhdhomerun sends it: type 2, device type tuner, device id wildcard, CRC-32 little-endian. */
function discoverRequest(): Buffer {
  const body = Buffer.from([0x00, 0x02, 0x00, 0x0c, 0x01, 0x04, 0x00, 0x00, 0x00, 0x01, 0x02, 0x04, 0xff, 0xff, 0xff, 0xff]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32LE(crc32(body));
  return Buffer.concat([body, crc]);
}

/** Sends packets from a UDP socket and collects what comes back within `waitMs`. */
async function exchange(packets: Buffer[], port: number, address = '127.0.0.1', waitMs = 1500): Promise<Buffer[]> {
  const socket = dgram.createSocket('udp4');
  const replies: Buffer[] = [];
  socket.on('message', (m) => replies.push(m));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  for (const p of packets) socket.send(p, port, address);
  await new Promise((r) => setTimeout(r, waitMs));
  socket.close();
  return replies;
}

t.test('discovery', async (t) => {
  const dir = await tempDir(t, 'antenna-hdhr-disc-');
  const playlist = await write(dir, 'tv.m3u', m3u([{ name: 'One', tvgId: 'one', chno: '1', url: 'http://streams.invalid/1' }]));
  const port = await unusedPort();
  const host = await createTestHost({
    listen: true,
    plugins: {
      'live-tv': { initialImport: 'await' },
      'm3u-tuner': { sources: [{ name: 'IPTV', url: playlist, maxStreams: 3 }] },
      hdhomerun: { discovery: { key: 'living-room', port } },
    },
  });
  t.teardown(() => host.close());
  const key: string = (await host.inject({ method: 'POST', url: '/api/admin/access-keys', headers: host.authHeaders, payload: { name: 'living-room' } })).json().access_key.key;
  const discover = (await host.inject({ method: 'GET', url: `/hdhr/${key}/discover.json` })).json();
  const httpPort = new URL(host.url).port;

  t.test('a unicast round trip on 127.0.0.1', async (t) => {
    const [reply, extra] = await exchange([discoverRequest()], port);
    t.ok(reply, 'a reply came');
    t.notOk(extra, 'one reply');
    const parsed = parsePacket(reply!);
    t.ok(parsed, 'the reply is well formed and its CRC checks');
    t.equal(reply!.readUInt16BE(0), 0x0003, 'a discover reply');
    t.equal(reply!.readUInt32LE(reply!.length - 4), crc32(reply!.subarray(0, reply!.length - 4)), 'CRC-32, little-endian');
    const tags = parsed!.tags;
    t.strictSame([...tags.keys()], [0x01, 0x02, 0x10, 0x2a, 0x27, 0x2b], 'device type, device id, tuner count, base URL, lineup URL, device auth');
    t.equal(tags.get(0x01)!.readUInt32BE(0), 1, 'device type tuner');
    t.equal(tags.get(0x02)!.readUInt32BE(0).toString(16).toUpperCase().padStart(8, '0'), discover.DeviceID);
    t.equal(tags.get(0x10)![0], 3, 'tuner count');
    t.equal(tags.get(0x2a)!.toString(), `http://127.0.0.1:${httpPort}/hdhr/${key}`);
    t.equal(tags.get(0x27)!.toString(), `http://127.0.0.1:${httpPort}/hdhr/${key}/lineup.json`);
    t.equal(tags.get(0x2b)!.toString(), discover.DeviceAuth);
  });

  t.test('malformed packets are ignored', async (t) => {
    const good = discoverRequest();
    const badCrc = Buffer.from(good);
    badCrc[badCrc.length - 1]! ^= 0xff;
    const shortLength = Buffer.from(good);
    shortLength.writeUInt16BE(200, 2);
    const otherDevice = Buffer.from(good.subarray(0, 16));
    otherDevice.writeUInt32BE(0x12345678, 12);
    const otherDeviceCrc = Buffer.alloc(4);
    otherDeviceCrc.writeUInt32LE(crc32(otherDevice));
    const tlvPastEnd = Buffer.from([0x00, 0x02, 0x00, 0x03, 0x01, 0x7f, 0x00]);
    const tlvPastEndCrc = Buffer.alloc(4);
    tlvPastEndCrc.writeUInt32LE(crc32(tlvPastEnd));
    const replies = await exchange([
      Buffer.alloc(0), Buffer.from('hello'), badCrc, shortLength, Buffer.concat([otherDevice, otherDeviceCrc]),
      Buffer.concat([tlvPastEnd, tlvPastEndCrc]), Buffer.alloc(1400, 0xff), good.subarray(0, 10),
    ], port);
    t.equal(replies.length, 0, 'no reply to any of them');
    const after = await exchange([discoverRequest()], port, '127.0.0.1', 1000);
    t.equal(after.length, 1, 'the responder still answers');
    t.equal((await host.inject({ method: 'GET', url: `/hdhr/${key}/lineup.json` })).statusCode, 200, 'and the server is fine');
  });

  t.test('a broadcast round trip inside a network namespace', async (t) => {
    const ns = `antenna-hdhr-${process.pid}`;
    const outer = `ahd${process.pid % 100000}a`;
    const inner = `ahd${process.pid % 100000}b`;
    const net = `10.${200 + (process.pid % 50)}.${process.pid % 250}`;
    try {
      await run('ip', ['netns', 'add', ns]);
    } catch (err) {
      t.comment(`skipped: cannot create a network namespace here: ${(err as Error).message.split('\n')[0]}`);
      return;
    }
    t.teardown(async () => {
      await run('ip', ['link', 'del', outer]).catch(() => {});
      await run('ip', ['netns', 'del', ns]).catch(() => {});
    });
    await run('ip', ['link', 'add', outer, 'type', 'veth', 'peer', 'name', inner]);
    await run('ip', ['link', 'set', inner, 'netns', ns]);
    await run('ip', ['addr', 'add', `${net}.1/30`, 'dev', outer]);
    await run('ip', ['link', 'set', outer, 'up']);
    await run('ip', ['netns', 'exec', ns, 'ip', 'addr', 'add', `${net}.2/30`, 'dev', inner]);
    await run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', inner, 'up']);
    await run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
    // The client runs inside the namespace and broadcasts on its side of the pair only.
    const client = `
      const dgram = require('node:dgram');
      const s = dgram.createSocket('udp4');
      s.on('message', (m, from) => { process.stdout.write(JSON.stringify({ from: from.address, hex: m.toString('hex') })); process.exit(0); });
      s.bind(0, () => { s.setBroadcast(true); s.send(Buffer.from(${JSON.stringify(discoverRequest().toString('hex'))}, 'hex'), ${port}, '${net}.3'); });
      setTimeout(() => process.exit(1), 5000);
    `;
    const { stdout } = await run('ip', ['netns', 'exec', ns, process.execPath, '-e', client]);
    const { from, hex } = JSON.parse(stdout);
    t.equal(from, `${net}.1`, 'the server answered from its side of the pair');
    const tags = parsePacket(Buffer.from(hex, 'hex'))!.tags;
    t.equal(tags.get(0x2a)!.toString(), `http://${net}.1:${httpPort}/hdhr/${key}`, 'with a base URL the client can reach');
  });
});
