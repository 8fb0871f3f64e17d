/* What the independent readers share: the conformance protocol (info, serve, one-shot
 * decode), a cursor over the input (little-endian reads, the first refusal with its offset),
 * base64, SHA-256, a growing output buffer, JSON strings and the canonical
 * spelling of names (UTF-8 with each maximal subpart of an ill-formed sequence replaced by
 * U+FFFD, name_hex beside it). Written from docs/conformance/protocol.md and
 * generated/docs/canonical_*.md; the readers' own parsing is in their .c files (the part
 * the mutation harness mutates). */
#ifndef TESTEE_COMMON_H
#define TESTEE_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built with -DMLF_OPAQUE_PAYLOADS, a blob reader parses no payload grammar: its handshake
 * declares `"payloads": []` and its kind lists are empty (a tvm-ffi payload is read as opaque
 * bytes, a legacy one is refused as unsupported). MLF_KINDS(...) is a kind list's entries,
 * MLF_PAYLOADS(...) the handshake's `payloads` array. */
#ifdef MLF_OPAQUE_PAYLOADS
#define MLF_OPAQUE 1
#define MLF_KINDS(...)
#define MLF_PAYLOADS(...) "[]"
#else
#define MLF_OPAQUE 0
#define MLF_KINDS(...) __VA_ARGS__,
#define MLF_PAYLOADS(...) "[" __VA_ARGS__ "]"
#endif

typedef struct { char *p; size_t n, cap; } buf_t;

