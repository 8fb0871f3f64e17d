/* An independent .params reader for the conformance kit, written from the published docs
 * (generated/docs/params.md, tensor.md, dtype_codes.md, canonical_params.md) and not from
 * mlf_spec's code. Speaks the testee protocol (docs/conformance/protocol.md): `info`, `serve`,
 * `decode params`. Reads the dtype codes as TVM 0.26 numbers them (dialect v0.26).
 * The code between MUTATE BEGIN and MUTATE END is what `mlf-spec conformance mutate` mutates. */
#include "testee_common.h"

#define INFO "{\"protocol\": \"mlf-conformance/1\", \"name\": \"independent-params-c\", \"version\": \"1\", " \
  "\"serve\": true, \"formats\": [{\"format\": \"params\", \"roles\": [\"decode\"], \"scope\": {\"dialect\": [\"v0.26\"]}}]}"

static int64_t rd_i64(cur_t *c) { return (int64_t)rd_le(c, 8); }
static int32_t rd_i32(cur_t *c) { return (int32_t)(uint32_t)rd_le(c, 4); }
static uint16_t rd_u16(cur_t *c) { return (uint16_t)rd_le(c, 2); }
static uint8_t rd_u8(cur_t *c) { return (uint8_t)rd_le(c, 1); }

/* MUTATE BEGIN */
static int dtype_known(unsigned code, unsigned bits) {
  if (code <= 6) return 1;
  if (code >= 7 && code <= 14) return bits == 8;
  if (code == 15 || code == 16) return bits == 6;
  if (code == 17) return bits == 4;
  return code >= 129;
}

static int read_record(cur_t *c, buf_t *out, const uint8_t *name, size_t name_n) {
  int64_t shape[64];
  if (rd_u64(c) != 0xDD5E40F096B4A13FULL) return c->bad ? 0 : fail(c, "bad_constant", "tensor magic");
  uint64_t reserved = rd_u64(c);
  int32_t device_type = rd_i32(c);
  int32_t device_id = rd_i32(c);
  if (c->bad) return 0;
  if (device_type != 1) return fail(c, "constraint", "device_type is not 1 (CPU)");
  int32_t ndim = rd_i32(c);
  if (c->bad) return 0;
  if (ndim < 0 || ndim > 64) return fail(c, "constraint", "ndim outside 0..64");
  unsigned code = rd_u8(c);
  unsigned bits = rd_u8(c);
  unsigned lanes = rd_u16(c);
  if (c->bad) return 0;
  if (!dtype_known(code, bits)) return fail(c, "unknown_dtype", "dtype code not defined in v0.26");
  int zero = 0;
  for (int i = 0; i < ndim; i++) {
    shape[i] = rd_i64(c);
    if (c->bad) return 0;
    if (shape[i] < 0) return fail(c, "constraint", "negative extent");
    if (shape[i] == 0) zero = 1;
  }
  uint64_t numel = 1;
  int overflow = 0;
  if (zero) numel = 0;
  else
    for (int i = 0; i < ndim; i++) {
      uint64_t e = (uint64_t)shape[i];
      if (numel > UINT64_MAX / e) overflow = 1;
      numel *= e;
    }
  uint64_t per = (bits + 7) / 8;
  if (per && numel > UINT64_MAX / per) overflow = 1;
  uint64_t want = numel * per;
  int64_t dbs = rd_i64(c);
  if (c->bad) return 0;
  if (overflow || dbs < 0 || (uint64_t)dbs != want) return fail(c, "constraint", "data_byte_size is not numel x ceil(bits/8)");
  if ((uint64_t)dbs > c->n - c->pos) return fail(c, "truncated", "data_byte_size exceeds the input");
  const uint8_t *data = c->p + c->pos;
  c->pos += (size_t)dbs;
  puts_(out, "{");
  put_name(out, "name", name, name_n);
  puts_(out, ", \"code\": "); putf_u(out, code);
  puts_(out, ", \"bits\": "); putf_u(out, bits);
  puts_(out, ", \"lanes\": "); putf_u(out, lanes);
  puts_(out, ", \"shape\": [");
  for (int i = 0; i < ndim; i++) { if (i) puts_(out, ", "); putf_i(out, shape[i]); }
  puts_(out, "], \"nbytes\": "); putf_u(out, (uint64_t)dbs);
  puts_(out, ", \"sha256\": \""); put_sha256(out, data, (size_t)dbs);
  puts_(out, "\", \"device_type\": "); putf_i(out, device_type);
  puts_(out, ", \"device_id\": "); putf_i(out, device_id);
  puts_(out, ", \"reserved\": "); putf_u(out, reserved);
  puts_(out, "}");
  return 1;
}

static int decode_params(const char *fmt, const char *options, const uint8_t *p, size_t n, buf_t *out, refusal_t *r) {
  (void)options;
  cur_t c = {p, n, 0, r, 0};
  if (strcmp(fmt, "params")) { r->cls = "unsupported"; snprintf(r->msg, sizeof r->msg, "format %s", fmt); return 0; }
  if (rd_u64(&c) != 0xF7E58D4F05049CB7ULL) return c.bad ? 0 : fail(&c, "bad_constant", "list magic");
  uint64_t reserved = rd_u64(&c);
  uint64_t count = rd_u64(&c);
  if (c.bad) return 0;
  if (count > (c.n - c.pos) / 8) return fail(&c, "length", "more names than the input can hold");
  const uint8_t **names = malloc((count ? count : 1) * sizeof *names);
  size_t *lens = malloc((count ? count : 1) * sizeof *lens);
  for (uint64_t i = 0; i < count; i++) {
    uint64_t len = rd_u64(&c);
    if (c.bad) break;
    if (len > c.n - c.pos) { fail(&c, "length", "a name claims more bytes than the input holds"); break; }
    names[i] = c.p + c.pos;
    lens[i] = (size_t)len;
    c.pos += (size_t)len;
  }
  uint64_t arrays = c.bad ? 0 : rd_u64(&c);
  if (!c.bad && arrays != count) fail(&c, "count_mismatch", "tensor count differs from the name count");
  if (!c.bad) {
    puts_(out, "{\"format\": \"params\", \"reserved\": ");
    putf_u(out, reserved);
    puts_(out, ", \"tensors\": [");
    for (uint64_t i = 0; i < count; i++) {
      if (i) puts_(out, ", ");
      if (!read_record(&c, out, names[i], lens[i])) break;
    }
    puts_(out, "], \"trailing_bytes\": ");
    putf_u(out, c.n - c.pos);
    puts_(out, "}");
  }
  free(names);
  free(lens);
  return !c.bad;
}
/* MUTATE END */

int main(int argc, char **argv) { return testee_main(argc, argv, INFO, decode_params); }
