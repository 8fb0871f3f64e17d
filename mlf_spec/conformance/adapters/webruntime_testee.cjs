// @mlc-ai/web-runtime (TVM's web runtime, npm) as a conformance testee of the tensor cache,
// in Node.js, speaking docs/conformance/protocol.md itself (a folder-shaped format: input_dir).
//
//   node webruntime_testee.cjs NODE_MODULES_DIR info | serve | decode tensor-cache input_dir=PATH
//
// What runs is the package's own JavaScript, taken verbatim from its published bundle
// (lib/index.js; none of these is exported): getTensorCacheRecordBytes (the record's bytes,
// refused when byteOffset/nbytes are not safe non-negative integers or leave the shard),
// Instance.getPackedBF16Bytes (the size check of an f32-to-bf16 float32 record), and
// Instance.empty with Instance.makeShapeTuple and CacheState.computeShapeKey (the JavaScript
// half of allocating the record's array: shape.toString() and shape.map, which refuse a shape
// that is missing or not an array), and the steps of Instance.fetchTensorCache /
// fetchTensorCacheInternal that need no WebAssembly: the index URL new URL("tensor-cache.json",
// cacheUrl), its text parsed as fetch().json() does (UTF-8 with replacement, JSON.parse), the
// shard URLs new URL(shard.dataPath, cacheUrl), the shard as bytes, records in order (the
// bf16 size check, empty(rec.shape, rec.dtype, cpu), the record's bytes), the metadata merged
// as cacheMetadata.
//
// Not run (C++ compiled to wasm, or browser-only): the wasm calls under Instance.empty
// (ctx.makeShapeTuple, ctx.tensorEmpty: dtype parsing, extent and size checks, allocation; here
// stubs that take their arguments), ctx.arrayDecodeStorage (tvmjs.array.decode_storage, whose
// size checks are in wasm), the Cache API / IndexedDB / OPFS layers. The digest of an
// f32-to-bf16 float32 record is of the float32 values that decoding gives (each bfloat16 shifted
// left 16 bits, as web/emcc/tvmjs_support.cc does): computed here, not by the package. A shard
// URL that leaves the folder holding the case's copy is refused here, not fetched (a browser
// would fetch it). Answers are written by writeJSON: the numbers as the runtime holds them
// (an integral double past 2^53 exactly, where JSON.stringify writes 2^62 as
// 4611686018427388000), without recursion (an index nested 5,000 levels deep is answered).
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const readline = require("readline");
const { pathToFileURL, fileURLToPath } = require("url");

function extractBody(source, header) {
  const start = source.indexOf(header);
  if (start < 0) throw new Error(`${header} not found in the bundle`);
  let depth = 0;
  for (let i = source.indexOf("{", start); i < source.length; i++) {
    if (source[i] === "{") depth++;
    else if (source[i] === "}" && --depth === 0) return source.slice(source.indexOf("{", start), i + 1);
  }
  throw new Error(`${header}: unbalanced braces`);
}

const modules = process.argv[2];
const pkgDir = path.join(modules, "node_modules", "@mlc-ai", "web-runtime");
const bundle = fs.readFileSync(path.join(pkgDir, "lib", "index.js"), "utf8");
const version = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")).version;
const getTensorCacheRecordBytes = new Function(
  `return function getTensorCacheRecordBytes(shardData, record) ${extractBody(bundle, "function getTensorCacheRecordBytes(")};`)();
const getPackedBF16Bytes = new Function(
  `return function getPackedBF16Bytes(shape) ${extractBody(bundle, "getPackedBF16Bytes(shape) {")};`)();
const Scalar = new Function(`return class Scalar ${extractBody(bundle, "class Scalar {")};`)();
const CacheState = { computeShapeKey: new Function(
  `return function computeShapeKey(shape) ${extractBody(bundle, "static computeShapeKey(shape) {")};`)() };
// an Instance holding the bundle's empty and makeShapeTuple; what they call in wasm is a stub
const instance = {
  empty: new Function(`return function empty(shape, dtype, dev) ${extractBody(bundle, "empty(shape, dtype = \"float32\", dev = this.device(\"cpu\", 0)) {")};`)(),
  makeShapeTuple: new Function("CacheState", "Scalar",
    `return function makeShapeTuple(shape) ${extractBody(bundle, "makeShapeTuple(shape) {")};`)(CacheState, Scalar),
  cacheState: { shapeCache: { get: (key, make) => make() } },
  ctx: { makeShapeTuple: (...extents) => extents, tensorEmpty: (shape, dtype, dev) => ({ shape, dtype, dev }) },
  detachFromCurrentScope: (obj) => obj,
};
const CPU = { deviceType: 1, deviceId: 0 };

