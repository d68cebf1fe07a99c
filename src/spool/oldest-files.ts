/**
 * The oldest files of an inbox listing, at most `limit` of them held at once: a max-heap on
 * (mtime, name) whose top, the newest kept, gives way to an older file. A listing of 100,000
 * files then holds `limit` entries, not 100,000, and costs O(n log limit).
 */
export interface ListedFile {
  name: string;
  size: number;
  mtimeMs: number;
}

export interface OldestFiles {
  offer(file: ListedFile): void;
  /** Files offered and not kept (newer than the `limit` kept). */
  leftOut(): number;
  /** The files kept, oldest first (mtime, then name). */
  inOrder(): ListedFile[];
}

/** Arrival order of files found by a listing: mtime, then name. */
export function byArrival(a: ListedFile, b: ListedFile): number {
  return a.mtimeMs - b.mtimeMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

export function oldestFiles(limit: number): OldestFiles {
  const heap: ListedFile[] = [];
  let leftOut = 0;
  const isNewer = (i: number, j: number): boolean => byArrival(heap[i]!, heap[j]!) > 0;
  const swap = (i: number, j: number): void => {
    [heap[i], heap[j]] = [heap[j]!, heap[i]!];
  };
  const up = (start: number): void => {
    for (let i = start; i > 0 && isNewer(i, (i - 1) >> 1); i = (i - 1) >> 1) swap(i, (i - 1) >> 1);
  };
  const down = (): void => {
    for (let i = 0; ; ) {
      const [left, right] = [2 * i + 1, 2 * i + 2];
      let newest = i;
      if (left < heap.length && isNewer(left, newest)) newest = left;
      if (right < heap.length && isNewer(right, newest)) newest = right;
      if (newest === i) return;
      swap(i, newest);
      i = newest;
    }
  };
  return {
    offer(file) {
      if (heap.length < limit) {
        heap.push(file);
        up(heap.length - 1);
        return;
      }
      leftOut += 1;
      if (heap.length === 0 || byArrival(file, heap[0]!) >= 0) return;
      heap[0] = file;
      down();
    },
    leftOut: () => leftOut,
    inOrder: () => [...heap].sort(byArrival),
  };
}
