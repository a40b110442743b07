/**
 * Reading ffmpeg's CMAF segmenter without ffmpeg: its MPD as a live run writes
 * it (copied from a real ffmpeg 4.1 run, trimmed), and the segment numbers
 * reported once every representation has them, with the times inside the
 * files (the output offset and the edit list's trim taken out).
 */
import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseMpd, SegmenterOutput } from '../../../plugins/live-tv/live/segmenter.js';

/** What ffmpeg 4.1's dash muxer wrote for a live run (copied from a real run, trimmed). */
/** What ffmpeg 4.1's dash muxer wrote for a live run (copied from a real run, trimmed). */
const LIVE_MPD = `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="dynamic" minimumUpdatePeriod="PT2S" availabilityStartTime="2026-11-22T14:26:06Z" timeShiftBufferDepth="PT6.0S" minBufferTime="PT4.0S">
	<Period id="0" start="PT0.0S">
		<AdaptationSet id="0" contentType="video" segmentAlignment="true" bitstreamSwitching="true">
			<Representation id="0" mimeType="video/mp4" codecs="avc1.42c00c" bandwidth="629952" width="320" height="180" frameRate="25/1">
				<SegmentTemplate timescale="12800" initialization="init-stream$RepresentationID$.mp4" media="chunk-stream$RepresentationID$-$Number%05d$.mp4" startNumber="7">
					<SegmentTimeline>
						<S t="153873" d="25600" r="2" />
					</SegmentTimeline>
				</SegmentTemplate>
			</Representation>
		</AdaptationSet>
		<AdaptationSet id="1" contentType="audio" segmentAlignment="true" bitstreamSwitching="true">
			<Representation id="1" mimeType="audio/mp4" codecs="mp4a.40.2" bandwidth="128000" audioSamplingRate="48000">
				<AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="2" />
				<SegmentTemplate timescale="48000" initialization="init-stream$RepresentationID$.mp4" media="chunk-stream$RepresentationID$-$Number%05d$.mp4" startNumber="7">
					<SegmentTimeline>
						<S t="576000" d="97280" />
						<S d="96256" r="1" />
					</SegmentTimeline>
				</SegmentTemplate>
			</Representation>
		</AdaptationSet>
	</Period>
</MPD>
`;

t.test("ffmpeg's live MPD: representations, their attributes and every listed segment with its media time", async (t) => {
  const reps = parseMpd(LIVE_MPD);
  t.equal(reps.length, 2);
  const [video, audio] = reps;
  t.match(video, { id: '0', kind: 'video', codecs: 'avc1.42c00c', width: 320, height: 180, frameRate: '25/1', timescale: 12800 });
  t.strictSame(video.segments, [{ number: 7, t: 153873, d: 25600 }, { number: 8, t: 179473, d: 25600 }, { number: 9, t: 205073, d: 25600 }], 'r expands, t carries on');
  t.match(audio, { id: '1', kind: 'audio', sampleRate: 48000, channels: 2, timescale: 48000 });
  t.strictSame(audio.segments.map((s) => [s.number, s.t, s.d]), [[7, 576000, 97280], [8, 673280, 96256], [9, 769536, 96256]]);
  t.strictSame(parseMpd('<MPD></MPD>'), [], 'no representations in an empty MPD');
  t.strictSame(parseMpd('not xml at all'), []);
});

t.test('segment numbers are reported once every representation has them, at the times inside the files', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-segmenter-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const offset = 1_800_000_000;
  const mpd = (video: string, audio: string) => `<MPD><Period><AdaptationSet contentType="video"><Representation id="0" codecs="avc1.42c00c">
<SegmentTemplate timescale="12800" initialization="init-stream$RepresentationID$.mp4" media="chunk-stream$RepresentationID$-$Number%05d$.mp4" startNumber="1"><SegmentTimeline>${video}</SegmentTimeline></SegmentTemplate></Representation></AdaptationSet>
<AdaptationSet contentType="audio"><Representation id="1" codecs="mp4a.40.2"><SegmentTemplate timescale="48000" initialization="init-stream$RepresentationID$.mp4" media="chunk-stream$RepresentationID$-$Number%05d$.mp4" startNumber="1"><SegmentTimeline>${audio}</SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period></MPD>`;
  const output = new SegmenterOutput(dir, offset);
  t.strictSame(await output.next(), [], 'nothing before ffmpeg wrote its MPD');
  // The audio's first segment starts 1024 samples before the offset: what its edit list trims.
  await writeFile(path.join(dir, 'manifest.mpd'), mpd(`<S t="${offset * 12800}" d="25600" r="1"/>`, `<S t="${offset * 48000 - 1024}" d="97280"/>`));
  const first = await output.next();
  t.equal(first.length, 1, 'number 1 only: the audio has not finished number 2');
  t.strictSame(first[0].map((s) => [s.rep.kind, s.number, s.start, s.duration]), [['video', 1, 0, 25600], ['audio', 1, 0, 96256]], 'times from 0, the trimmed samples taken off the first duration');
  t.equal(first[0][0].file, path.join(dir, 'chunk-stream0-00001.mp4'));
  t.equal(first[0][1].init, path.join(dir, 'init-stream1.mp4'));
  t.strictSame(await output.next(), [], 'an unchanged MPD reports nothing');
  await writeFile(path.join(dir, 'manifest.mpd'), mpd(`<S t="${offset * 12800}" d="25600" r="2"/>`, `<S t="${offset * 48000 - 1024}" d="97280"/><S d="96256" r="1"/>`));
  const next = await output.next();
  t.strictSame(next.map((slot) => slot.map((s) => [s.number, s.start])), [[[2, 25600], [2, 96256]], [[3, 51200], [3, 192512]]], 'numbers 2 and 3, each once, with both representations');
});
