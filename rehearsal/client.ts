/**
 * The rehearsal's caller of the emulated HTTP API: every request signed with SigV4 for execute-api
 * (with the fake credentials the gateway accepts), JSON in and out. Status codes are returned, not
 * thrown: scenarios check them.
 */
import { createSigner, type RequestSigner } from "../cli/signing.js";
import { FAKE_CREDENTIALS } from "./target/target.js";

export interface ApiAnswer<T = Record<string, unknown>> {
  status: number;
  body: T;
  text: string;
}

export class ApiCaller {
  private readonly signer: RequestSigner;

  constructor(
    readonly baseUrl: string,
    region: string,
  ) {
    this.signer = createSigner({ region, credentials: { ...FAKE_CREDENTIALS } });
  }

  async request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: {
      body?: unknown;
      rawBody?: string;
      query?: Record<string, string | undefined>;
      signed?: boolean;
    } = {},
  ): Promise<ApiAnswer<T>> {
    const url = new URL(path.replace(/^\//, ""), this.baseUrl);
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, value);
    const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    let headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (options.signed !== false)
      headers = await this.signer({ method, url, headers, ...(body === undefined ? {} : { body }) });
    const response = await fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? {} : JSON.parse(text);
    } catch {
      parsed = {};
    }
    return { status: response.status, body: parsed as T, text };
  }

  get<T = Record<string, unknown>>(
    path: string,
    query?: Record<string, string | undefined>,
  ): Promise<ApiAnswer<T>> {
    return this.request<T>("GET", path, query ? { query } : {});
  }

  post<T = Record<string, unknown>>(path: string, body: unknown = {}): Promise<ApiAnswer<T>> {
    return this.request<T>("POST", path, { body });
  }
}
