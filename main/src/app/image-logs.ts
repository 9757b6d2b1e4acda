// The output of each image's latest build or pull, line by line, as the
// helper streams it in progress events (whoever started it: this app, the
// CLI, another person). Kept apart from the app state, which is sent whole
// after every change: a build prints thousands of lines. The renderer reads
// the logs once (image.logs) and follows image.output events.
import { MAX_IMAGE_LOG_LINES, type ImageLog, type ImageLogLine } from '../api/contract.js';

export class ImageLogs {
  private readonly logs = new Map<string, ImageLog>();
  private seq = 0;

  /** Adds a line of `job` to the image's log; a new job (another build, pull or push of it) starts the log again. */
  add(image: string, job: string, stage: string, message: string): ImageLogLine {
    const line = { seq: ++this.seq, stage, message, at: new Date().toISOString() };
    const log = this.logs.get(image);
    if (log?.job !== job) this.logs.set(image, { job, lines: [line] });
    else if (log.lines.push(line) > MAX_IMAGE_LOG_LINES) log.lines.shift();
    return line;
  }

  /** The image is gone: its log with it. */
  forget(image: string): void {
    this.logs.delete(image);
  }

  snapshot(): Record<string, ImageLog> {
    return Object.fromEntries(this.logs);
  }
}
