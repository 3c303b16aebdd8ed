// sitemap.js (npm "sitemap") building gzip sitemaps plus an index from the benchmark JSONL, as its README shows
// (mode "readme": each URL reaches Node's gzip as its own write) or with writes coalesced into 64 KiB chunks
// before gzip (mode "coalesced"). Usage: node sitemapjs.mjs <readme|coalesced> <pages.jsonl> <out dir> <site>
import { createReadStream, createWriteStream, mkdirSync } from "node:fs";
import { createInterface } from "node:readline";
import { Transform } from "node:stream";
import { createGzip } from "node:zlib";
import { resolve } from "node:path";
import { SitemapAndIndexStream, SitemapStream } from "sitemap";

const [mode, input, outDir, site] = process.argv.slice(2);
mkdirSync(outDir, { recursive: true });

function coalescer() {
  let parts = [];
  let size = 0;
  return new Transform({
    transform(chunk, _encoding, done) {
      parts.push(chunk);
      size += chunk.length;
      if (size >= 65536) {
        this.push(Buffer.concat(parts));
        parts = [];
        size = 0;
      }
      done();
    },
    flush(done) {
      if (size) this.push(Buffer.concat(parts));
      done();
    },
  });
}

const pending = [];
const index = new SitemapAndIndexStream({
  limit: 10000,
  getSitemapStream: (i) => {
    const stream = new SitemapStream({ hostname: site });
    const name = `sitemap-${i}.xml.gz`;
    let piped = stream;
    if (mode === "coalesced") piped = piped.pipe(coalescer());
    const file = piped.pipe(createGzip()).pipe(createWriteStream(resolve(outDir, name)));
    pending.push(new Promise((ok) => file.on("finish", ok)));
    return [new URL(name, site + "/").toString(), stream, file];
  },
});
const indexFile = index.pipe(createWriteStream(resolve(outDir, "sitemap.xml")));
const lines = createInterface({ input: createReadStream(input), crlfDelay: Infinity });
for await (const line of lines) {
  if (!line) continue;
  const event = JSON.parse(line);
  if (event.type !== "upsert") continue;
  const item = { url: event.url, lastmod: event.lastmod };
  if (event.images) item.img = event.images.map((image) => ({ url: image.loc }));
  if (!index.write(item)) await new Promise((ok) => index.once("drain", ok));
}
index.end();
await new Promise((ok) => indexFile.on("finish", ok));
await Promise.all(pending);
