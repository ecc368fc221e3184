/**
 * `weft dev` reloads the custom task folder while it runs: a change to any file of it (a save, a
 * new file, a removal) imports the folder afresh and puts the new task types in place of the old at
 * once. A folder that fails to load (a syntax error mid-edit, two tasks of one type) leaves the
 * running task types as they were and says why; the next save tries again.
 */
import { type FSWatcher, watch } from "node:fs";

/** Editors write a file in several steps (truncate, write, rename): one reload for the burst. */
const SETTLE_MS = 150;

export interface TaskFolderWatch {
  close(): void;
}

export function watchTaskFolder(options: {
  dir: string;
  /** Loads the folder afresh and puts it in place; answers the task types now registered. */
  reload: () => Promise<readonly string[]>;
  onReloaded: (types: readonly string[]) => void;
  onFailed: (error: unknown) => void;
}): TaskFolderWatch {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let closed = false;
  const schedule = () => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      // One reload at a time, in the order of the changes.
      running = running.then(async () => {
        if (closed) return;
        try {
          options.onReloaded(await options.reload());
        } catch (error) {
          options.onFailed(error);
        }
      });
    }, SETTLE_MS);
  };
  let watcher: FSWatcher | undefined = watch(options.dir, { persistent: false }, schedule);
  watcher.on("error", (error) => options.onFailed(error));
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      watcher?.close();
      watcher = undefined;
    },
  };
}
