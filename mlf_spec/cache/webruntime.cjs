// Drive the tensor cache reading of @mlc-ai/web-runtime (TVM's web runtime) in Node.js,
// without the WebAssembly runtime it loads in a browser.
//
//   node webruntime.cjs NODE_MODULES_DIR CACHE_FOLDER...   -> one JSON line per folder
//
// What runs is the package's own code where it is JavaScript: the record slicing function
// getTensorCacheRecordBytes, taken verbatim from the published bundle (lib/index.js; it is not
// exported), and the steps of Instance.fetchTensorCache that need no wasm: the index URL
// new URL("tensor-cache.json", cacheUrl), JSON.parse of it (fetch().json()), the shard URLs
// new URL(shard.dataPath, cacheUrl), the shard bytes as an ArrayBuffer. Not covered: the
// decoding and allocation (Instance.empty, ctx.arrayDecodeStorage: C++ compiled to wasm,
// web/emcc/tvmjs_support.cc), the download/caching layers (Cache API, IndexedDB, OPFS).
// A shard URL outside the folder is reported and not read.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { pathToFileURL, fileURLToPath } = require("url");

function extractFunction(source, name) {
  const start = source.indexOf(`function ${name}(`);
  if (start < 0) throw new Error(`${name} not found in the bundle`);
  let depth = 0;
  for (let i = source.indexOf("{", start); i < source.length; i++) {
    if (source[i] === "{") depth++;
    else if (source[i] === "}" && --depth === 0) {
      return new Function(`${source.slice(start, i + 1)}; return ${name};`)();
    }
  }
  throw new Error(`${name}: unbalanced braces`);
}

function main() {
  const [modules, ...folders] = process.argv.slice(2);
  const pkgDir = path.join(modules, "node_modules", "@mlc-ai", "web-runtime");
  const bundle = fs.readFileSync(path.join(pkgDir, "lib", "index.js"), "utf8");
  const version = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")).version;
  const getTensorCacheRecordBytes = extractFunction(bundle, "getTensorCacheRecordBytes");
  for (const folder of folders) {
    const out = { folder, version, status: "ok", records: [], outside: [] };
    try {
      const base = pathToFileURL(path.resolve(folder) + "/");
      const jsonUrl = new URL("tensor-cache.json", base);
      const json = JSON.parse(fs.readFileSync(fileURLToPath(jsonUrl), "utf8"));
      const list = json.records;
      for (let i = 0; i < list.length; ++i) {
        const shard = list[i];
        const dataUrl = new URL(shard.dataPath, base);
        if (!dataUrl.href.startsWith(base.href)) {
          out.outside.push(dataUrl.href);
          throw new Error(`shard URL outside the cache folder: ${dataUrl.href}`);
        }
        const shardBytes = new Uint8Array(fs.readFileSync(fileURLToPath(dataUrl)));
        for (let j = 0; j < shard.records.length; ++j) {
          const rec = shard.records[j];
          const bytes = getTensorCacheRecordBytes(shardBytes, rec);
          out.records.push({ name: rec.name, nbytes: bytes.byteLength,
                             sha256: crypto.createHash("sha256").update(bytes).digest("hex") });
        }
      }
    } catch (err) {
      out.status = "error";
      out.error = String(err && err.message ? err.message : err).slice(0, 300);
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
}

main();
