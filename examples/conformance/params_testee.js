#!/usr/bin/env node
// A .params reader in JavaScript, plugged into the mlf-spec conformance kit: the example of
// docs/conformance/guide.md for an implementation in another language (Node.js 18+, no
// dependencies). It speaks the testee protocol (docs/conformance/protocol.md):
//
//   node params_testee.js info
//   node params_testee.js decode params [dialect=v0.26] < file.params   (reading on stdout)
//   node params_testee.js serve                                          (JSON Lines)
//
// Run the vectors against it:
//   mlf-spec conformance run --testee "node examples/conformance/params_testee.js" \
//       --known-failures examples/conformance/params_testee.known-failures
"use strict";
const crypto = require("crypto");
const readline = require("readline");

const LIST_MAGIC = 0xf7e58d4f05049cb7n;
const TENSOR_MAGIC = 0xdd5e40f096b4a13fn;

class Rejected extends Error {
  constructor(message, errorClass) {
    super(message);
    this.errorClass = errorClass;
  }
}

// Read a .params file into the canonical reading (names, DLDataType, shape, digests).
function decodeParams(buf) {
  let pos = 0;
  const need = (n, what) => {
    if (n > buf.length - pos) throw new Rejected(`${what}: needs ${n} bytes at ${pos}, ${buf.length - pos} left`, "truncated");
  };
  const u64 = (what) => { need(8, what); const v = buf.readBigUInt64LE(pos); pos += 8; return v; };
  const i64 = (what) => { need(8, what); const v = buf.readBigInt64LE(pos); pos += 8; return v; };
  const i32 = (what) => { need(4, what); const v = buf.readInt32LE(pos); pos += 4; return v; };
  const count = (what, each) => {
    const n = u64(what);
    if (n * BigInt(each) > BigInt(buf.length - pos)) throw new Rejected(`${what}: ${n} is more than the file holds`, "length");
    return Number(n);
  };
  if (u64("magic") !== LIST_MAGIC) throw new Rejected("not a .params file (list magic)", "bad_constant");
  const reserved = u64("reserved");
  const names = [];
  for (let i = count("names", 8); i > 0; i--) {
    const len = count("name length", 1);
    const raw = buf.subarray(pos, pos + len);
    const text = raw.toString("utf8");  // bytes that are not UTF-8 become U+FFFD ...
    names.push(Buffer.from(text, "utf8").equals(raw) ? { name: text } : { name: text, name_hex: raw.toString("hex") });
    pos += len;
  }
  const n = count("count", 40);
  if (n !== names.length) throw new Rejected(`${n} tensors for ${names.length} names`, "count_mismatch");
  const tensors = [];
  for (let k = 0; k < n; k++) {
    if (u64("tensor magic") !== TENSOR_MAGIC) throw new Rejected(`tensor ${k}: bad magic`, "bad_constant");
    const recReserved = u64("tensor reserved");
    const deviceType = i32("device_type");
    const deviceId = i32("device_id");
    if (deviceType !== 1) throw new Rejected(`tensor ${k}: device type ${deviceType}, only CPU (1) loads`, "constraint");
    const ndim = i32("ndim");
    if (ndim < 0 || ndim > 64) throw new Rejected(`tensor ${k}: ndim ${ndim}`, "constraint");
    need(4, "dtype");
    const code = buf.readUInt8(pos), bits = buf.readUInt8(pos + 1), lanes = buf.readUInt16LE(pos + 2);
    pos += 4;
    const shape = [];
    let numel = 1n;
    for (let d = 0; d < ndim; d++) {
      const s = i64("shape");
      if (s < 0n) throw new Rejected(`tensor ${k}: negative extent`, "constraint");
      shape.push(s);  // a BigInt: written exactly by toJson (2^63 - 1 is not a double)
      numel *= s;
    }
    const nbytes = i64("data_byte_size");
    if (nbytes !== numel * BigInt(Math.ceil(bits / 8))) throw new Rejected(`tensor ${k}: data_byte_size ${nbytes}`, "constraint");
    need(Number(nbytes), "data");
    const data = buf.subarray(pos, pos + Number(nbytes));
    pos += Number(nbytes);
    tensors.push({
      ...names[k], code, bits, lanes, shape, nbytes: Number(nbytes),  // ... and the name's bytes are given in hex
      sha256: crypto.createHash("sha256").update(data).digest("hex"),
      device_type: deviceType, device_id: deviceId, reserved: recReserved,
    });
  }
  return { format: "params", reserved, tensors, trailing_bytes: buf.length - pos };
}

// JSON with 64-bit integers written exactly (a JavaScript number keeps only 53 bits).
function toJson(value) {
  return JSON.stringify(value, (k, v) => (typeof v === "bigint" ? `__bigint__${v}` : v))
    .replace(/"__bigint__(-?[0-9]+)"/g, "$1");
}

function info() {
  return {
    protocol: "mlf-conformance/1", name: "params_testee.js", version: "1.0", serve: true,
    formats: [{ format: "params", roles: ["decode"], scope: { dialect: ["v0.23", "v0.26"] } }],
  };
}

function answer(request) {
  const reply = { id: request.id };
  try {
    if (request.op !== "decode" || request.format !== "params") throw new Rejected(`cannot ${request.op} ${request.format}`);
    reply.reading = decodeParams(Buffer.from(request.input, "base64"));
    reply.ok = true;
  } catch (e) {
    if (!(e instanceof Rejected)) return { id: request.id, ok: false, error: { class: "internal", message: String(e) } };
    reply.ok = false;
    reply.error = { message: e.message, ...(e.errorClass ? { class: e.errorClass } : {}) };
  }
  return reply;
}

function main(args) {
  if (args[0] === "info") {
    process.stdout.write(toJson(info()) + "\n");
  } else if (args[0] === "serve") {
    const rl = readline.createInterface({ input: process.stdin });
    rl.on("line", (line) => { if (line.trim()) process.stdout.write(toJson(answer(JSON.parse(line))) + "\n"); });
  } else if (args[0] === "decode") {
    const chunks = [];
    process.stdin.on("data", (c) => chunks.push(c));
    process.stdin.on("end", () => {
      const r = answer({ id: 0, op: "decode", format: args[1], input: Buffer.concat(chunks).toString("base64") });
      if (r.ok) {
        process.stdout.write(toJson(r.reading) + "\n");
      } else {
        process.stderr.write(r.error.message + "\n");
        process.stdout.write(toJson({ error: r.error }) + "\n");
        process.exitCode = 1;
      }
    });
  } else {
    process.stderr.write("usage: info | decode params | serve\n");
    process.exitCode = 2;
  }
}

main(process.argv.slice(2));