static void put(buf_t *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    b->p = realloc(b->p, cap);
    if (!b->p) abort();
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void puts_(buf_t *b, const char *s) { put(b, s, strlen(s)); }
static void putf_u(buf_t *b, unsigned long long v) { char t[32]; snprintf(t, sizeof t, "%llu", v); puts_(b, t); }
static void putf_i(buf_t *b, long long v) { char t[32]; snprintf(t, sizeof t, "%lld", v); puts_(b, t); }

/* ---- SHA-256 (FIPS 180-4) ---- */
static const uint32_t K256[64] = {
  0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,0xd807aa98,0x12835b01,
  0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,
  0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,
  0x06ca6351,0x14292967,0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,
  0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,0x19a4c116,0x1e376c08,
  0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,
  0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2};
#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
static void sha_block(uint32_t h[8], const uint8_t *blk) {
  uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
  for (int i = 0; i < 16; i++) w[i] = (uint32_t)blk[4*i] << 24 | (uint32_t)blk[4*i+1] << 16 | (uint32_t)blk[4*i+2] << 8 | blk[4*i+3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ROR(w[i-15], 7) ^ ROR(w[i-15], 18) ^ (w[i-15] >> 3);
    uint32_t s1 = ROR(w[i-2], 17) ^ ROR(w[i-2], 19) ^ (w[i-2] >> 10);
    w[i] = w[i-16] + s0 + w[i-7] + s1;
  }
  a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; k = h[7];
  for (int i = 0; i < 64; i++) {
    t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
    t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}
static void put_sha256(buf_t *out, const uint8_t *p, size_t n) {
  uint32_t h[8] = {0x6a09e667,0xbb67ae85,0x3c6ef372,0xa54ff53a,0x510e527f,0x9b05688c,0x1f83d9ab,0x5be0cd19};
  uint8_t blk[64];
  size_t i = 0;
  for (; i + 64 <= n; i += 64) sha_block(h, p + i);
  size_t r = n - i;
  memset(blk, 0, 64);
  memcpy(blk, p + i, r);
  blk[r] = 0x80;
  if (r >= 56) { sha_block(h, blk); memset(blk, 0, 64); }
  uint64_t bits = (uint64_t)n * 8;
  for (int j = 0; j < 8; j++) blk[63 - j] = (uint8_t)(bits >> (8 * j));
  sha_block(h, blk);
  char hex[65];
  for (int j = 0; j < 8; j++) snprintf(hex + 8 * j, 9, "%08x", h[j]);
  put(out, hex, 64);
}

/* ---- JSON text of bytes: a UTF-8 string with maximal-subpart U+FFFD, and hex ---- */
static int utf8_valid(const uint8_t *s, size_t n, size_t *next, size_t i) {
  uint8_t b = s[i];
  int need; uint8_t lo = 0x80, hi = 0xBF;
  if (b < 0x80) { *next = i + 1; return 1; }
  if (b >= 0xC2 && b <= 0xDF) need = 1;
  else if (b == 0xE0) { need = 2; lo = 0xA0; }
  else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) need = 2;
  else if (b == 0xED) { need = 2; hi = 0x9F; }
  else if (b == 0xF0) { need = 3; lo = 0x90; }
  else if (b >= 0xF1 && b <= 0xF3) need = 3;
  else if (b == 0xF4) { need = 3; hi = 0x8F; }
  else { *next = i + 1; return 0; }
  size_t j = i + 1;
  for (int k = 0; k < need; k++, j++) {
    if (j >= n) { *next = j; return 0; }
    uint8_t c = s[j];
    if (k == 0 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) { *next = j; return 0; }
  }
  *next = j;
  return 1;
}
/* Writes "name": "...", and "name_hex": "..." when the bytes are not UTF-8. */
static void put_name(buf_t *out, const char *key, const uint8_t *s, size_t n) {
  int valid = 1;
  puts_(out, "\""); puts_(out, key); puts_(out, "\": \"");
  for (size_t i = 0; i < n;) {
    size_t next;
    if (!utf8_valid(s, n, &next, i)) { valid = 0; puts_(out, "\xEF\xBF\xBD"); i = next; continue; }
    for (; i < next; i++) {
      uint8_t c = s[i];
      if (c == '"' || c == '\\') { char t[3] = {'\\', (char)c, 0}; puts_(out, t); }
      else if (c < 0x20) { char t[8]; snprintf(t, sizeof t, "\\u%04x", c); puts_(out, t); }
      else put(out, (const char *)&s[i], 1);
    }
  }
  puts_(out, "\"");
  if (!valid) {
    puts_(out, ", \""); puts_(out, key); puts_(out, "_hex\": \"");
    for (size_t i = 0; i < n; i++) { char t[3]; snprintf(t, sizeof t, "%02x", s[i]); put(out, t, 2); }
    puts_(out, "\"");
  }
}

/* ---- base64 ---- */
static int b64v(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
static uint8_t *b64dec(const char *s, size_t len, size_t *out_n) {
  uint8_t *o = malloc(len / 4 * 3 + 4);
  size_t n = 0; uint32_t acc = 0; int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64v((unsigned char)s[i]);
    if (v < 0) continue;
    acc = acc << 6 | (uint32_t)v; bits += 6;
    if (bits >= 8) { bits -= 8; o[n++] = (uint8_t)(acc >> bits); }
  }
  *out_n = n;
  return o;
}

/* ---- the protocol ---- */
typedef struct { const char *cls; char msg[160]; } refusal_t;
/* A reader: decode `fmt` with the request's options (raw JSON text of the options object) into
 * `out` (the reading's JSON) or fill `r` and return 0. */
typedef int (*decode_fn)(const char *fmt, const char *options, const uint8_t *p, size_t n, buf_t *out, refusal_t *r);

static const char *json_str(const char *line, const char *key, size_t *len) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *k = strstr(line, pat);
  if (!k) return NULL;
  k += strlen(pat);
  while (*k == ' ') k++;
  if (*k != '"') return NULL;
  const char *e = strchr(k + 1, '"');
  if (!e) return NULL;
  *len = (size_t)(e - k - 1);
  return k + 1;
}

/* ---- a cursor over the input: little-endian reads, the first refusal with its offset ---- */
typedef struct { const uint8_t *p; size_t n, pos; refusal_t *r; int bad; } cur_t;

