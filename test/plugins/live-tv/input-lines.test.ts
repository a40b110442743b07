/**
 * What a live session reads off ffmpeg's description of its input: the codec of each stream, and
 * the video's frame rate as DASH and HLS masters declare it (ffmpeg's own MPD names none when its
 * short probe averaged no rate, as happens on a busy machine).
 */
import t from 'tap';
import { parseInputFrameRate, parseInputStreamLine } from '../../../plugins/live-tv/live/codecs.js';

const video = (rates: string) => `  Stream #0:0[0x100]: Video: h264 (High) ([27][0][0][0] / 0x001B), yuv420p(progressive), 640x360 [SAR 1:1 DAR 16:9], ${rates}, 90k tbn`;

t.test('codecs', async (t) => {
  t.strictSame(parseInputStreamLine(video('25 fps, 25 tbr')), ['video', 'h264']);
  t.strictSame(parseInputStreamLine('  Stream #0:1[0x101](eng): Audio: aac (LC) ([15][0][0][0] / 0x000F), 48000 Hz, stereo, fltp, 130 kb/s'), ['audio', 'aac']);
  t.equal(parseInputStreamLine('Input #0, mpegts, from \'pipe:\':'), undefined);
});

t.test('frame rates', async (t) => {
  t.equal(parseInputFrameRate(video('25 fps, 25 tbr')), '25');
  t.equal(parseInputFrameRate(video('50 tbr')), '50', 'tbr when the probe averaged no fps');
  t.equal(parseInputFrameRate(video('29.97 fps, 29.97 tbr')), '30000/1001');
  t.equal(parseInputFrameRate(video('23.98 fps, 23.98 tbr')), '24000/1001');
  t.equal(parseInputFrameRate(video('59.94 fps, 59.94 tbr')), '60000/1001');
  t.equal(parseInputFrameRate(video('12.34 fps')), undefined, 'a rate DASH cannot write as an integer or NTSC fraction: none');
  t.equal(parseInputFrameRate(video('1k tbr')), undefined, 'ffmpeg\'s 1k tbr (unknown): none');
  t.equal(parseInputFrameRate('  Stream #0:1: Audio: aac, 48000 Hz, stereo, fltp, 25 fps'), undefined, 'audio lines: none');
});
