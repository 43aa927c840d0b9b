import http from 'node:http';

/** Status and body of one response. */
export interface Reply {
  status: number;
  body: string;
}

/**
 * A small HTTP client for the demo: keep-alive connections (so the burst measures the app and
 * the lock, not TCP handshakes), no retries, every failure a status of 0 rather than an
 * exception (the demo counts it as "other").
 */
export class LoadClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

  /** One request; `json` is sent as the body when given. */
  send(method: string, url: string, json?: unknown): Promise<Reply> {
    const payload = json === undefined ? undefined : JSON.stringify(json);
    return new Promise((resolve) => {
      const req = http.request(
        url,
        {
          method,
          agent: this.agent,
          headers: payload ? { 'content-type': 'application/json' } : undefined,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          res.on('error', (error) => resolve({ status: 0, body: String(error) }));
        },
      );
      req.on('error', (error) => resolve({ status: 0, body: String(error) }));
      req.end(payload);
    });
  }

  /**
   * `count` concurrent requests (`POST` unless told), alternately to each base URL; `onReply`
   * after each. Resolves with every reply, in request order.
   */
  burst(
    baseUrls: readonly string[],
    path: string,
    count: number,
    onReply: (done: number) => void = () => undefined,
    method = 'POST',
  ): Promise<Reply[]> {
    let done = 0;
    return Promise.all(
      Array.from({ length: count }, (_, i) =>
        this.send(method, `${baseUrls[i % baseUrls.length]}${path}`).then((reply) => {
          onReply(++done);
          return reply;
        }),
      ),
    );
  }

  /** Closes the idle keep-alive connections, so the instances can close at once. */
  close(): void {
    this.agent.destroy();
  }
}
