/**
 * Why a live session does not play, told twice: the kind of failure, which any
 * user may read (it never holds an upstream URL or ffmpeg's output), and the
 * detail for administrators and the log (ffmpeg's telling line, with the
 * source's secrets already redacted by the ffmpeg service).
 */
import { errors, isAppError, type AppError } from 'antenna/sdk';

export interface LiveFailure {
  status: 502 | 503;
  /** What went wrong, in words for any user: "the source answered HTTP 404". */
  kind: string;
  /** What an administrator may see: the redacted line of ffmpeg's output, or the tuner's message. */
  detail: string;
  /** Seconds before trying again is worth it. */
  retryAfter: number;
}

const RETRY_SECONDS = 5;

/** The kind of failure ffmpeg's output tells of. */
export function kindOf(stderr: string): string {
  if (/connection refused/i.test(stderr)) return 'the source refused the connection';
  const http = /(?:HTTP error|Server returned) (\d{3})/i.exec(stderr) ?? /\b([45]\d\d) (?:Not Found|Forbidden|Unauthorized|Bad Request|Gone|Internal Server Error|Bad Gateway|Service Unavailable)\b/i.exec(stderr);
  if (http) return `the source answered HTTP ${http[1]}`;
  if (/timed? ?out/i.test(stderr)) return 'the source did not answer in time';
  if (/resolv|name or service not known|no address associated/i.test(stderr)) return "the source's address could not be found";
  if (/no such file|protocol not found|permission denied|not supported/i.test(stderr)) return 'the source could not be opened';
  if (/invalid data|could not find codec|does not contain any stream|end of file/i.test(stderr)) return 'the source sent no playable stream';
  return 'the stream stopped';
}

/**
 * ffmpeg's exit as a failure: the line of its output that says what went wrong, and its kind;
 * or what the tuner told, when it read the upstream itself (ffmpeg saw only the tuner's answer).
 */
export function ffmpegFailure(stderrTail: string, code: number | null, told?: { kind: string; detail: string }): LiveFailure {
  if (told) return { status: 502, kind: told.kind, detail: told.detail, retryAfter: RETRY_SECONDS };
  const lines = stderrTail.split('\n').map((l) => l.trim()).filter(Boolean);
  const telling = [...lines].reverse().find((l) => /error|refused|not found|forbidden|denied|invalid|failed|unable|timed out|no route|no such|404|403|500/i.test(l));
  const detail = telling ? telling.replace(/^\[[^\]]+\]\s*/, '').slice(0, 300) : `ffmpeg exited with code ${code}`;
  return { status: 502, kind: kindOf(stderrTail), detail, retryAfter: RETRY_SECONDS };
}

/** A tuner's refusal to open the stream (an AppError or anything else it threw). */
export function tunerFailure(err: unknown): LiveFailure {
  const status = isAppError(err) && (err as AppError).statusCode === 503 ? 503 : 502;
  return { status, kind: 'the source could not be opened', detail: (err as Error)?.message ?? String(err), retryAfter: RETRY_SECONDS };
}

export const notReady = (seconds: number, why?: LiveFailure): LiveFailure => ({
  status: 503, kind: `the stream did not start within ${seconds} s`, detail: why ? `${why.kind}: ${why.detail}` : 'no segment yet', retryAfter: RETRY_SECONDS,
});

/** The sentence a user reads; an administrator gets the detail after it. */
export function describe(channelName: string, failure: LiveFailure, admin: boolean): string {
  const text = `Channel ${JSON.stringify(channelName)} cannot be played: ${failure.kind}`;
  return admin && failure.detail && failure.detail !== failure.kind ? `${text} (${failure.detail})` : text;
}

export function failureError(channelName: string, failure: LiveFailure, admin: boolean): AppError {
  const message = describe(channelName, failure, admin);
  return failure.status === 503 ? errors.unavailable(message, failure.retryAfter) : errors.badGateway(message, failure.retryAfter);
}
