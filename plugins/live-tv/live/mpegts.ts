/**
 * A channel's live session as one continuous MPEG-TS (what HDHomeRun and M3U
 * clients read): a viewer's hold on the shared session, whose segments are fed,
 * init segment first, to an ffmpeg that copies them into MPEG-TS, one input
 * pipe per representation. A new run of the session (ffmpeg restarted, codecs
 * switched) has new init segments: its own remux, written on to the same stream.
 */
import { createReadStream } from 'node:fs';
import { PassThrough } from 'node:stream';
import { errors, type AccessGrant, type FfmpegService, type LiveHold, type LiveMpegTs, type LiveSegment, type Logger } from 'antenna/sdk';

/** Segments a new client starts with: the stream opens on a keyframe with a little buffered. */
const START_SEGMENTS = 2;
/** A client this many segments behind skips ahead (their files are removed a minute after they finish). */
const MAX_BEHIND = 20;

/** Writes a file into a pipe that stays open, waiting for it to drain; throws when the pipe is gone. */
async function copy(file: string, input: NodeJS.WritableStream & { destroyed?: boolean }): Promise<void> {
  for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 })) {
    if (input.destroyed) throw new Error('the remux has exited');
    if (input.write(chunk)) continue;
    await new Promise<void>((resolve, reject) => {
      const done = (err?: unknown) => {
        input.off('drain', done).off('close', gone).off('error', done);
        if (err) reject(err); else resolve();
      };
      const gone = () => done(new Error('the remux has exited'));
      input.on('drain', done).on('close', gone).on('error', done);
    });
  }
}

interface RunQueue {
  run: number;
  /** Segments waiting, per representation id. */
  reps: Map<string, LiveSegment[]>;
  /** No more segments will come (a newer run started, or the stream is closing). */
  closed: boolean;
}

export async function openMpegTs(hold: LiveHold, deps: {
  ffmpeg: FfmpegService; log: Logger; label: string; readyTimeoutMs: number; signal?: AbortSignal; grant?: AccessGrant;
}): Promise<LiveMpegTs> {
  const { ffmpeg, log, label } = deps;
  const output = new PassThrough({ highWaterMark: 1 << 20 });
  const runs: RunQueue[] = [];
  // Every waiter (one feeder per representation, the first answer) waits for the same next change.
  let wake: (() => void) | undefined;
  let woken: Promise<void> | undefined;
  const next = () => (woken ??= new Promise<void>((resolve) => { wake = resolve; }));
  const changed = () => { const w = wake; wake = undefined; woken = undefined; w?.(); };
  let closed = false;
  let first: LiveSegment[] | undefined = [];

  const add = (segment: LiveSegment) => {
    let run = runs[runs.length - 1];
    if (!run || run.run !== segment.run) {
      if (run) run.closed = true;
      runs.push((run = { run: segment.run, reps: new Map(), closed: false }));
    }
    let list = run.reps.get(segment.representation.id);
    if (!list) run.reps.set(segment.representation.id, (list = []));
    list.push(segment);
    if (list.length > MAX_BEHIND) list.splice(0, list.length - MAX_BEHIND);
    changed();
  };

  // The segments the session still keeps arrive first, at once: only the last few of the newest run are wanted.
  const stopListening = hold.onSegment((segment) => {
    if (first) first.push(segment);
    else add(segment);
  });
  const kept = first;
  first = undefined;
  const lastRun = kept.length ? kept[kept.length - 1]!.run : -1;
  const sequences = [...new Set(kept.filter((s) => s.run === lastRun).map((s) => s.sequence))].slice(-START_SEGMENTS);
  for (const s of kept) if (s.run === lastRun && sequences.includes(s.sequence)) add(s);

  let processes: { stop(): Promise<unknown> } | undefined;
  let stopWatchingKey: (() => void) | undefined;
  const close = () => {
    if (closed) return;
    closed = true;
    stopListening();
    stopWatchingKey?.();
    for (const run of runs) run.closed = true;
    changed();
    void processes?.stop();
    hold.release();
    if (!output.writableEnded) output.end();
  };
  output.on('close', close);
  void hold.ended.then(close);
  deps.signal?.addEventListener('abort', close, { once: true });
  // A revoked key's client is cut off, not left to drain what is buffered.
  stopWatchingKey = deps.grant?.onRevoked(() => {
    close();
    output.destroy();
  });

  // Answered once there is something to send: the first segment, or why there is none.
  let timer: NodeJS.Timeout | undefined;
  const ready = await Promise.race([
    (async () => { while (!runs.length && !closed) await next(); return !closed; })(),
    new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), deps.readyTimeoutMs); }),
  ]).finally(() => clearTimeout(timer));
  if (!ready) {
    const why = hold.lastError() ?? 'the stream did not start';
    close();
    throw deps.signal?.aborted ? errors.badRequest('The client went away') : errors.unavailable(`Stream not ready after ${Math.round(deps.readyTimeoutMs / 1000)} s: ${why}`, 5);
  }

  /** Feeds one representation of a run (init segment first) into its input pipe until the run is over. */
  const feed = async (run: RunQueue, repId: string, input: NodeJS.WritableStream) => {
    let init: string | undefined;
    for (;;) {
      const segment = run.reps.get(repId)?.shift();
      if (!segment) {
        if (run.closed) break;
        await next();
        continue;
      }
      try {
        if (init !== segment.initPath) await copy((init = segment.initPath), input);
        await copy(segment.path, input);
      } catch (err) {
        // A file gone (a client far behind) is skipped; a pipe gone means ffmpeg has exited.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') break;
      }
    }
    input.end();
  };

  void (async () => {
    while (!closed) {
      const run = runs[0];
      if (!run) { await next(); continue; }
      const repIds = [...run.reps.keys()].sort((a, b) => (a === 'video' ? -1 : b === 'video' ? 1 : a.localeCompare(b)));
      const proc = ffmpeg.spawn([
        '-loglevel', 'error',
        ...repIds.flatMap((_, i) => ['-probesize', '65536', '-analyzeduration', '0', '-f', 'mp4', '-i', `pipe:${3 + i}`]),
        ...repIds.flatMap((_, i) => ['-map', `${i}`]),
        '-c', 'copy', '-f', 'mpegts', '-flush_packets', '1', 'pipe:1',
      ], { label: `${label}:mpegts`, stdout: 'pipe', inputPipes: repIds.length });
      processes = proc;
      proc.stdout!.pipe(output, { end: false });
      await Promise.all(repIds.map((id, i) => feed(run, id, proc.inputs[i]!)));
      const exit = await proc.exited;
      if (!exit.expected && exit.code !== 0) log.warn({ label, code: exit.code, stderr: exit.stderrTail.slice(-300) }, 'live: MPEG-TS remux failed');
      runs.shift();
      if (!exit.expected && exit.code !== 0) break; // the client reconnects
    }
    close();
  })().catch((err) => {
    log.warn({ err, label }, 'live: MPEG-TS stream failed');
    close();
  });

  return { stream: output, close };
}
