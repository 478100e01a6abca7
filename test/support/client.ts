/**
 * A small HTTPS client for black-box tests: JSON in, parsed JSON (or text) out, with the controller's CA
 * trusted, optional `zt-session` token and optional client certificate. Built on node:https so tests can
 * present client certificates and inspect every header.
 */
import { request as httpsRequest } from 'node:https';

export interface HttpResponse<T = any> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body bytes/text sent as-is (with `contentType`). */
  rawBody?: string | Buffer;
  contentType?: string | null;
  token?: string;
  headers?: Record<string, string>;
  cert?: string;
  key?: string;
  /** Send the path exactly as written (no URL normalisation of `.` and `..` segments). */
  asIs?: boolean;
}

export interface HttpClient {
  baseUrl: string;
  request<T = any>(method: string, path: string, opts?: RequestOptions): Promise<HttpResponse<T>>;
  get<T = any>(path: string, opts?: RequestOptions): Promise<HttpResponse<T>>;
  post<T = any>(path: string, body?: unknown, opts?: RequestOptions): Promise<HttpResponse<T>>;
  put<T = any>(path: string, body?: unknown, opts?: RequestOptions): Promise<HttpResponse<T>>;
  patch<T = any>(path: string, body?: unknown, opts?: RequestOptions): Promise<HttpResponse<T>>;
  delete<T = any>(path: string, opts?: RequestOptions): Promise<HttpResponse<T>>;
  /** The same client with a session token (and/or client certificate) applied to every request. */
  as(auth: { token?: string; cert?: string; key?: string }): HttpClient;
}

export function createClient(baseUrl: string, ca: string, defaults: RequestOptions = {}): HttpClient {
  const send = <T>(method: string, path: string, opts: RequestOptions = {}): Promise<HttpResponse<T>> => {
    const o = { ...defaults, ...opts, headers: { ...defaults.headers, ...opts.headers } };
    const url = new URL(path.startsWith('http') ? path : baseUrl + path);
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
    let payload: string | Buffer | undefined;
    if (o.rawBody !== undefined) {
      payload = o.rawBody;
      if (o.contentType) headers['content-type'] = o.contentType;
    } else if (o.body !== undefined) {
      payload = JSON.stringify(o.body);
      if (o.contentType !== null) headers['content-type'] = o.contentType ?? 'application/json';
    }
    if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
    if (o.token) headers['zt-session'] = o.token;
    return new Promise((resolve, reject) => {
      const where = o.asIs ? { hostname: url.hostname, port: url.port, path: new URL(baseUrl).pathname + path } : { hostname: url.hostname, port: url.port, path: url.pathname + url.search };
      const req = httpsRequest(
        { ...where, method, headers, ca, cert: o.cert, key: o.key, rejectUnauthorized: true, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: any = text;
            if (String(res.headers['content-type'] ?? '').includes('json') && text) {
              try {
                body = JSON.parse(text);
              } catch {
                body = text;
              }
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  };
  const client: HttpClient = {
    baseUrl,
    request: send,
    get: (p, o) => send('GET', p, o),
    post: (p, b, o) => send('POST', p, { ...o, body: b }),
    put: (p, b, o) => send('PUT', p, { ...o, body: b }),
    patch: (p, b, o) => send('PATCH', p, { ...o, body: b }),
    delete: (p, o) => send('DELETE', p, o),
    as: (auth) => createClient(baseUrl, ca, { ...defaults, ...auth }),
  };
  return client;
}
