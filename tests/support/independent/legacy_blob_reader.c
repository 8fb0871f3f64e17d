/* An independent reader of the legacy module blob (__tvm_dev_mblob, and __tvm_ffi_library_bin
 * in 0.21) for the conformance kit, written from the published docs
 * (generated/docs/blob_legacy.md, payloads.md, canonical_blob.md, docs/conformance/protocol.md
 * "Era rules") and not from mlf_spec's code. Speaks the testee protocol: `info`, `serve`,
 * `decode blob`. Every era: the pre-0.7 form (no _lib, no import tree), the 0.7+ form with
 * _lib and _import_tree, several _lib up to 0.7 and one from 0.8, count 0 with an unread root
 * after it (0.14+), the 4-field FunctionInfo from 0.21.
 *
 * What it parses: a legacy payload carries no length, so the reader must know the grammar of
 * every kind in a blob. It implements the string-structured grammars: device_binary (cuda, hip,
 * hsaco, opencl, aocl, sdaccel, hexagon), c_source_payload (c), static_library_payload,
 * empty_payload (metadata_module) and json_runtime_payload (the BYOC JSON runtimes). The kinds
 * with tensors (the executor factories, const_loader / metadata), the shader kinds (vulkan,
 * metal, webgpu) and the VM executables are refused as `unsupported`, and the handshake's
 * `payloads` says so: the runner skips those vectors with the reason. It reports no payload
 * `fields`, `struct` or `functions` (they may be omitted), nor findings.
 * The code between MUTATE BEGIN and MUTATE END is what the mutation harness mutates. */
#include "testee_common.h"

#define DEVICE_KINDS "\"cuda\", \"hip\", \"hsaco\", \"opencl\", \"aocl\", \"sdaccel\", \"hexagon\""
#define JSON_KINDS "\"dnnl_json\", \"tensorrt\", \"msc_tensorrt\", \"arm_compute_lib\", \"bnns_json\", \"clml\", " \
  "\"cublas_json\", \"cudnn_json\", \"hipblas_json\", \"nnapi\""
#define INFO "{\"protocol\": \"mlf-conformance/1\", \"name\": \"independent-blob-legacy-c\", \"version\": \"1\", " \
  "\"serve\": true, \"formats\": [{\"format\": \"blob\", \"roles\": [\"decode\"], \"scope\": {\"layout\": [\"legacy\"]}, " \
  "\"payloads\": " MLF_PAYLOADS(DEVICE_KINDS ", " JSON_KINDS ", \"c\", \"static_library\", \"metadata_module\"") "}]}"


static const char *DEVICE_BINARY[] = {MLF_KINDS("cuda", "hip", "hsaco", "opencl", "aocl", "sdaccel", "hexagon") NULL};
static const char *JSON_RUNTIME[] = {MLF_KINDS("dnnl_json", "tensorrt", "msc_tensorrt", "arm_compute_lib", "bnns_json", "clml",
  "cublas_json", "cudnn_json", "hipblas_json", "nnapi") NULL};
static int kind_is(const uint8_t *k, size_t n, const char *s) { return strlen(s) == n && !memcmp(s, k, n); }

/* The TVM minor version the request's `era` names (legacy `latest` is 0.21). */
static int era_of(const char *options) {
  size_t len = 0;
  const char *e = json_str(options, "era", &len);
  if (!e || (len == 6 && !memcmp(e, "latest", 6))) return 21;
  if (len > 2 && e[0] == '0' && e[1] == '.') return atoi(e + 2);
  return 21;
}

typedef struct { uint64_t *rows, nrows, *child, nchild; } tree_t;

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

static void skip_fixed(cur_t *c, uint64_t width) {
  uint64_t n = count_of(c, width);
  if (c->bad) return;
  c->pos += (size_t)(n * width);
}

static void str_list(cur_t *c) {
  uint64_t n = count_of(c, 8);
  for (uint64_t i = 0; i < n && !c->bad; i++) skip_str(c);
}

static void function_info(cur_t *c, int era) {
  skip_str(c);
  skip_fixed(c, 4);
  str_list(c);
  if (era >= 21) skip_fixed(c, 4);
}

static void device_binary(cur_t *c, int era) {
  skip_str(c);
  uint64_t n = count_of(c, 32);
  for (uint64_t i = 0; i < n && !c->bad; i++) {
    skip_str(c);
    function_info(c, era);
  }
  skip_str(c);
}

static void c_source(cur_t *c) {
  skip_str(c);
  skip_str(c);
  str_list(c);
  str_list(c);
}

static void json_runtime(cur_t *c) {
  skip_str(c);
  skip_str(c);
  str_list(c);
}

static void static_library(cur_t *c) {
  skip_str(c);
  str_list(c);
}

