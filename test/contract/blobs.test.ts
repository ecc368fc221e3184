/**
 * The BlobStore contract, checked the same way on every adapter: in memory (its presigned requests
 * answered by the local runtime's HTTP server) and S3 (on this run's emulator).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type RunningHttpServer, startHttpServer } from "../../local/http-server.js";
import { MemoryBlobStore } from "../../shared/adapters/memory/blobs.js";
import { S3BlobStore } from "../../shared/adapters/s3/blobs.js";
import { ensureBucket } from "../../shared/adapters/s3/bucket.js";
import type { BlobStore } from "../../shared/ports.js";
import { type AwsClients, awsClients, uniqueName } from "../support/aws.js";

interface Subject {
  blobs: BlobStore;
  cleanup(): Promise<void>;
}

const subjects: Record<string, () => Promise<Subject>> = {
  memory: async () => {
    const blobs = new MemoryBlobStore();
    const server: RunningHttpServer = await startHttpServer({
      port: 0,
      blobs,
      handler: async () => ({ statusCode: 404 }),
    });
    blobs.baseUrl = server.url;
    return { blobs, cleanup: () => server.close() };
  },
  s3: async () => {
    const clients: AwsClients = awsClients(inject("awsEndpoints"));
    const bucket = uniqueName("contract-blobs").toLowerCase();
    await ensureBucket(clients.s3, bucket, { retentionDays: 1 });
    return {
      blobs: new S3BlobStore(clients.s3, bucket),
      cleanup: async () => clients.destroy(),
    };
  },
};

describe.each(Object.keys(subjects))("BlobStore contract: %s", (name) => {
  let subject: Subject;
  let blobs: BlobStore;

  beforeAll(async () => {
    subject = await subjects[name]!();
    blobs = subject.blobs;
  });
  afterAll(async () => {
    await subject?.cleanup();
  });

  it("keeps text exactly, unicode and control characters included, and tells its size in UTF-8 bytes", async () => {
    const text = '{"a":"ünïcödé \\u0000 🙂","b":-0,"c":1e400}';
    await blobs.put("ex/e1/k1.json", text);
    expect(await blobs.get("ex/e1/k1.json")).toBe(text);
    expect(await blobs.size("ex/e1/k1.json")).toBe(Buffer.byteLength(text, "utf8"));
  });

  it("answers undefined for a key it does not have", async () => {
    expect(await blobs.get("ex/none/missing.json")).toBeUndefined();
    expect(await blobs.size("ex/none/missing.json")).toBeUndefined();
  });

  it("takes a repeated write of a key (content addresses write the same bytes again)", async () => {
    await blobs.put("ex/e1/same.json", "[1,2,3]");
    await blobs.put("ex/e1/same.json", "[1,2,3]");
    expect(await blobs.get("ex/e1/same.json")).toBe("[1,2,3]");
  });

  it("keeps several MiB", async () => {
    const text = JSON.stringify("x".repeat(3 * 1024 * 1024));
    await blobs.put("ex/e1/big.json", text);
    expect(await blobs.size("ex/e1/big.json")).toBe(text.length);
    expect(await blobs.get("ex/e1/big.json")).toBe(text);
  });

  it("hands out a presigned upload that stores what the client PUTs, and a presigned download of it", async () => {
    const text = JSON.stringify({ uploaded: "é".repeat(1000) });
    const bytes = Buffer.byteLength(text, "utf8");
    const upload = await blobs.uploadRequest("up/token-1", bytes, 300);
    expect(upload).toBeDefined();
    expect(upload!.method).toBe("PUT");
    const put = await fetch(upload!.url, { method: "PUT", headers: upload!.headers, body: text });
    expect(put.status).toBe(200);
    expect(await blobs.get("up/token-1")).toBe(text);
    const download = await blobs.downloadRequest("up/token-1", 300);
    const got = await fetch(download!.url);
    expect(got.status).toBe(200);
    expect(await got.text()).toBe(text);
  });
});

// moto does not verify S3 signatures (real S3 does), so only the in-memory adapter, which signs its
// own requests, can show that a presigned request is good for its key alone.
describe("BlobStore: memory's presigned requests", () => {
  let subject: Subject;
  let blobs: BlobStore;

  beforeAll(async () => {
    subject = await subjects.memory!();
    blobs = subject.blobs;
  });
  afterAll(async () => {
    await subject?.cleanup();
  });

  it("refuses a presigned upload used for another key", async () => {
    const upload = await blobs.uploadRequest("up/token-2", 2, 300);
    const other = upload!.url.replace("token-2", "token-3");
    const put = await fetch(other, { method: "PUT", headers: upload!.headers, body: "[]" });
    expect(put.status).toBe(403);
    expect(await blobs.get("up/token-3")).toBeUndefined();
  });

  it("refuses an upload of another size than the one signed", async () => {
    const upload = await blobs.uploadRequest("up/token-4", 2, 300);
    const put = await fetch(upload!.url, { method: "PUT", body: "[1,2]" });
    expect(put.status).toBe(403);
    expect(await blobs.get("up/token-4")).toBeUndefined();
  });
});
