/**
 * Acknowledged writes are on disk, with one flush shared by many of them and none on the event loop.
 *
 * The database runs WAL with synchronous=NORMAL: a commit appends its frames to the WAL file (the operating system
 * holds them) without waiting for the disk, which already makes it survive a crash of the process. For a power
 * loss the WAL must reach the disk too: a request that wrote is answered only once a flush of the WAL file
 * (fdatasync, on libuv's pool, so the event loop goes on) that started after its commit has finished. One flush
 * covers every commit made before it started, so writers that arrive together share it; one that arrives while a
 * flush runs waits for the next. SQLite itself syncs the WAL before a checkpoint copies it into the database file,
 * and the database file after, so what a flush made durable stays so.
 *
 * What counts as "wrote": this connection's total_changes() moved since the last flush covered it. Another
 * process's commits are flushed by that process, before its own answers.
 */
import { open, stat, type FileHandle } from 'node:fs/promises';
import type { Db } from './database.ts';

export interface WalFlusher {
  /** Undefined when nothing was written since the last flush began; else a promise settled by a flush covering it. */
  durable(): Promise<void> | undefined;
  /** Flushes taken so far (for tests and benchmarks). */
  readonly flushes: number;
  close(): Promise<void>;
}

export interface WalFlusherOptions {
  /** The WAL file (default: the database file's path with `-wal`). */
  walPath?: string;
  /** Forces the file to disk (default fdatasync); a test may slow it down or fail it. */
  sync?: (file: FileHandle) => Promise<void>;
}

export function createWalFlusher(db: Db, options: WalFlusherOptions = {}): WalFlusher {
  const walPath = options.walPath ?? `${db.name}-wal`;
  const sync = options.sync ?? ((file: FileHandle) => file.datasync());
  const totalChanges = db.prepare('SELECT total_changes()').pluck();
  const changes = (): number => totalChanges.get() as number;

  let handle: FileHandle | undefined;
  let handleIno = 0;
  /** Changes covered by the last flush that finished. */
  let flushedThrough = changes();
  let running: { covers: number; done: Promise<void> } | undefined;
  let queued: Promise<void> | undefined;
  let flushes = 0;

  /** The open WAL file; opened again if SQLite replaced it (the inode changed). */
  async function walFile(): Promise<FileHandle> {
    const { ino } = await stat(walPath);
    if (handle && handleIno === ino) return handle;
    await handle?.close().catch(() => undefined);
    handle = await open(walPath, 'r+');
    handleIno = (await handle.stat()).ino;
    return handle;
  }

  function flush(): Promise<void> {
    // Everything committed until now is in the WAL file; the flush that starts here covers it.
    const covers = changes();
    const done = (async () => {
      await sync(await walFile());
      flushes++;
      flushedThrough = Math.max(flushedThrough, covers);
    })();
    running = { covers, done };
    done.then(
      () => {
        if (running?.done === done) running = undefined;
      },
      () => {
        if (running?.done === done) running = undefined;
      },
    );
    return done;
  }

  function durable(): Promise<void> | undefined {
    const now = changes();
    if (now <= flushedThrough) return undefined;
    if (running && running.covers >= now) return running.done;
    if (queued) return queued;
    // Start after the running flush (its outcome is its own waiters'), covering what is committed by then.
    const after = running ? running.done.catch(() => undefined) : Promise.resolve();
    const next = after.then(() => {
      queued = undefined;
      return flush();
    });
    queued = next;
    return next;
  }

  return {
    durable,
    get flushes() {
      return flushes;
    },
    async close() {
      await Promise.allSettled([running?.done, queued]);
      await handle?.close().catch(() => undefined);
      handle = undefined;
    },
  };
}
