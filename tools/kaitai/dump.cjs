#!/usr/bin/env node
// Parse files with Kaitai-generated JavaScript parsers and print neutral dumps (see
// mlf_spec/kaitai/reading.py) as JSON, one process for a whole batch.
//
//   node dump.cjs NODE_MODULES_PARENT COMPILED_JS_DIR < request.json > response.json
//
// request:  {"specs": {"<ksy id>": <parsed .ksy>, ...},
//            "files": [{"root": "<ksy id>", "tvm_minor": 27 | null, "data": "<base64>"}, ...]}
// response: [{"ok": true, "tree": <dump>} | {"ok": false, "error": {"name", "message"}}, ...]
//
// A dump holds, per object, the seq fields by their .ksy id (the generated JavaScript names
// them in lowerCamelCase; the .ksy files give the way back) and the _raw_* bytes; bytes are
// {"$base64": ...}; NaN, infinities and integral doubles beyond 2^53 {"$float": "..."}.
"use strict";
const path = require("path");
const { createRequire } = require("module");

const [modulesParent, jsDir] = process.argv.slice(2);
const requireFrom = createRequire(path.join(path.resolve(modulesParent), "package.json"));
// The generated modules require("kaitai-struct/KaitaiStream") and their siblings by name.
process.env.NODE_PATH = [path.resolve(modulesParent, "node_modules"), path.resolve(jsDir)].join(path.delimiter);
require("module").Module._initPaths();
const KaitaiStream = requireFrom("kaitai-struct/KaitaiStream");

const camel = (id) => id.replace(/_(.)/g, (_, c) => c.toUpperCase());
const upper = (id) => id.split("_").map((p) => p.charAt(0).toUpperCase() + p.slice(1)).join("");

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (c) => chunks.push(c));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

(async () => {
  const request = JSON.parse(await readStdin());
  // class name -> {jsName: ksyId} of its seq fields
  const fields = {};
  const addType = (name, t) => {
    const m = (fields[upper(name)] = fields[upper(name)] || {});
    for (const e of t.seq || []) m[camel(e.id)] = e.id;
    for (const [n, sub] of Object.entries(t.types || {})) addType(n, sub);
  };
  for (const [id, spec] of Object.entries(request.specs)) addType(id, spec);

  function dump(v) {
    if (v instanceof Uint8Array) return { $base64: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") };
    if (Array.isArray(v)) return v.map(dump);
    // a double that JSON would print as a (wrong) exact integer, or NaN / Infinity
    if (typeof v === "number") return Number.isFinite(v) && (!Number.isInteger(v) || Number.isSafeInteger(v)) ? v : { $float: String(v) };
    if (v && typeof v === "object" && v._io !== undefined) {
      const names = fields[v.constructor.name] || {};
      const out = {};
      for (const k of Object.keys(v)) {
        if (k.startsWith("_raw_")) out["_raw_" + (names[k.slice(5)] || k.slice(5))] = dump(v[k]);
        else if (k in names && v[k] !== undefined) out[names[k]] = dump(v[k]);
      }
      return out;
    }
    return v;
  }

  const results = [];
  for (const f of request.files) {
    try {
      const Root = require(upper(f.root))[upper(f.root)];
      const stream = new KaitaiStream(Buffer.from(f.data, "base64"));
      const obj = f.tvm_minor === null || f.tvm_minor === undefined
        ? new Root(stream) : new Root(stream, null, null, f.tvm_minor);
      results.push({ ok: true, tree: dump(obj) });
    } catch (e) {
      results.push({ ok: false, error: { name: (e && e.name) || "Error", message: String((e && e.message) || e) } });
    }
  }
  process.stdout.write(JSON.stringify(results));
})().catch((e) => {
  process.stderr.write(`dump.cjs: ${e && e.stack || e}\n`);
  process.exit(1);
});