/* Records the first refusal (class and message with the offset) and returns 0. */
static int fail(cur_t *c, const char *cls, const char *what) {
  if (!c->bad) {
    c->bad = 1;
    c->r->cls = cls;
    snprintf(c->r->msg, sizeof c->r->msg, "%s (offset %zu)", what, c->pos);
  }
  return 0;
}
/* The next `width` bytes, little-endian; 0 and a `truncated` refusal past the end. */
static uint64_t rd_le(cur_t *c, int width) {
  if (c->bad) return 0;
  if (c->n - c->pos < (size_t)width) { fail(c, "truncated", "the input ends inside a field"); c->pos = c->n; return 0; }
  uint64_t v = 0;
  for (int i = 0; i < width; i++) v |= (uint64_t)c->p[c->pos + i] << (8 * i);
  c->pos += (size_t)width;
  return v;
}
static uint64_t rd_u64(cur_t *c) { return rd_le(c, 8); }
/* Whether the `n` bytes at `k` spell one of the names of the NULL-terminated `list`. */
static inline int is_kind(const uint8_t *k, size_t n, const char **list) {
  for (int i = 0; list[i]; i++)
    if (strlen(list[i]) == n && !memcmp(list[i], k, n)) return 1;
  return 0;
}

/* `p`'s first `n` bytes in a buffer of exactly `n` bytes (freeing `p`), so that AddressSanitizer
 * reports a read even one byte past the input. */
static uint8_t *exact(uint8_t *p, size_t n) {
  uint8_t *q = malloc(n ? n : 1);
  if (!q) abort();
  if (n) memcpy(q, p, n);
  free(p);
  return q;
}

static int serve(decode_fn decode) {
  size_t cap = 1 << 16; char *line = malloc(cap); size_t n = 0; int c;
  for (;;) {
    n = 0;
    while ((c = getchar()) != EOF && c != '\n') {
      if (n + 2 > cap) { cap *= 2; line = realloc(line, cap); }
      line[n++] = (char)c;
    }
    if (c == EOF && n == 0) break;
    line[n] = 0;
    const char *id = strstr(line, "\"id\":");
    long long rid = id ? atoll(id + 5) : 0;
    size_t fl = 0, il = 0;
    const char *fmt = json_str(line, "format", &fl);
    const char *in = json_str(line, "input", &il);
    const char *opts = strstr(line, "\"options\":");
    char fmtbuf[32] = {0};
    if (fmt && fl < sizeof fmtbuf) memcpy(fmtbuf, fmt, fl);
    size_t dn = 0;
    uint8_t *data = in ? b64dec(in, il, &dn) : calloc(1, 1);
    data = exact(data, dn);
    buf_t out = {0}; refusal_t r = {"malformed", ""};
    int ok = decode(fmtbuf, opts ? opts : "", data, dn, &out, &r);
    if (ok) printf("{\"id\": %lld, \"ok\": true, \"reading\": %s}\n", rid, out.p);
    else printf("{\"id\": %lld, \"ok\": false, \"error\": {\"class\": \"%s\", \"message\": \"%s\"}}\n", rid, r.cls, r.msg);
    fflush(stdout);
    free(out.p); free(data);
    if (c == EOF) break;
  }
  free(line);
  return 0;
}

static int testee_main(int argc, char **argv, const char *info, decode_fn decode) {
  if (argc >= 2 && !strcmp(argv[1], "info")) { puts(info); return 0; }
  if (argc >= 2 && !strcmp(argv[1], "serve")) return serve(decode);
  if (argc >= 3 && !strcmp(argv[1], "decode")) {
    size_t cap = 1 << 16, n = 0, got;
    uint8_t *data = malloc(cap);
    while ((got = fread(data + n, 1, cap - n, stdin)) > 0) { n += got; if (n == cap) { cap *= 2; data = realloc(data, cap); } }
    data = exact(data, n);
    buf_t opts = {0};
    puts_(&opts, "{");
    for (int i = 3; i < argc; i++) {
      const char *eq = strchr(argv[i], '=');
      if (!eq) continue;
      puts_(&opts, i > 3 ? ", \"" : "\""); put(&opts, argv[i], (size_t)(eq - argv[i]));
      puts_(&opts, "\": \""); puts_(&opts, eq + 1); puts_(&opts, "\"");
    }
    puts_(&opts, "}");
    buf_t out = {0}; refusal_t r = {"malformed", ""};
    int ok = decode(argv[2], opts.p, data, n, &out, &r);
    if (ok) { puts(out.p); return 0; }
    printf("{\"error\": {\"class\": \"%s\", \"message\": \"%s\"}}\n", r.cls, r.msg);
    return 1;
  }
  fprintf(stderr, "usage: %s info | serve | decode FORMAT [key=value ...]\n", argv[0]);
  return 2;
}
#endif
