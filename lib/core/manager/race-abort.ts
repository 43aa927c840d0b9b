/**
 * `promise`, or the reason of the first of `signals` to abort, whichever comes first. The
 * promise itself runs on (an acquisition waiting for connections stops waiting, not connecting).
 */
export function raceAbort<T>(
  promise: Promise<T>,
  ...signals: (AbortSignal | undefined)[]
): Promise<T> {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  if (live.length === 0) return promise;
  for (const s of live) if (s.aborted) return Promise.reject(s.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (event: Event) => {
      cleanup();
      reject((event.target as AbortSignal).reason);
    };
    const cleanup = () => live.forEach((s) => s.removeEventListener('abort', onAbort));
    live.forEach((s) => s.addEventListener('abort', onAbort, { once: true }));
    promise.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (error: unknown) => {
        cleanup();
        reject(error);
      },
    );
  });
}
