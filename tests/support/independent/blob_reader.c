/* An independent reader of the tvm-ffi module blob (__tvm_ffi__library_bin) for the
 * conformance kit, written from the published docs (generated/docs/blob_ffi.md, payloads.md,
 * canonical_blob.md) and not from mlf_spec's code. Speaks the testee protocol: `info`,
 * `serve`, `decode blob`. It parses the payload grammars of the device-binary kinds (cuda,
 * opencl, ...) and of `c`; a kind without a grammar in the spec is kept as opaque bytes; a kind
 * whose grammar it does not implement is refused as `unsupported` (its known-failures file
 * lists those vectors). The code between MUTATE BEGIN and MUTATE END is what the mutation
 * harness mutates. */
#include "testee_common.h"

#define INFO "{\"protocol\": \"mlf-conformance/1\", \"name\": \"independent-blob-ffi-c\", \"version\": \"1\", " \
  "\"serve\": true, \"formats\": [{\"format\": \"blob\", \"roles\": [\"decode\"], \"scope\": {\"layout\": [\"ffi\"]}, " \
  "\"payloads\": " MLF_PAYLOADS("\"cuda\", \"hip\", \"hsaco\", \"opencl\", \"aocl\", \"sdaccel\", \"hexagon\", \"c\"") "}]}"

static const char *DEVICE_BINARY[] = {MLF_KINDS("cuda", "hip", "hsaco", "opencl", "aocl", "sdaccel", "hexagon") NULL};
static const char *NOT_IMPLEMENTED[] = {MLF_KINDS("vulkan", "metal", "webgpu", "const_loader", "static_library",
  "relax.VMExecutable", "dnnl_json", "tensorrt", "msc_tensorrt", "arm_compute_lib", "bnns_json", "clml",
  "cublas_json", "cudnn_json", "hipblas_json", "nnapi", "example_npu_json", "coreml") NULL};

/* MUTATE BEGIN */
static void skip_str(cur_t *c) {
  uint64_t n = rd_u64(c);
  if (c->bad) return;
  if (n > c->n - c->pos) { fail(c, "length", "a string claims more bytes than remain"); return; }
  c->pos += (size_t)n;
}

static uint64_t count_of(cur_t *c, uint64_t min_elem) {
  uint64_t n = rd_u64(c);
  if (c->bad) return 0;
  if (n > (c->n - c->pos) / min_elem) { fail(c, "length", "a count claims more elements than remain"); return 0; }
  return n;
}

static void function_info(cur_t *c) {
  skip_str(c);
  uint64_t n = count_of(c, 4);
  if (c->bad) return;
  c->pos += (size_t)(n * 4);
  n = count_of(c, 8);
  for (uint64_t i = 0; i < n && !c->bad; i++) skip_str(c);
  n = count_of(c, 4);
  if (c->bad) return;
  c->pos += (size_t)(n * 4);
}

static void device_binary(cur_t *c) {
  skip_str(c);
  uint64_t n = count_of(c, 8);
  for (uint64_t i = 0; i < n && !c->bad; i++) {
    skip_str(c);
    function_info(c);
  }
  skip_str(c);
}

static void c_source(cur_t *c) {
  skip_str(c);
  skip_str(c);
  for (int v = 0; v < 2 && !c->bad; v++) {
    uint64_t n = count_of(c, 8);
    for (uint64_t i = 0; i < n && !c->bad; i++) skip_str(c);
  }
}

