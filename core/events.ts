import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { EventBus } from '../sdk/services.js';

/** In-process events between plugins. A failing handler is logged, never breaks the emitter. */
export class EventBusImpl implements EventBus {
  private readonly emitter = new EventEmitter();

  constructor(private readonly log: Logger) {
    this.emitter.setMaxListeners(100);
  }

  emit(event: string, payload?: unknown): void {
    this.emitter.emit(event, payload);
  }

  on(event: string, handler: (payload: unknown) => void): () => void {
    const safe = (payload: unknown) => {
      try {
        handler(payload);
      } catch (err) {
        this.log.error({ err, event }, 'event handler failed');
      }
    };
    this.emitter.on(event, safe);
    return () => this.emitter.off(event, safe);
  }
}
