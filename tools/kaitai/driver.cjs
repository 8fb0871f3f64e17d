#!/usr/bin/env node
// One Node.js process for every Kaitai Struct job of mlf-spec (driven by tools/kaitai/node.py).
//
//   node driver.cjs NODE_MODULES_PARENT < request.json > response.json
//
// request:  {"specs": {"<ksy id>": <parsed .ksy>, ...},
//            "compile": [{"lang": "python"|"javascript"|"graphviz"|..., "main": "<ksy id>", "debug": false}],
//            "skip_done": false,
//            "render": [{"name": "...", "dot": "<graphviz source>"}]}
// response: {"compiler": "0.11.0", "graphviz": "...", "require_ms": n,
//            "results": [{"lang", "main", "ms", "files": {"<file name>": "<source>"}} | {"lang", "main", "error"}],
//            "svgs": {"<name>": "<svg>"}}
//
// The npm build of the compiler has no command line, only compile(lang, spec, importer, debug);
// it takes parsed YAML, so the caller sends the .ksy files as JSON. Imports are resolved among
// the sent specs by their last path component (the exported .ksy files sit in one directory).
"use strict";
const path = require("path");
const { createRequire } = require("module");

const modulesParent = process.argv[2];
if (!modulesParent) {
  process.stderr.write("usage: node driver.cjs NODE_MODULES_PARENT < request.json\n");
  process.exit(2);
}
const requireFrom = createRequire(path.join(path.resolve(modulesParent), "package.json"));

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (c) => chunks.push(c));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

function message(e) {
  if (e && typeof e.getMessage === "function") return String(e.getMessage());
  if (e && e.message) return String(e.message);
  return String(e);
}

(async () => {
  const request = JSON.parse(await readStdin());
  const specs = request.specs || {};
  const response = { results: [], svgs: {} };
  const jobs = request.compile || [];
  if (jobs.length) {
    const t0 = process.hrtime.bigint();
    const KSC = requireFrom("kaitai-struct-compiler");
    response.require_ms = Number(process.hrtime.bigint() - t0) / 1e6;
    response.compiler = KSC.version;
    const importer = {
      importYaml(name, _mode) {
        const id = name.split("/").pop();
        if (!(id in specs)) return Promise.reject(new Error(`import ${name}: no such .ksy (${Object.keys(specs).join(", ")})`));
        return Promise.resolve(JSON.parse(JSON.stringify(specs[id])));
      },
    };
    // A compile also emits every file the main one imports; with "skip_done", a job whose
    // output an earlier job of the same language already produced is not run again.
    const key = (name) => name.replace(/\.[^.]*$/, "").replace(/_/g, "").toLowerCase();
    const done = new Set();
    for (const job of jobs) {
      if (request.skip_done && done.has(job.lang + ":" + key(job.main))) continue;
      const t1 = process.hrtime.bigint();
      try {
        const spec = JSON.parse(JSON.stringify(specs[job.main]));
        const files = await KSC.compile(job.lang, spec, importer, !!job.debug);
        for (const name of Object.keys(files)) done.add(job.lang + ":" + key(name));
        response.results.push({ lang: job.lang, main: job.main, ms: Number(process.hrtime.bigint() - t1) / 1e6, files });
      } catch (e) {
        response.results.push({ lang: job.lang, main: job.main, error: message(e) });
      }
    }
  }
  const renders = request.render || [];
  if (renders.length) {
    const viz = await requireFrom("@viz-js/viz").instance();
    response.graphviz = viz.graphvizVersion;
    for (const r of renders) {
      response.svgs[r.name] = viz.renderString(r.dot, { format: "svg" });
    }
  }
  process.stdout.write(JSON.stringify(response));
})().catch((e) => {
  process.stderr.write(`driver.cjs: ${message(e)}\n`);
  process.exit(1);
});
