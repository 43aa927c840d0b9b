/** The parts of an Express response or a Fastify reply that can set a header. */
interface HeaderWriter {
  headersSent?: boolean;
  sent?: boolean;
  header?: (name: string, value: string) => unknown;
  setHeader?: (name: string, value: string) => unknown;
}

/**
 * A header setter for the HTTP response of an execution context, written against what the
 * response object offers rather than a platform: Fastify replies have `header()`, Express
 * responses both `header()` and Node's `setHeader()`. Does nothing once headers are sent.
 */
export function responseHeaderSetter(response: unknown): (name: string, value: string) => void {
  return (name, value) => {
    if (typeof response !== 'object' || response === null) return;
    const res = response as HeaderWriter;
    if (res.headersSent === true || res.sent === true) return;
    if (typeof res.header === 'function') res.header(name, value);
    else if (typeof res.setHeader === 'function') res.setHeader(name, value);
  };
}
