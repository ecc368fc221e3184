/** SigV4 signing of CLI requests, with static test credentials: no AWS, no credential chain. */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonText, WeftClient } from "../../cli/client.js";
import { CliError } from "../../cli/errors.js";
import { createSigner, isLoopback, regionFromHost, resolveSigningRegion } from "../../cli/signing.js";

const credentials = {
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
};
const signingDate = new Date("2026-01-02T03:04:05Z");

describe("createSigner", () => {
  it("adds an Authorization header with the execute-api credential scope", async () => {
    const sign = createSigner({ region: "eu-west-1", credentials, signingDate });
    const url = new URL("https://abc123.execute-api.eu-west-1.amazonaws.com/prod/executions?limit=5");
    const body = JSON.stringify({ workflow: "nightly-etl" });
    const headers = await sign({
      method: "POST",
      url,
      headers: { "content-type": "application/json" },
      body,
    });

    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20260102\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$/,
    );
    const signedHeaders = /SignedHeaders=([^,]+)/.exec(headers.authorization ?? "")?.[1]?.split(";");
    expect(signedHeaders).toEqual(expect.arrayContaining(["host", "x-amz-date", "content-type"]));
    expect(headers["x-amz-date"]).toBe("20260102T030405Z");
    expect(headers["content-type"]).toBe("application/json");
    // fetch sets Host itself; the signer must not hand it one.
    expect(Object.keys(headers).map((k) => k.toLowerCase())).not.toContain("host");
  });

  it("is deterministic for the same request and time, and changes with the body", async () => {
    const sign = createSigner({ region: "us-east-1", credentials, signingDate });
    const url = new URL("https://api.example.com/executions");
    const one = await sign({ method: "POST", url, headers: {}, body: "{}" });
    const two = await sign({ method: "POST", url, headers: {}, body: "{}" });
    const other = await sign({ method: "POST", url, headers: {}, body: '{"a":1}' });
    expect(one.authorization).toBe(two.authorization);
    expect(other.authorization).not.toBe(one.authorization);
    expect(one.authorization).toContain("/us-east-1/execute-api/aws4_request");
  });

  it("carries the session token of temporary credentials", async () => {
    const sign = createSigner({
      region: "eu-central-1",
      credentials: { ...credentials, sessionToken: "session-token-example" },
      signingDate,
    });
    const headers = await sign({
      method: "GET",
      url: new URL("https://x.example/executions/1"),
      headers: {},
    });
    expect(headers["x-amz-security-token"]).toBe("session-token-example");
  });
});

describe("signing decisions", () => {
  it("treats only loopback addresses as the local runtime", () => {
    for (const url of [
      "http://127.0.0.1:3000",
      "http://localhost:3000",
      "http://[::1]:3000",
      "http://127.1.2.3",
    ]) {
      expect(isLoopback(new URL(url)), url).toBe(true);
    }
    for (const url of ["https://abc.execute-api.eu-west-1.amazonaws.com/prod", "http://10.0.0.5:3000"]) {
      expect(isLoopback(new URL(url)), url).toBe(false);
    }
  });

  it("takes the region from --region, then the execute-api hostname, then AWS_REGION", () => {
    expect(regionFromHost("abc123.execute-api.ap-southeast-2.amazonaws.com")).toBe("ap-southeast-2");
    expect(regionFromHost("api.example.com")).toBeUndefined();
    const apiUrl = new URL("https://abc.execute-api.eu-west-1.amazonaws.com/prod");
    const custom = new URL("https://weft.example.com");
    expect(resolveSigningRegion(apiUrl, "us-west-2", { AWS_REGION: "us-east-1" })).toBe("us-west-2");
    expect(resolveSigningRegion(apiUrl, undefined, { AWS_REGION: "us-east-1" })).toBe("eu-west-1");
    expect(resolveSigningRegion(custom, undefined, { AWS_REGION: "us-east-1" })).toBe("us-east-1");
    expect(resolveSigningRegion(custom, undefined, { AWS_DEFAULT_REGION: "sa-east-1" })).toBe("sa-east-1");
    expect(resolveSigningRegion(custom, undefined, {})).toBeUndefined();
  });
});