// The JSON text of an answer, as JSON.stringify writes it but iterative (no call stack depth
// per nesting level) and with an integral double past 2^53 written as the integer it is.
function writeJSON(root) {
  const out = [];
  const todo = [[root, false]];
  const skipped = (x) => x === undefined || typeof x === "function" || typeof x === "symbol";
  while (todo.length) {
    const [v, literal] = todo.pop();
    if (literal) out.push(v);
    else if (typeof v === "number") {
      out.push(!Number.isFinite(v) ? "null" : Number.isInteger(v) && Math.abs(v) >= 2 ** 53
        ? BigInt(v).toString() : JSON.stringify(v));
    } else if (typeof v === "string" || typeof v === "boolean") out.push(JSON.stringify(v));
    else if (v === null || typeof v !== "object") out.push("null");
    else if (Array.isArray(v)) {
      out.push("[");
      todo.push(["]", true]);
      for (let i = v.length - 1; i >= 0; i--) {
        todo.push([skipped(v[i]) ? null : v[i], false]);
        if (i) todo.push([",", true]);
      }
    } else {
      const keys = Object.keys(v).filter((k) => !skipped(v[k]));
      out.push("{");
      todo.push(["}", true]);
      for (let i = keys.length - 1; i >= 0; i--) {
        todo.push([v[keys[i]], false]);
        todo.push([JSON.stringify(keys[i]) + ":", true]);
        if (i) todo.push([",", true]);
      }
    }
  }
  return out.join("");
}

function info() {
  return { protocol: "mlf-conformance/1", name: "@mlc-ai/web-runtime", version, serve: true,
           formats: [{ format: "tensor-cache", roles: ["decode"], scope: { version: ["2"] } }] };
}

function sha256(bytes) {
  return crypto.createHash("sha256").update(bytes).digest("hex");
}

function bf16ToF32(bytes) {
  const out = new Uint8Array((bytes.length >> 1) * 4);
  for (let i = 0; i + 1 < bytes.length; i += 2) {
    out[2 * i + 2] = bytes[i];
    out[2 * i + 3] = bytes[i + 1];
  }
  return out;
}

function decode(folder) {
  const base = pathToFileURL(path.resolve(folder) + "/");
  const fence = pathToFileURL(path.dirname(path.resolve(folder)) + "/").href;
  const jsonUrl = new URL("tensor-cache.json", base);
  const list = JSON.parse(new TextDecoder("utf-8").decode(fs.readFileSync(fileURLToPath(jsonUrl))));
  const tensors = [];
  for (const shard of list["records"]) {
    const dataUrl = new URL(shard.dataPath, base).href;
    if (!dataUrl.startsWith(fence)) throw new Error(`shard URL outside the case's folder, not fetched: ${dataUrl}`);
    const shardBytes = new Uint8Array(fs.readFileSync(fileURLToPath(dataUrl)));
    for (const rec of shard.records) {
      const isPackedBF16 = rec.format === "f32-to-bf16" && rec.dtype === "float32";
      if (isPackedBF16) {
        const expectedBytes = getPackedBF16Bytes(rec.shape);
        if (rec.nbytes !== expectedBytes) {
          throw new Error(`Packed BF16 record has ${rec.nbytes} bytes, but shape requires ${expectedBytes}`);
        }
      }
      instance.empty(rec.shape, rec.dtype, CPU);  // fetchTensorCacheInternal's cpu_arr
      const recBytes = getTensorCacheRecordBytes(shardBytes, rec);
      tensors.push({ name: rec.name, dtype: rec.dtype, shape: rec.shape,
                     sha256: sha256(isPackedBF16 ? bf16ToF32(recBytes) : recBytes) });
    }
  }
  const out = { format: "tensor-cache", tensors };
  if (list["metadata"] !== undefined) out.metadata = Object.assign({}, list["metadata"]);
  return out;
}

function folderOf(args) {
  const arg = args.find((a) => a.startsWith("input_dir="));
  if (!arg) throw new Error("tensor-cache needs input_dir=PATH");
  return arg.slice("input_dir=".length);
}

function main() {
  const [verb, fmt, ...args] = process.argv.slice(3);
  if (verb === "info") {
    process.stdout.write(writeJSON(info()) + "\n");
    return 0;
  }
  if (verb === "serve") {
    const rl = readline.createInterface({ input: process.stdin });
    rl.on("line", (line) => {
      if (!line.trim()) return;
      let id = -1;
      let resp;
      try {
        const req = JSON.parse(line);
        id = Number.isInteger(req.id) ? req.id : -1;
        if (req.op !== "decode" || req.format !== "tensor-cache" || typeof req.input_dir !== "string") {
          resp = { ok: false, error: { class: "protocol", message: "only decode of tensor-cache with input_dir" }, id };
        } else {
          try {
            // (the id last: a line the runner cannot read is quoted from its start, the same in every run)
            resp = { ok: true, reading: decode(req.input_dir), id };
          } catch (err) {
            resp = { ok: false, error: { message: String(err && err.message ? err.message : err).slice(0, 300) }, id };
          }
        }
      } catch (err) {
        resp = { ok: false, error: { class: "protocol", message: `bad request: ${err}` }, id };
      }
      process.stdout.write(writeJSON(resp) + "\n");
    });
    return undefined;
  }
  if (verb === "decode" && fmt === "tensor-cache") {
    try {
      process.stdout.write(writeJSON(decode(folderOf(args))) + "\n");
      return 0;
    } catch (err) {
      const message = String(err && err.message ? err.message : err).slice(0, 300);
      process.stderr.write(message + "\n");
      process.stdout.write(writeJSON({ error: { message } }) + "\n");
      return 1;
    }
  }
  process.stderr.write("usage: info | serve | decode tensor-cache input_dir=PATH\n");
  return 2;
}

const status = main();
if (status !== undefined) process.exitCode = status;
