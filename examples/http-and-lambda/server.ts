/**
 * A stand-in for the two HTTP services the lead-scoring example calls: a CRM (GET /leads/{id}) and a
 * chat webhook (POST /notifications). Run it with `npx tsx examples/http-and-lambda/server.ts`
 * (PORT, default 4010); tests import startServer() and give it a free port.
 */
import { createServer, type IncomingMessage } from "node:http";
import { pathToFileURL } from "node:url";

const LEADS: Record<string, unknown> = {
  "42": { id: "42", company: "Acme Logistics", employees: 850, country: "NL", visits: 7 },
  "43": { id: "43", company: "Tiny Tools", employees: 3, country: "PT", visits: 1 },
};

export interface ExampleServer {
  url: string;
  /** Bodies POSTed to /notifications, with the Idempotency-Key header weft sent. */
  notifications: Array<{ body: unknown; idempotencyKey: string | undefined }>;
  close(): Promise<void>;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? undefined : (JSON.parse(text) as unknown);
}

export function startServer(port = 4010, host = "127.0.0.1"): Promise<ExampleServer> {
  const notifications: ExampleServer["notifications"] = [];
  const server = createServer((request, response) => {
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    const url = new URL(request.url ?? "/", "http://localhost");
    const lead = /^\/leads\/([^/]+)$/.exec(url.pathname);
    if (request.method === "GET" && lead?.[1] !== undefined) {
      const found = LEADS[decodeURIComponent(lead[1])];
      return found ? send(200, found) : send(404, { error: "no such lead" });
    }
    if (request.method === "POST" && url.pathname === "/notifications") {
      readJson(request).then(
        (body) => {
          const key = request.headers["idempotency-key"];
          notifications.push({ body, idempotencyKey: Array.isArray(key) ? key[0] : key });
          send(202, { accepted: true, id: notifications.length });
        },
        () => send(400, { error: "the body is not JSON" }),
      );
      return;
    }
    send(404, { error: `no route for ${request.method} ${url.pathname}` });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const address = server.address();
      const actualPort = typeof address === "object" && address !== null ? address.port : port;
      resolve({
        url: `http://${host}:${actualPort}`,
        notifications,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = await startServer(Number(process.env.PORT ?? 4010));
  console.log(`example CRM and webhook listening on ${server.url} (Ctrl-C to stop)`);
}
