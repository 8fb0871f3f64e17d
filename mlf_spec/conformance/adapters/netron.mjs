// Netron's TVM reader as a conformance testee (docs/conformance/protocol.md), run headless in
// Node.js (>= 18) from the JavaScript the PyPI package `netron` ships. Started by the `netron`
// adapter (netron.py), which passes where Netron is and what to declare:
//
//   node netron.mjs --netron DIR --version V --dialects v0.23,v0.26 (info | decode FORMAT [k=v ...] | serve)
//
// A file is opened the way the Netron app opens it: view.ModelFactoryService.open(context) on a
// context holding the bytes under a file name (`model.params`, `model.json`), so that Netron's
// own signature checks and format choice run. A file it cannot open is refused with Netron's
// message. The reading is what Netron's model shows:
//
// * params: the tensors attached to the model's nodes (name, Netron's dataType, shape, the bytes
//   Netron holds as the tensor's values), in the order the model lists them; (code, bits, lanes)
//   are those of Netron's spelling (its TVM reader spells only int<bits>, uint<bits>, float<bits>
//   with one lane and refuses every other DLDataType).
// * graph-json: the nodes and heads, put back in node-index order from the value names Netron
//   gives every edge ("[node,index]"): inputs are the simple argument nodes, operators are the
//   model's nodes (an operator nothing uses takes the first free index after the one before it).
//   A node Netron's model does not show (an argument nothing uses) is reported as op
//   "(not shown by Netron)". A file Netron opens with another of its readers is refused.
"use strict";
import * as crypto from 'crypto';
import * as path from 'path';
import * as readline from 'readline';
import { pathToFileURL } from 'url';

const args = process.argv.slice(2);
const opt = (name) => {
    const i = args.indexOf(name);
    if (i < 0 || i + 1 >= args.length) {
        process.stderr.write(`netron.mjs: missing ${name}\n`);
        process.exit(2);
    }
    const value = args[i + 1];
    args.splice(i, 2);
    return value;
};
const netronDir = opt('--netron');
const netronVersion = opt('--version');
const dialects = opt('--dialects').split(',').filter((x) => x);

const base = await import(pathToFileURL(path.join(netronDir, 'base.js')).href);
const view = await import(pathToFileURL(path.join(netronDir, 'view.js')).href);
const fs = await import('fs');

class Refused extends Error {}

const info = () => ({
    protocol: 'mlf-conformance/1', name: 'netron', version: netronVersion, serve: true,
    formats: [
        { format: 'params', roles: ['decode'], scope: { dialect: dialects } },
        { format: 'graph-json', roles: ['decode'], reads: ['nodes', 'heads'] },
    ],
});

// The host and context ModelFactoryService needs: modules and assets come from Netron's
// directory; there are no sibling files (one artifact per request).
const host = {
    async require(id) {
        return import(pathToFileURL(path.join(netronDir, `${id}.js`)).href);
    },
    async asset(name) {
        return fs.readFileSync(path.join(netronDir, name), 'utf-8');
    },
    exception() {},
};

async function open(bytes, identifier) {
    const errors = [];
    const context = {
        identifier,
        stream: new base.BinaryStream(bytes),
        entries: new Map(),
        asset: (name) => host.asset(name),
        require: (id) => host.require(id),
        async fetch(name) {
            throw new Error(`File not found '${name}'.`);
        },
        error(error) {
            errors.push(error);
        },
    };
    try {
        return await new view.ModelFactoryService(host).open(context);
    } catch (error) {
        throw new Refused(`${error.name || 'Error'}: ${error.message}`);
    }
}

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');
const number = (v) => (typeof v === 'bigint' ? Number(v) : (v && typeof v.toNumber === 'function' ? v.toNumber() : v));
const CODES = { int: 0, uint: 1, float: 2 };

function paramsReading(model) {
    const graph = model.modules[0];
    const tensors = [];
    const seen = new Set();
    const visit = (argument) => {
        for (const value of argument.value || []) {
            const t = value && value.initializer;
            if (t && !seen.has(t)) {
                seen.add(t);
                const m = /^(int|uint|float)(\d+)$/.exec(t.type.dataType);
                const bytes = t.values instanceof Uint8Array ? t.values : new Uint8Array(0);
                tensors.push({
                    name: t.name, dtype: t.type.dataType, code: m ? CODES[m[1]] : -1, bits: m ? Number(m[2]) : -1,
                    lanes: 1, shape: (t.type.shape.dimensions || []).map(number), nbytes: bytes.length,
                    sha256: sha256(bytes),
                });
            }
        }
    };
    for (const argument of graph.inputs || []) {
        visit(argument);
    }
    for (const node of graph.nodes || []) {
        for (const argument of node.inputs || []) {
            visit(argument);
        }
    }
    return { format: 'params', tensors };
}

