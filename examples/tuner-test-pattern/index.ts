/**
 * A tuner plugin as a third party would write it (it imports only the SDK):
 * N channels whose streams are ffmpeg test patterns with a tone, plus a guide
 * source that fills the next 24 hours with programmes, so a fresh install has
 * something to watch and a populated guide.
 *
 *   plugins:
 *     ./dist/examples/tuner-test-pattern: { channels: 3 }   # in this repository
 *     antenna-tuner-test-pattern: { channels: 3 }           # installed as a package
 */
import {
  coreServices, definePlugin, guidesExtensionPoint, tunersExtensionPoint, Type,
  type GuideProgramme, type Static, type Tuner, type GuideSource,
} from 'antenna/sdk';

const configSchema = Type.Object({
  channels: Type.Integer({ minimum: 1, maximum: 50, default: 3 }),
  /** Simultaneous streams this "tuner" allows, like a real provider's limit. */
  maxStreams: Type.Integer({ minimum: 1, maximum: 50, default: 4 }),
  /** Output of the generated picture. */
  size: Type.String({ pattern: '^\\d{2,4}x\\d{2,4}$', default: '1280x720' }),
  rate: Type.Integer({ minimum: 1, maximum: 60, default: 25 }),
  /** Length of each generated guide programme. */
  slotMinutes: Type.Integer({ minimum: 5, maximum: 240, default: 30 }),
}, { additionalProperties: false });

type Config = Static<typeof configSchema>;

const SHOWS = ['Morning Bars', 'Colour Calibration', 'The Tone Hour', 'Pattern Report', 'Late Night Static', 'Signal Check'];
const TONES = [440, 523, 659, 784, 880];

function tuner(config: Config): Tuner {
  return {
    id: 'test-pattern',
    name: 'Test Pattern',
    maxStreams: config.maxStreams,
    async listChannels() {
      return Array.from({ length: config.channels }, (_, i) => ({
        key: `pattern-${i + 1}`,
        name: `Test Pattern ${i + 1}`,
        number: String(900 + i + 1),
        tvgId: `test-pattern-${i + 1}.antenna`,
        groups: ['Test Patterns'],
        data: { tone: TONES[i % TONES.length] },
      }));
    },
    async openStream({ channel }) {
      const tone = Number((channel.data as { tone?: number } | undefined)?.tone ?? 440);
      // -re: read the synthetic input in real time, like a broadcast. testsrc draws a running counter.
      return {
        inputArgs: [
          '-re', '-f', 'lavfi', '-i', `testsrc=size=${config.size}:rate=${config.rate}`,
          '-re', '-f', 'lavfi', '-i', `sine=frequency=${tone}:sample_rate=48000`,
        ],
        maps: ['0:v:0', '1:a:0'],
        videoCodec: 'rawvideo', audioCodec: 'pcm',
      };
    },
  };
}

function guide(config: Config, now: () => number): GuideSource {
  return {
    id: 'test-pattern-guide',
    name: 'Test Pattern guide',
    refreshMs: 6 * 3600_000,
    async load({ sink, signal }) {
      const slot = config.slotMinutes * 60_000;
      const first = Math.floor((now() - 3600_000) / slot) * slot; // an hour back, aligned to the slot length
      const last = now() + 24 * 3600_000;
      let programmes = 0;
      for (let i = 1; i <= config.channels; i++) {
        signal.throwIfAborted();
        const id = `test-pattern-${i}.antenna`;
        sink.channel({ id, displayNames: [`Test Pattern ${i}`] });
        const batch: GuideProgramme[] = [];
        for (let start = first, n = 0; start < last; start += slot, n++) {
          const title = SHOWS[(n + i) % SHOWS.length];
          batch.push({
            channel: id, start, stop: start + slot, title,
            subTitle: `Episode ${n + 1}`,
            description: `${title} on Test Pattern ${i}: a ${TONES[(i - 1) % TONES.length]} Hz tone over colour bars.`,
            categories: ['Test'],
          });
        }
        await sink.programmes(batch);
        programmes += batch.length;
        sink.progress(i / config.channels);
      }
      return { channels: config.channels, programmes, skipped: 0, warnings: 0 };
    },
  };
}

export default definePlugin({
  id: 'tuner-test-pattern',
  version: '1.0.0',
  host: '^1.1',
  description: 'Test-pattern channels with a generated guide',
  configSchema,
  dependsOn: ['live-tv'],
  register(env) {
    env.registerInit({
      deps: { config: coreServices.config, tuners: tunersExtensionPoint, guides: guidesExtensionPoint, clock: coreServices.clock },
      // config is typed by configSchema: Static<typeof configSchema>.
      async init({ config, tuners, guides, clock }) {
        tuners.addTuner(tuner(config));
        guides.addGuideSource(guide(config, () => clock.now()));
      },
    });
  },
});