/* Reads one _import_tree payload into t (its lists replace the earlier tree's). */
static void import_tree(cur_t *c, tree_t *t) {
  free(t->rows); free(t->child);
  t->rows = t->child = NULL;
  t->nrows = t->nchild = 0;
  uint64_t n = count_of(c, 8);
  if (c->bad) return;
  if (n < 2) { fail(c, "constraint", "row_ptr needs at least 2 entries"); return; }
  t->rows = malloc(n * sizeof *t->rows);
  t->nrows = n;
  uint64_t maxrow = 0;
  for (uint64_t i = 0; i < n; i++) {
    t->rows[i] = rd_u64(c);
    if (t->rows[i] > maxrow) maxrow = t->rows[i];
  }
  n = count_of(c, 8);
  if (c->bad) return;
  t->child = malloc((n ? n : 1) * sizeof *t->child);
  t->nchild = n;
  for (uint64_t i = 0; i < n && !c->bad; i++) {
    t->child[i] = rd_u64(c);
    if (!c->bad && t->child[i] >= t->nrows - 1) fail(c, "constraint", "a child index names no row of the tree");
  }
  if (!c->bad && maxrow > t->nchild) fail(c, "constraint", "a row pointer lies past the child indices");
}

static int decode_blob(const char *fmt, const char *options, const uint8_t *p, size_t n, buf_t *out, refusal_t *r) {
  cur_t c = {p, n, 0, r, 0};
  if (strcmp(fmt, "blob") || !strstr(options, "\"legacy\"")) {
    r->cls = "unsupported";
    snprintf(r->msg, sizeof r->msg, "only the legacy layout");
    return 0;
  }
  int era = era_of(options);
  uint64_t size = rd_u64(&c);
  if (c.bad) return 0;
  if (size > c.n - c.pos) return fail(&c, "length", "the size prefix claims more bytes than remain");
  c.n = c.pos + (size_t)size;
  uint64_t count = count_of(&c, 8);
  tree_t tree = {0};
  int trees = 0;
  uint64_t nmod = 0, libs = 0;
  buf_t mods = {0};
  for (uint64_t e = 0; e < count && !c.bad; e++) {
    uint64_t klen = rd_u64(&c);
    if (c.bad) break;
    if (klen > c.n - c.pos) { fail(&c, "length", "a kind claims more bytes than remain"); break; }
    const uint8_t *kind = c.p + c.pos;
    c.pos += (size_t)klen;
    if (kind_is(kind, (size_t)klen, "_import_tree")) {
      import_tree(&c, &tree);
      trees++;
      continue;
    }
    size_t start = c.pos;
    int lib = kind_is(kind, (size_t)klen, "_lib");
    if (lib) libs++;
    else if (is_kind(kind, (size_t)klen, DEVICE_BINARY)) device_binary(&c, era);
    else if (!MLF_OPAQUE && kind_is(kind, (size_t)klen, "c")) c_source(&c);
    else if (is_kind(kind, (size_t)klen, JSON_RUNTIME)) json_runtime(&c);
    else if (!MLF_OPAQUE && kind_is(kind, (size_t)klen, "static_library")) static_library(&c);
    else if (MLF_OPAQUE || !kind_is(kind, (size_t)klen, "metadata_module")) {
      r->cls = "unsupported";
      snprintf(r->msg, sizeof r->msg, "no payload grammar for this kind in this reader (offset %zu)", start);
      c.bad = 1;
      break;
    }
    if (c.bad) break;
    if (nmod) puts_(&mods, ", ");
    puts_(&mods, "{\"index\": "); putf_u(&mods, nmod); puts_(&mods, ", ");
    put_name(&mods, "kind", kind, (size_t)klen);
    puts_(&mods, ", \"payload_bytes\": "); putf_u(&mods, c.pos - start);
    if (lib) puts_(&mods, ", \"payload_sha256\": null}");
    else { puts_(&mods, ", \"payload_sha256\": \""); put_sha256(&mods, c.p + start, c.pos - start); puts_(&mods, "\"}"); }
    nmod++;
  }
  if (!c.bad && era >= 8 && libs > 1) fail(&c, "constraint", "several _lib entries (one at most from 0.8)");
  if (!c.bad && trees && tree.nrows != nmod + 1) fail(&c, "constraint", "the import tree's rows are not one per module");
  if (!c.bad) {
    puts_(out, "{\"format\": \"blob\", \"layout\": \"legacy\", \"modules\": [");
    puts_(out, mods.p ? mods.p : "");
    puts_(out, "], \"import_tree\": ");
    if (trees) {
      puts_(out, "{\"row_ptr\": [");
      for (uint64_t i = 0; i < tree.nrows; i++) { if (i) puts_(out, ", "); putf_u(out, tree.rows[i]); }
      puts_(out, "], \"child_indices\": [");
      for (uint64_t i = 0; i < tree.nchild; i++) { if (i) puts_(out, ", "); putf_u(out, tree.child[i]); }
      puts_(out, "]}");
    } else puts_(out, "null");
    puts_(out, ", \"trailing_bytes\": ");
    putf_u(out, c.n - c.pos);
    puts_(out, "}");
  }
  free(mods.p);
  free(tree.rows);
  free(tree.child);
  return !c.bad;
}
/* MUTATE END */

int main(int argc, char **argv) { return testee_main(argc, argv, INFO, decode_blob); }