describe("WeftClient with a signer", () => {
  let seen: IncomingHttpHeaders[] = [];
  let server: ReturnType<typeof createServer>;
  let baseUrl: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push(request.headers);
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ executions: [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("sends the signed headers on the wire", async () => {
    seen = [];
    const client = new WeftClient({
      baseUrl,
      signer: createSigner({ region: "eu-west-1", credentials, signingDate }),
    });
    await client.listExecutions({ status: "FAILED" });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.authorization).toContain(
      "Credential=AKIDEXAMPLE/20260102/eu-west-1/execute-api/aws4_request",
    );
    expect(seen[0]?.["x-amz-date"]).toBe("20260102T030405Z");
  });
});

describe("WeftClient uploads", () => {
  interface Seen {
    method: string;
    url: string;
    headers: IncomingHttpHeaders;
    body: Buffer;
  }
  let seen: Seen[] = [];
  let server: ReturnType<typeof createServer>;
  let origin: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks);
        seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
        if (request.url === "/prod/payloads") {
          const { bytes } = JSON.parse(body.toString("utf8")) as { bytes: number };
          const bucket = bytes === 13 ? "denied" : "bucket";
          response.writeHead(201, { "content-type": "application/json" });
          response.end(
            JSON.stringify({
              inputRef: "up/t-1",
              upload: {
                url: `${origin}/${bucket}/up/t-1?X-Amz-Signature=presigned`,
                method: "PUT",
                headers: { "content-length": String(bytes), "content-type": "application/json" },
              },
              expiresAt: "2026-01-02T03:19:05.000Z",
            }),
          );
        } else if (request.url?.startsWith("/denied/")) {
          response.writeHead(403, { "content-type": "application/xml" });
          response.end(
            "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error>",
          );
        } else {
          response.writeHead(request.url?.startsWith("/bucket/") ? 200 : 202, {
            "content-type": "application/json",
          });
          response.end(JSON.stringify({ executionId: "e-1", status: "RUNNING" }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const signedClient = () =>
    new WeftClient({
      baseUrl: `${origin}/prod`,
      signer: createSigner({ region: "eu-west-1", credentials, signingDate }),
    });

  it("signs POST /payloads, and PUTs the text to the presigned URL unsigned, with exactly its headers", async () => {
    seen = [];
    const client = signedClient();
    const text = '{"name":"Zoë","emoji":"😀"}';
    const bytes = Buffer.byteLength(text, "utf8");
    const ticket = await client.createUpload(bytes);
    await client.upload(ticket, text);

    expect(seen.map((request) => `${request.method} ${request.url}`)).toEqual([
      "POST /prod/payloads",
      "PUT /bucket/up/t-1?X-Amz-Signature=presigned",
    ]);
    const [create, put] = seen as [Seen, Seen];
    expect(create.headers.authorization).toContain("/eu-west-1/execute-api/aws4_request");
    expect(JSON.parse(create.body.toString("utf8"))).toEqual({ bytes });
    expect(put.headers.authorization).toBeUndefined();
    expect(put.headers["x-amz-date"]).toBeUndefined();
    expect(put.headers["content-length"]).toBe(String(bytes));
    expect(put.headers["content-type"]).toBe("application/json");
    expect(put.body.toString("utf8")).toBe(text);
  });

  it("an upload refused: the answer's code and message, and never the URL's signature", async () => {
    const client = signedClient();
    const text = '{"a":"12345"}';
    const ticket = await client.createUpload(13);
    const error = await client.upload(ticket, text).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).message).toBe(
      `the upload of the input to ${origin}/denied/up/t-1 answered HTTP 403: SignatureDoesNotMatch: The request signature we calculated does not match`,
    );
  });

  it("sends an input given as JsonText exactly as its text", async () => {
    seen = [];
    const client = signedClient();
    await client.startExecution({ workflow: "w", input: new JsonText('{"zero":-0,"huge":1e400}') });
    expect(seen[0]?.body.toString("utf8")).toBe('{"workflow":"w","input":{"zero":-0,"huge":1e400}}');
    await client.startExecution({ workflow: "w", inputRef: "up/t-1" });
    expect(JSON.parse(seen[1]?.body.toString("utf8") ?? "")).toEqual({ workflow: "w", inputRef: "up/t-1" });
  });
});
