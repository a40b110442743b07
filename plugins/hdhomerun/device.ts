/**
 * The identity Antenna shows as an HDHomeRun tuner: a DeviceID valid under
 * libhdhomerun's check-digit rule (Plex refuses others) and a DeviceAuth, both
 * made once and kept in the plugin's directory, so clients recognise the tuner
 * across restarts.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface DeviceIdentity {
  /** 8 upper-case hex digits. */
  deviceId: string;
  /** 24 letters and digits. */
  deviceAuth: string;
}

/** libhdhomerun's substitution for the odd nibbles of the check (hdhomerun_discover_validate_device_id). */
const CHECK = [0xa, 0x5, 0xf, 0x6, 0x7, 0xc, 0x1, 0xb, 0x9, 0x2, 0x8, 0xd, 0x4, 0x3, 0xe, 0x0];

/** The XOR of the nibbles, the odd ones (from the top) substituted; zero for a valid id. */
function check(id: number): number {
  let sum = 0;
  for (let shift = 28; shift >= 0; shift -= 4) {
    const nibble = (id >>> shift) & 0xf;
    sum ^= (shift / 4) % 2 === 1 ? CHECK[nibble]! : nibble;
  }
  return sum;
}

export function validDeviceId(id: number): boolean {
  return check(id >>> 0) === 0;
}

/** A random valid DeviceID starting with 1, as real tuners' do: the last nibble makes the check zero. */
export function newDeviceId(): number {
  const body = ((0x1 << 28) | (randomInt(0, 1 << 24) << 4)) >>> 0;
  return (body | check(body)) >>> 0;
}

const hex = (id: number) => id.toString(16).toUpperCase().padStart(8, '0');
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** The identity kept in `dir/device.json`, made on first use (and again if the file is damaged). */
export async function deviceIdentity(dir: string): Promise<DeviceIdentity> {
  const file = path.join(dir, 'device.json');
  try {
    const kept = JSON.parse(await readFile(file, 'utf8')) as Partial<DeviceIdentity>;
    if (typeof kept.deviceId === 'string' && /^[0-9A-F]{8}$/.test(kept.deviceId) && validDeviceId(parseInt(kept.deviceId, 16)) &&
      typeof kept.deviceAuth === 'string' && /^[A-Za-z0-9]{24}$/.test(kept.deviceAuth)) {
      return { deviceId: kept.deviceId, deviceAuth: kept.deviceAuth };
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && !(err instanceof SyntaxError)) throw err;
  }
  const identity = { deviceId: hex(newDeviceId()), deviceAuth: [...randomBytes(24)].map((b) => ALNUM[b % ALNUM.length]).join('') };
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(identity) + '\n', { mode: 0o600 });
  await rename(tmp, file);
  return identity;
}
