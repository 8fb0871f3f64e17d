#!/usr/bin/env node
// Parse files with Kaitai-generated JavaScript parsers (compiled in debug mode) for the
// kaitai-js conformance adapter (kaitai.py): one process, one JSON request per line.
//
//   node kaitai_js.cjs NODE_MODULES_PARENT COMPILED_JS_DIR
//
// first line:  {"specs": {"<ksy id>": <parsed .ksy>, ...}}   (to map the generated names back)
// then:        {"op": "version"}  -> {"version": "<kaitai-struct runtime version>"}
//              {"op": "parse", "root": "<ksy id>", "tvm_minor": 27, "data": "<base64>"}
//              -> {"ok": true, "tree": <neutral dump>} | {"ok": false, "error": {"name", "message"}}
//
// A neutral dump holds, per object, its seq fields by .ksy id and its _raw_* bytes (as
// mlf_spec/kaitai/reading.py reads them: bytes as {"$base64"}, doubles JSON cannot hold as
// {"$float"}), plus "$spelling" (a dtype's spelling instance) and "$payload" (the bytes a
// payload took, from the positions the debug build records).
"use strict";
const path = require("path");
const readline = require("readline");
const { createRequire } = require("module");

const [modulesParent, jsDir] = process.argv.slice(2);
if (!modulesParent || !jsDir) {
  process.stderr.write("usage: node kaitai_js.cjs NODE_MODULES_PARENT COMPILED_JS_DIR\n");
  process.exit(2);
}
const requireFrom = createRequire(path.join(path.resolve(modulesParent), "package.json"));
process.env.NODE_PATH = [path.resolve(modulesParent, "node_modules"), path.resolve(jsDir)].join(path.delimiter);
require("module").Module._initPaths();
const KaitaiStream = requireFrom("kaitai-struct/KaitaiStream");
const runtimeVersion = requireFrom("kaitai-struct/package.json").version;

const camel = (id) => id.replace(/_(.)/g, (_, c) => c.toUpperCase());
const upper = (id) => id.split("_").map((p) => p.charAt(0).toUpperCase() + p.slice(1)).join("");
const fields = {}; // class name -> {jsName: ksyId}

function learn(specs) {
  const addType = (name, t) => {
    const m = (fields[upper(name)] = fields[upper(name)] || {});
    for (const e of t.seq || []) m[camel(e.id)] = e.id;
    for (const [n, sub] of Object.entries(t.types || {})) addType(n, sub);
  };
  for (const [id, spec] of Object.entries(specs)) addType(id, spec);
}

const b64 = (u8) => ({ $base64: Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("base64") });

function dump(v, data) {
  if (v instanceof Uint8Array) return b64(v);
  if (Array.isArray(v)) return v.map((x) => dump(x, data));
  if (typeof v === "number") {
    return Number.isFinite(v) && (!Number.isInteger(v) || Number.isSafeInteger(v)) ? v : { $float: String(v) };
  }
  if (v && typeof v === "object" && v._io !== undefined) {
    const names = fields[v.constructor.name] || {};
    const out = {};
    for (const k of Object.keys(v)) {
      if (k.startsWith("_raw_")) out["_raw_" + (names[k.slice(5)] || k.slice(5))] = dump(v[k], data);
      else if (k in names && v[k] !== undefined) out[names[k]] = dump(v[k], data);
    }
    if ("spelling" in Object.getPrototypeOf(v)) out.$spelling = v.spelling;
    const pos = v._debug && v._debug.payload;
    if (pos && pos.end !== undefined && out._raw_payload === undefined) {
      // ioOffset is the stream's offset in the underlying ArrayBuffer (a Buffer may sit inside a pool)
      out.$payload = b64(new Uint8Array(data.buffer, pos.ioOffset + pos.start, pos.end - pos.start));
    }
    return out;
  }
  return v;
}

function parse(request) {
  const data = Buffer.from(request.data, "base64");
  try {
    const Root = require(upper(request.root))[upper(request.root)];
    const stream = new KaitaiStream(data);
    const obj = request.tvm_minor === null || request.tvm_minor === undefined
      ? new Root(stream) : new Root(stream, null, null, request.tvm_minor);
    if (obj._debug !== undefined && Object.keys(obj._debug).length === 0) obj._read();
    return { ok: true, tree: dump(obj, data) };
  } catch (e) {
    return { ok: false, error: { name: (e && e.name) || "Error", message: String((e && e.message) || e) } };
  }
}

let learned = false;
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  const request = JSON.parse(line);
  let answer;
  if (!learned) {
    learn(request.specs || {});
    learned = true;
    return;
  }
  if (request.op === "version") answer = { version: runtimeVersion };
  else if (request.op === "parse") answer = parse(request);
  else answer = { ok: false, error: { name: "Error", message: `unknown op ${request.op}` } };
  process.stdout.write(JSON.stringify(answer) + "\n");
});