static int decode_blob(const char *fmt, const char *options, const uint8_t *p, size_t n, buf_t *out, refusal_t *r) {
  cur_t c = {p, n, 0, r, 0};
  if (strcmp(fmt, "blob") || !strstr(options, "\"ffi\"")) {
    r->cls = "unsupported";
    snprintf(r->msg, sizeof r->msg, "only the ffi layout");
    return 0;
  }
  uint64_t size = rd_u64(&c);
  if (c.bad) return 0;
  if (size > c.n - c.pos) return fail(&c, "length", "the size prefix claims more bytes than remain");
  c.n = c.pos + (size_t)size;
  uint64_t nrows = count_of(&c, 8);
  if (c.bad) return 0;
  if (nrows < 2) return fail(&c, "constraint", "row_ptr needs at least 2 entries");
  uint64_t *rows = malloc(nrows * sizeof *rows);
  uint64_t nmod = nrows - 1, maxrow = 0;
  for (uint64_t i = 0; i < nrows; i++) {
    rows[i] = rd_u64(&c);
    if (rows[i] > maxrow) maxrow = rows[i];
  }
  uint64_t nchild = count_of(&c, 8);
  uint64_t *child = malloc((nchild ? nchild : 1) * sizeof *child);
  for (uint64_t i = 0; i < nchild && !c.bad; i++) {
    child[i] = rd_u64(&c);
    if (!c.bad && child[i] >= nmod) fail(&c, "constraint", "a child index names no module");
  }
  if (!c.bad && maxrow > nchild) fail(&c, "constraint", "a row pointer lies past the child indices");
  if (!c.bad && nmod > (c.n - c.pos) / 8) fail(&c, "length", "more modules than the body can hold");
  buf_t mods = {0};
  for (uint64_t m = 0; m < nmod && !c.bad; m++) {
    uint64_t klen = rd_u64(&c);
    if (c.bad) break;
    if (klen > c.n - c.pos) { fail(&c, "length", "a kind claims more bytes than remain"); break; }
    if (klen == 0) { fail(&c, "constraint", "an empty module kind"); break; }
    const uint8_t *kind = c.p + c.pos;
    c.pos += (size_t)klen;
    if (m) puts_(&mods, ", ");
    puts_(&mods, "{\"index\": "); putf_u(&mods, m); puts_(&mods, ", ");
    put_name(&mods, "kind", kind, (size_t)klen);
    if (klen == 4 && !memcmp(kind, "_lib", 4)) {
      puts_(&mods, ", \"payload_bytes\": 0, \"payload_sha256\": null}");
      continue;
    }
    uint64_t plen = rd_u64(&c);
    if (c.bad) break;
    if (plen > c.n - c.pos) { fail(&c, "length", "a payload claims more bytes than remain"); break; }
    cur_t pc = {c.p, c.pos + (size_t)plen, c.pos, r, 0};
    if (is_kind(kind, (size_t)klen, DEVICE_BINARY)) device_binary(&pc);
    else if (klen == 1 && kind[0] == 'c' && !MLF_OPAQUE) c_source(&pc);
    else if (is_kind(kind, (size_t)klen, NOT_IMPLEMENTED)) {
      r->cls = "unsupported";
      snprintf(r->msg, sizeof r->msg, "payload grammar not implemented");
      c.bad = 1;
      break;
    }
    else pc.pos = pc.n;
    if (pc.bad) { c.bad = 1; break; }
    if (pc.pos != pc.n) { fail(&c, "length", "the payload grammar ends before the payload"); break; }
    puts_(&mods, ", \"payload_bytes\": "); putf_u(&mods, plen);
    puts_(&mods, ", \"payload_sha256\": \""); put_sha256(&mods, c.p + c.pos, (size_t)plen); puts_(&mods, "\"}");
    c.pos += (size_t)plen;
  }
  if (!c.bad) {
    puts_(out, "{\"format\": \"blob\", \"layout\": \"ffi\", \"modules\": [");
    puts_(out, mods.p ? mods.p : "");
    puts_(out, "], \"import_tree\": {\"row_ptr\": [");
    for (uint64_t i = 0; i < nrows; i++) { if (i) puts_(out, ", "); putf_u(out, rows[i]); }
    puts_(out, "], \"child_indices\": [");
    for (uint64_t i = 0; i < nchild; i++) { if (i) puts_(out, ", "); putf_u(out, child[i]); }
    puts_(out, "]}, \"trailing_bytes\": ");
    putf_u(out, c.n - c.pos);
    puts_(out, "}");
  }
  free(mods.p);
  free(rows);
  free(child);
  return !c.bad;
}
/* MUTATE END */

int main(int argc, char **argv) { return testee_main(argc, argv, INFO, decode_blob); }
