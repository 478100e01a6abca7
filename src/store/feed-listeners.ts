/**
 * The listeners of a store's `onFeedChange`: told synchronously, each on its own (one that throws does not keep the
 * others from hearing). A listener should only schedule its work.
 */
export function createFeedListeners() {
  const listeners = new Set<() => void>();
  return {
    add(listener: () => void): () => void {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    get size(): number {
      return listeners.size;
    },
    notify(): void {
      for (const listener of listeners) {
        try {
          listener();
        } catch {
          // The listener's own fault; the commit stands and the others still hear of it.
        }
      }
    },
  };
}
