/**
 * A programme's details, opened from the guide: when it is on, what it is,
 * and Record (or cancel the recording), Watch while it is on air. A modal
 * <dialog>: Escape, the close button and a click outside close it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { href } from '../router.js';
import type { Recording } from '../types.js';
import { describeError, ErrorNote, formatDateTime, formatRuntime, toast } from '../ui.js';
import { ChannelLogo } from './guide-channel-logo.js';
import type { GuideProgram, GuideRow } from './guide-data.js';

interface Props {
  channel: GuideRow;
  program: GuideProgram;
  recording: Recording | undefined;
  now: number;
  onClose(): void;
  /** The recordings changed (or may have: a 409 says someone else scheduled it). */
  onRecordingsChanged(): void;
}

export function ProgramDialog({ channel, program: p, recording, now, onClose, onRecordingsChanged }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  useEffect(() => {
    const dialog = ref.current!;
    if (!dialog.open) dialog.showModal();
    return () => { if (dialog.open) dialog.close(); };
  }, []);

  const onAir = p.s <= now && p.e > now;
  const over = p.e <= now;

  const record = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const rec = await api<Recording>('/recordings', { method: 'POST', body: { channel_id: channel.id, program_id: p.id } });
      toast(rec.status === 'recording' ? `Recording “${p.title}” now.` : `“${p.title}” will be recorded (${formatDateTime(p.start)}).`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      onRecordingsChanged();
    }
  };

  const cancel = async () => {
    if (!recording) return;
    setBusy(true);
    setError(undefined);
    try {
      await api(`/recordings/${recording.id}`, { method: 'DELETE' });
      toast(`The recording of “${p.title}” is cancelled.`);
    } catch (err) {
      setError(err);
      toast(describeError(err), 'error');
    } finally {
      setBusy(false);
      onRecordingsChanged();
    }
  };

  return (
    <dialog ref={ref} class="program-dialog" aria-labelledby="program-dialog-title" onClose={onClose}
      onClick={(e) => { if (e.target === ref.current) ref.current?.close(); }}>
      <div class="program-dialog-body">
        <div class="program-dialog-head">
          <ChannelLogo name={channel.name} logo={channel.logo} />
          <div class="program-dialog-channel"><span class="channel-number">{channel.tvg_chno}</span> {channel.name}</div>
          <button type="button" class="icon-button" aria-label="Close" onClick={() => ref.current?.close()}>✕</button>
        </div>
        <h2 id="program-dialog-title">{p.title}</h2>
        {p.sub_title && <p class="program-dialog-sub">{p.sub_title}</p>}
        <p class="program-dialog-when">
          {formatDateTime(p.start)} – {new Date(p.stop).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}
          <span class="muted"> · {formatRuntime((p.e - p.s) / 1000)}</span>
          {p.episode_num && <span class="muted"> · {p.episode_num}</span>}
          {onAir && <span class="badge live">On now</span>}
          {over && <span class="badge">Ended</span>}
        </p>
        {recording && (
          <p class="program-dialog-rec" role="status">
            <span class="rec-dot" aria-hidden="true">●</span> {recording.status === 'recording' ? 'Recording now' : 'Scheduled to record'}
          </p>
        )}
        {p.categories?.length ? <div class="chips program-dialog-cats">{p.categories.map((c) => <span key={c} class="chip static">{c}</span>)}</div> : null}
        {p.description && <p class="program-dialog-desc">{p.description}</p>}
        {error !== undefined && <ErrorNote error={error} />}
        <div class="row program-dialog-actions">
          {onAir && <a class="button primary" href={href(`/watch/live/${channel.id}`)}>▶ Watch</a>}
          {recording
            ? <button type="button" class="button danger" disabled={busy} onClick={() => void cancel()}>Cancel recording</button>
            : !over && <button type="button" class={`button${onAir ? '' : ' primary'}`} disabled={busy} onClick={() => void record()}>● Record</button>}
          <button type="button" class="button ghost" onClick={() => ref.current?.close()}>Close</button>
        </div>
      </div>
    </dialog>
  );
}
