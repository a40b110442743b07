/**
 * The player's keys: Space/K play-pause, ←/→ seek 10 s, F fullscreen,
 * Escape back. Keys typed into a field, or Space/Enter on a button, link or
 * menu, keep their usual meaning.
 */
const SEEK_SECONDS = 10;

function isField(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || !el.tagName) return false;
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName);
}

function isControl(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return Boolean(el?.closest?.('button, a, select, summary, [role="button"]'));
}

export function playerKeys(video: HTMLVideoElement, fullscreenTarget: HTMLElement, back: () => void): () => void {
  const onKey = (e: KeyboardEvent) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || isField(e.target)) return;
    const key = e.key.toLowerCase();
    if ((key === ' ' || key === 'k') && !(key === ' ' && isControl(e.target))) {
      if (video.paused) void video.play().catch(() => {}); else video.pause();
    } else if (key === 'arrowleft' || key === 'arrowright') {
      const to = video.currentTime + (key === 'arrowleft' ? -SEEK_SECONDS : SEEK_SECONDS);
      const end = Number.isFinite(video.duration) ? video.duration : to;
      video.currentTime = Math.max(0, Math.min(to, end));
    } else if (key === 'f') {
      if (document.fullscreenElement) void document.exitFullscreen().catch(() => {});
      else void fullscreenTarget.requestFullscreen?.().catch(() => {});
    } else if (key === 'escape') {
      // The browser's own Escape leaves fullscreen; only then does the next one go back.
      if (document.fullscreenElement) return;
      back();
    } else {
      return;
    }
    // The native controls would act on these keys a second time.
    e.preventDefault();
  };
  // Capture: ahead of the <video>'s own controls, which take some of these keys when it has focus.
  window.addEventListener('keydown', onKey, true);
  return () => window.removeEventListener('keydown', onKey, true);
}