// "[node,index]" -> [node, index, 0] (Netron drops the version); a part that is no number is null
const entry = (name) => {
    const parts = String(name || '').replace(/^\[|\]$/g, '').split(',');
    const numbers = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : null));
    return [numbers[0] ?? null, numbers.length > 1 ? numbers[1] : null, 0];
};
const NOT_SHOWN = () => ({ op: '(not shown by Netron)', name: '', inputs: [], attrs: {} });

function graphReading(model) {
    const graph = model.modules[0];
    const nodes = new Map();
    const argument = (nid, name) => {
        if (Number.isInteger(nid) && !nodes.has(nid)) {
            nodes.set(nid, { op: 'null', name, inputs: [], attrs: {} });
        }
    };
    for (const a of graph.inputs || []) {
        argument(entry(a.value[0].name)[0], a.name);
    }
    const operators = [];
    for (const node of graph.nodes || []) {
        const inputs = [];
        for (const a of node.inputs || []) {
            for (const value of a.value || []) {
                const e = entry(value.name);
                inputs.push(e);
                if (value.initializer) {  // an argument node Netron shows as a weight
                    argument(e[0], value.initializer.name);
                }
            }
        }
        const outputs = (node.outputs || []).flatMap((a) => (a.value || []).map((v) => entry(v.name)[0]));
        const attrs = Object.fromEntries((node.attributes || []).map((a) => [a.name, a.value]));
        operators.push({ index: outputs.find(Number.isInteger), node: { op: node.type.name, name: node.name, inputs, attrs } });
    }
    // Netron lists operators in node order: one whose index no edge names (nothing uses its
    // outputs) takes the first free index after the operator before it
    let next = 0;
    for (const { index, node } of operators) {
        let at = index;
        if (!Number.isInteger(at)) {
            at = next;
            while (nodes.has(at) || operators.some((o) => o.index === at)) {
                at++;
            }
        }
        nodes.set(at, node);
        next = at + 1;
    }
    const heads = (graph.outputs || []).map((a) => entry(a.value[0].name));
    const count = nodes.size === 0 ? 0 : Math.max(...nodes.keys()) + 1;
    const list = [];
    for (let i = 0; i < count; i++) {
        list.push(nodes.has(i) ? nodes.get(i) : NOT_SHOWN());
    }
    return { format: 'graph-json', nodes: list, heads };
}

async function decode(format, bytes) {
    const readers = { 'params': [paramsReading, 'model.params'], 'graph-json': [graphReading, 'model.json'] };
    if (!(format in readers)) {
        throw new Refused(`netron: no ${format}`);
    }
    const [reading, identifier] = readers[format];
    const model = await open(bytes, identifier);
    if (model.format !== 'TVM') {
        throw new Refused(`Netron opens it as ${model.format}, not with its TVM reader`);
    }
    return reading(model);
}

async function respond(line) {
    let id = -1;
    let request;
    try {
        request = JSON.parse(line);
        id = Number.isInteger(request.id) ? request.id : -1;
    } catch (error) {
        return { id, ok: false, error: { class: 'protocol', message: `bad request: ${error.message}` } };
    }
    if (request.op !== 'decode') {
        return { id, ok: false, error: { message: `netron does not ${request.op}` } };
    }
    try {
        const reading = await decode(request.format, new Uint8Array(Buffer.from(request.input || '', 'base64')));
        return { id, ok: true, reading };
    } catch (error) {
        if (error instanceof Refused) {
            return { id, ok: false, error: { message: error.message } };
        }
        return { id, ok: false, error: { class: 'internal', message: `${error.name}: ${error.message}` } };
    }
}

async function main() {
    const [verb, format] = args;
    if (verb === 'info') {
        process.stdout.write(`${JSON.stringify(info())}\n`);
        return 0;
    }
    if (verb === 'serve') {
        const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
        for await (const line of lines) {
            if (line.trim()) {
                process.stdout.write(`${JSON.stringify(await respond(line))}\n`);
            }
        }
        return 0;
    }
    if (verb === 'decode' && format) {
        const bytes = new Uint8Array(fs.readFileSync(0));
        try {
            process.stdout.write(`${JSON.stringify(await decode(format, bytes))}\n`);
            return 0;
        } catch (error) {
            if (error instanceof Refused) {
                process.stderr.write(`${error.message}\n`);
                process.stdout.write(`${JSON.stringify({ error: { message: error.message } })}\n`);
                return 1;
            }
            throw error;
        }
    }
    process.stderr.write('usage: node netron.mjs --netron DIR --version V --dialects D,... (info | decode FORMAT | serve)\n');
    return 2;
}

process.exitCode = await main();
