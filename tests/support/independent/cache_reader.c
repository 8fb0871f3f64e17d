/* An independent tensor cache reader for the conformance kit, written from the published docs
 * (generated/docs/tensor_cache.md, canonical_tensor_cache.md, cache_encodings.md,
 * dtype_codes.md, docs/conformance/protocol.md "Folder-shaped formats") and not from mlf_spec's
 * code. Speaks the testee protocol: `info`, `serve`, `decode tensor-cache input_dir=PATH`.
 * It reads the folder's tensor-cache.json (else ndarray-cache.json) with its own JSON parser,
 * checks every record against its shard and reports the canonical reading (index, version,
 * shards, metadata, and per tensor name, dtype, shape, format, shard, offset, nbytes, sha256).
 * The code between MUTATE BEGIN and MUTATE END is what the mutation harness mutates: the rules;
 * the JSON tokenizer, the file access and the protocol are outside it. */
#include "testee_common.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define INFO "{\"protocol\": \"mlf-conformance/1\", \"name\": \"independent-cache-c\", \"version\": \"1\", " \
  "\"serve\": true, \"formats\": [{\"format\": \"tensor-cache\", \"roles\": [\"decode\"], " \
  "\"scope\": {\"version\": [\"1\", \"2\"]}}]}"

/* ---- a JSON value: its raw span in the text, strings decoded (UTF-8; a lone surrogate
 * escape as its 3-byte form), numbers with their integer value when they are integers ---- */
/* (numbered from 1 and interleaved so that a comparison mutated from != to < or > differs) */
enum { J_NUM = 1, J_NULL, J_STR, J_FALSE, J_TRUE, J_ARR, J_OBJ };
typedef struct jv {
  int t;
  size_t s, e;               /* the value's bytes in the text: [s, e) */
  uint8_t *str; size_t len;  /* J_STR: decoded bytes */
  int is_int, fits;          /* J_NUM: no fraction or exponent; the integer fits in int64 */
  int64_t i;
  struct jv **items; uint8_t **keys; size_t *klen; size_t n;
} jv;

typedef struct { const uint8_t *p; size_t n, pos; void **owned; size_t nowned, capowned; } jp_t;

static void *jalloc(jp_t *j, size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (!p) abort();
  if (j->nowned == j->capowned) {
    j->capowned = j->capowned ? j->capowned * 2 : 64;
    j->owned = realloc(j->owned, j->capowned * sizeof *j->owned);
    if (!j->owned) abort();
  }
  j->owned[j->nowned++] = p;
  return p;
}
static void jfree(jp_t *j) { for (size_t i = 0; i < j->nowned; i++) free(j->owned[i]); free(j->owned); }

/* the rules of the JSON text (in the mutated part below) */
static int depth_ok(int depth);
static int digits_ok(size_t digits);
static int int64_of(const uint8_t *p, size_t n, int neg, int64_t *out);
static int constant_ok(const char *word);

static void ws(jp_t *j) {
  while (j->pos < j->n && (j->p[j->pos] == ' ' || j->p[j->pos] == '\t' || j->p[j->pos] == '\n' || j->p[j->pos] == '\r'))
    j->pos++;
}
static int lit(jp_t *j, const char *w) {
  size_t k = strlen(w);
  if (j->n - j->pos < k || memcmp(j->p + j->pos, w, k)) return 0;
  j->pos += k;
  return 1;
}
static int hex4(jp_t *j, unsigned *v) {
  if (j->n - j->pos < 4) return 0;
  *v = 0;
  for (int k = 0; k < 4; k++) {
    int c = j->p[j->pos + k], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return 0;
    *v = *v << 4 | (unsigned)d;
  }
  j->pos += 4;
  return 1;
}
static void put_cp(uint8_t *o, size_t *n, unsigned cp) {
  if (cp < 0x80) o[(*n)++] = (uint8_t)cp;
  else if (cp < 0x800) { o[(*n)++] = (uint8_t)(0xC0 | cp >> 6); o[(*n)++] = (uint8_t)(0x80 | (cp & 0x3F)); }
  else if (cp < 0x10000) {
    o[(*n)++] = (uint8_t)(0xE0 | cp >> 12); o[(*n)++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[(*n)++] = (uint8_t)(0x80 | (cp & 0x3F));
  } else {
    o[(*n)++] = (uint8_t)(0xF0 | cp >> 18); o[(*n)++] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[(*n)++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); o[(*n)++] = (uint8_t)(0x80 | (cp & 0x3F));
  }
}
/* A string at j->pos (the opening quote): its decoded bytes; 0 if it is not a JSON string. */
static int jstring(jp_t *j, uint8_t **out, size_t *outn) {
  size_t start = ++j->pos, cap = 0;
  while (j->pos < j->n && j->p[j->pos] != '"') { if (j->p[j->pos] == '\\') j->pos++; j->pos++; cap++; }
  if (j->pos >= j->n) return 0;
  uint8_t *o = jalloc(j, cap * 4 + 1);
  size_t n = 0;
  j->pos = start;
  for (;;) {
    uint8_t c = j->p[j->pos];
    if (c == '"') { j->pos++; break; }
    if (c < 0x20) return 0;
    if (c != '\\') { o[n++] = c; j->pos++; continue; }
    j->pos++;
    c = j->p[j->pos++];
    const char *simple = "\"\\/bfnrt", *value = "\"\\/\b\f\n\r\t";
    const char *at = strchr(simple, c);
    if (c && at) { o[n++] = (uint8_t)value[at - simple]; continue; }
    if (c != 'u') return 0;
    unsigned cp, lo;
    if (!hex4(j, &cp)) return 0;
    if (cp >= 0xD800 && cp <= 0xDBFF && j->n - j->pos >= 6 && j->p[j->pos] == '\\' && j->p[j->pos + 1] == 'u') {
      size_t back = j->pos;
      j->pos += 2;
      if (hex4(j, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      else j->pos = back;
    }
    put_cp(o, &n, cp);
  }
  *out = o;
  *outn = n;
  return 1;
}
static jv *jvalue(jp_t *j, int depth);
static jv *jnumber(jp_t *j, jv *v) {
  size_t s = j->pos;
  int neg = 0;
  if (j->p[j->pos] == '-') { neg = 1; j->pos++; }
  if (lit(j, "Infinity")) { v->t = J_NULL; return constant_ok("-Infinity") ? v : NULL; }
  size_t ds = j->pos;
  if (j->pos >= j->n || j->p[j->pos] < '0' || j->p[j->pos] > '9') return NULL;
  if (j->p[j->pos] == '0') j->pos++;
  else while (j->pos < j->n && j->p[j->pos] >= '0' && j->p[j->pos] <= '9') j->pos++;
  size_t de = j->pos;
  v->is_int = 1;
  if (j->pos < j->n && j->p[j->pos] == '.') {
    v->is_int = 0; j->pos++;
    if (j->pos >= j->n || j->p[j->pos] < '0' || j->p[j->pos] > '9') return NULL;
    while (j->pos < j->n && j->p[j->pos] >= '0' && j->p[j->pos] <= '9') j->pos++;
  }
  if (j->pos < j->n && (j->p[j->pos] == 'e' || j->p[j->pos] == 'E')) {
    v->is_int = 0; j->pos++;
    if (j->pos < j->n && (j->p[j->pos] == '+' || j->p[j->pos] == '-')) j->pos++;
    if (j->pos >= j->n || j->p[j->pos] < '0' || j->p[j->pos] > '9') return NULL;
    while (j->pos < j->n && j->p[j->pos] >= '0' && j->p[j->pos] <= '9') j->pos++;
  }
  (void)s;
  if (v->is_int) {
    if (!digits_ok(de - ds)) return NULL;
    v->fits = int64_of(j->p + ds, de - ds, neg, &v->i);
  }
  return v;
}
static jv *jvalue(jp_t *j, int depth) {
  ws(j);
  if (j->pos >= j->n) return NULL;
  jv *v = jalloc(j, sizeof *v);
  v->s = j->pos;
  uint8_t c = j->p[j->pos];
  if (c == '{' || c == '[') {
    if (!depth_ok(depth + 1)) return NULL;
    int obj = c == '{';
    v->t = obj ? J_OBJ : J_ARR;
    j->pos++;
    size_t cap = 0;
    ws(j);
    if (j->pos < j->n && j->p[j->pos] == (obj ? '}' : ']')) { j->pos++; v->e = j->pos; return v; }
    for (;;) {
      if (v->n == cap) {
        cap = cap ? cap * 2 : 8;
        jv **items = jalloc(j, cap * sizeof *items);
        uint8_t **keys = jalloc(j, cap * sizeof *keys);
        size_t *klen = jalloc(j, cap * sizeof *klen);
        if (v->n) {
          memcpy(items, v->items, v->n * sizeof *items);
          memcpy(keys, v->keys, v->n * sizeof *keys);
          memcpy(klen, v->klen, v->n * sizeof *klen);
        }
        v->items = items; v->keys = keys; v->klen = klen;
      }
      if (obj) {
        ws(j);
        if (j->pos >= j->n || j->p[j->pos] != '"' || !jstring(j, &v->keys[v->n], &v->klen[v->n])) return NULL;
        ws(j);
        if (j->pos >= j->n || j->p[j->pos] != ':') return NULL;
        j->pos++;
      }
      jv *item = jvalue(j, depth + 1);
      if (!item) return NULL;
      v->items[v->n++] = item;
      ws(j);
      if (j->pos < j->n && j->p[j->pos] == ',') { j->pos++; continue; }
      if (j->pos < j->n && j->p[j->pos] == (obj ? '}' : ']')) { j->pos++; break; }
      return NULL;
    }
  } else if (c == '"') {
    v->t = J_STR;
    if (!jstring(j, &v->str, &v->len)) return NULL;
  } else if (lit(j, "true")) v->t = J_TRUE;
  else if (lit(j, "false")) v->t = J_FALSE;
  else if (lit(j, "null")) v->t = J_NULL;
  else if (lit(j, "NaN")) { v->t = J_NULL; if (!constant_ok("NaN")) return NULL; }
  else if (lit(j, "Infinity")) { v->t = J_NULL; if (!constant_ok("Infinity")) return NULL; }
  else if (c == '-' || (c >= '0' && c <= '9')) { v->t = J_NUM; if (!jnumber(j, v)) return NULL; }
  else return NULL;
  v->e = j->pos;
  return v;
}

/* ---- the folder ---- */
typedef struct { uint8_t *p; size_t n; } file_t;
static int read_fd(int fd, file_t *f) {
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) return 0;
  f->n = (size_t)st.st_size;
  f->p = malloc(f->n ? f->n : 1);
  size_t got = 0;
  while (got < f->n) {
    ssize_t r = pread(fd, f->p + got, f->n - got, (off_t)got);
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}
/* Opens the regular file at the components `parts` below the folder `dir`, never following a
 * link: the descriptor, -1 if it does not exist, -2 if a component is a link or not a folder,
 * -3 if the last one is not a regular file. */
static int open_below(int dir, uint8_t **parts, size_t *lens, size_t nparts) {
  int fd = dir;
  for (size_t k = 0; k < nparts; k++) {
    char name[4096];
    if (lens[k] >= sizeof name) { if (fd != dir) close(fd); return -1; }
    memcpy(name, parts[k], lens[k]);
    name[lens[k]] = 0;
    int last = k + 1 == nparts;
    int nfd = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (last ? 0 : O_DIRECTORY));
    int err = errno;
    if (fd != dir) close(fd);
    if (nfd < 0) return err == ENOENT ? -1 : -2;
    fd = nfd;
  }
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) { close(fd); return -3; }
  return fd;
}
/* "key": the string's bytes as text (each maximal ill-formed subpart, a lone surrogate's three
 * bytes included, as U+FFFD), without name_hex. */
static void put_text(buf_t *out, const char *key, const jv *v) {
  buf_t tmp = {0};
  put_name(&tmp, key, v->str, v->len);
  char *hex = strstr(tmp.p, "_hex\": \"");
  if (hex) {  /* cut ", \"key_hex\": ..." */
    char *cut = hex - strlen(key) - 3;
    *cut = 0;
    tmp.n = (size_t)(cut - tmp.p);
  }
  put(out, tmp.p, tmp.n);
  free(tmp.p);
}
/* A value's text as it stands in the index, on one line (a JSON string holds no raw line break). */
static void put_raw(buf_t *out, const uint8_t *text, const jv *v) {
  for (size_t k = v->s; k < v->e; k++) put(out, text[k] == '\n' || text[k] == '\r' ? " " : (const char *)text + k, 1);
}

static int read_folder(int dir, buf_t *out, refusal_t *r);
/* The error class of a shard that cannot be read (open_below's answer): missing, a link on
 * the way, not a regular file; of a size that differs from nbytes. */
static const char *open_class(int fd) {
  return fd == -1 ? "malformed" : fd == -2 ? "unsafe" : fd < 0 ? "unsupported" : "constraint";
}
static const jp_t NO_PARSER;
static const file_t NO_FILE;
static const buf_t NO_BUF;
/* the index names a folder may hold, the newer first, and the cache version each stands for */
static uint8_t INDEX_2[] = "tensor-cache.json", INDEX_1[] = "ndarray-cache.json";
static uint8_t *INDEX_NAMES[] = {INDEX_2, INDEX_1};
static const char *INDEX_TEXT[] = {"tensor-cache.json", "ndarray-cache.json"};
static const int INDEX_VERSIONS[] = {2, 1};

/* MUTATE BEGIN */
#define MAX_DEPTH 64
#define MAX_DIGITS 4300
#define MAX_LANES 65535

/* Arrays and objects nest at most 64 levels (the top-level object is level 1); an integer has
 * at most 4,300 digits; NaN, Infinity and -Infinity are read (as null). */
static int depth_ok(int depth) { return depth <= MAX_DEPTH; }
static int digits_ok(size_t digits) { return digits <= MAX_DIGITS; }
static int constant_ok(const char *word) { (void)word; return 1; }

/* The decimal digits p[0..n) (negative if `neg`) as an int64: 0 if it does not fit. */
static int int64_of(const uint8_t *p, size_t n, int neg, int64_t *out) {
  uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (size_t k = 0; k < n; k++) {
    uint64_t d = (uint64_t)(p[k] - '0');
    if (v > (limit - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 1;
}

static int refuse(refusal_t *r, const char *cls, const char *what) {
  r->cls = cls;
  snprintf(r->msg, sizeof r->msg, "%s", what);
  return 0;
}

/* The value of `key` in object `o` (the last one when repeated), NULL if absent. */
static jv *member(const jv *o, const char *key) {
  size_t k = strlen(key);
  for (size_t i = o->n; i > 0; i--)
    if (o->klen[i - 1] == k && !memcmp(o->keys[i - 1], key, k)) return o->items[i - 1];
  return NULL;
}
/* A required member of type t (J_NUM: an integer that fits in int64; is_int is set on numbers only). */
static jv *need(const jv *o, const char *key, int t) {
  jv *v = member(o, key);
  if (!v) return NULL;
  if (t == J_NUM) return v->is_int && v->fits ? v : NULL;
  return v->t == t ? v : NULL;
}

/* A dtype of the table: spellings with a fixed width, then kinds that take {bits}. */
static const char *FIXED8[] = {"bool", "float8_e4m3fn", "float8_e5m2", "float8_e3m4", "float8_e4m3",
  "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", NULL};
/* the float8 names of 0.13 to 0.19, read only in an ndarray-cache.json (TVM 0.16 to 0.21) */
static const char *FIXED8_V1[] = {"e4m3_float8", "e5m2_float8", NULL};
static const char *FIXED6[] = {"float6_e2m3fn", "float6_e3m2fn", NULL};
static const char *FIXED4[] = {"float4_e2m1fn", NULL};
static const char *KINDS[] = {"int", "uint", "float", "bfloat", "bool", NULL};

/* Digits s[0..n) as a number of at most `max`: -1 if empty, not digits or larger. */
static long small_number(const uint8_t *s, size_t n, long max) {
  long v = 0;
  if (n == 0) return -1;
  for (size_t k = 0; k < n; k++) {
    if (s[k] < '0' || s[k] > '9') return -1;
    v = v * 10 + (s[k] - '0');
    if (v > max) return -1;
  }
  return v;
}
/* The lanes after a spelling: 1 at the end, the number after 'x' (1..MAX_LANES), else -1. */
static long lanes_of(const uint8_t *s, size_t n) {
  if (n == 0) return 1;
  if (s[0] != 'x') return -1;
  long lanes = small_number(s + 1, n - 1, MAX_LANES);
  if (lanes < 1) return -1;
  return lanes;
}
static int fixed(const uint8_t *s, size_t n, const char **names, int width, int *bits, long *lanes) {
  for (int i = 0; names[i]; i++) {
    size_t k = strlen(names[i]);
    if (n < k || memcmp(s, names[i], k)) continue;
    long l = lanes_of(s + k, n - k);
    if (l < 0) continue;
    *bits = width;
    *lanes = l;
    return 1;
  }
  return 0;
}
static int dtype_of(const uint8_t *s, size_t n, int version, int *bits, long *lanes) {
  if (fixed(s, n, FIXED8, 8, bits, lanes) || fixed(s, n, FIXED6, 6, bits, lanes) || fixed(s, n, FIXED4, 4, bits, lanes))
    return 1;
  if (version == 1 && fixed(s, n, FIXED8_V1, 8, bits, lanes)) return 1;
  /* handle: 64 bits unless bits follow, then lanes, as after any name; the empty string and
   * "void" are the void type (0 bits, 0 lanes: no stored bytes) */
  if (n >= 6 && !memcmp(s, "handle", 6)) {
    size_t d = 6;
    while (d < n && s[d] >= '0' && s[d] <= '9') d++;
    long b = d == 6 ? 64 : small_number(s + 6, d - 6, 255), l = lanes_of(s + d, n - d);
    if (b < 1 || l < 0) return 0;
    *bits = (int)b;
    *lanes = l;
    return 1;
  }
  *bits = 0;
  *lanes = 0;
  if (n == 0 || (n == 4 && !memcmp(s, "void", 4))) return 1;
  for (int i = 0; KINDS[i]; i++) {
    size_t k = strlen(KINDS[i]);
    if (n <= k || memcmp(s, KINDS[i], k)) continue;
    size_t d = k;
    while (d < n && s[d] >= '0' && s[d] <= '9') d++;
    long b = small_number(s + k, d - k, 255);
    if (b < 1) continue;
    long l = lanes_of(s + d, n - d);
    if (l < 0) continue;
    *bits = (int)b;
    *lanes = l;
    return 1;
  }
  return 0;
}

static int is(const jv *v, const char *s) { return v->len == strlen(s) && !memcmp(v->str, s, v->len); }

/* The components of a dataPath (split at '/', without "" and ".") into parts (room for
 * len + 1), and why it may not be opened inside the folder (NULL: it may). */
static const char *path_problem(const jv *p, uint8_t **parts, size_t *lens, size_t *nparts) {
  uint8_t *s = p->str;
  size_t n = p->len, start = 0;
  *nparts = 0;
  /* ("." components are kept: opening "." is opening the folder; no component at all opens the
   * folder itself, which is not a regular file) */
  for (size_t k = 0; k <= n; k++) {
    if (k < n && s[k] != '/') continue;
    if (k > start || k == n) {  /* a trailing '/' leaves an empty last component: no such file */
      parts[*nparts] = s + start;
      lens[*nparts] = k - start;
      *nparts += 1;
    }
    start = k + 1;
  }
  if (memchr(s, 0, n)) return "a dataPath with NUL";
  for (size_t k = 0; k + 1 < n; k++)  /* a lone surrogate's three bytes: ED A0..BF */
    if (s[k] == 0xED && s[k + 1] >= 0xA0) return "a dataPath with a lone surrogate";
  if (s[0] == '/' || (n > 1 && s[1] == ':')) return "an absolute dataPath";
  start = 0;
  for (size_t k = 0; k <= n; k++) {
    if (k < n && s[k] != '/' && s[k] != '\\') continue;
    if (k - start == 2 && s[start] == '.' && s[start + 1] == '.') return "a dataPath with ..";
    start = k + 1;
  }
  return NULL;
}

/* numel x bits x lanes / 8, rounded up; -1 when an extent is negative or the size is past int64. */
static int64_t stored_size(const jv *shape, int bits, long lanes) {
  unsigned __int128 numel = 1;
  int zero = 0;
  for (size_t k = 0; k < shape->n; k++) {
    if (shape->items[k]->i < 0) return -1;
    if (shape->items[k]->i == 0) zero = 1;
  }
  if (zero) return 0;
  for (size_t k = 0; k < shape->n; k++) {
    numel *= (uint64_t)shape->items[k]->i;
    if (numel > (unsigned __int128)UINT64_MAX) return -1;
  }
  unsigned __int128 want = (numel * (unsigned)bits * (unsigned long)lanes + 7) / 8;
  if (want > (unsigned __int128)INT64_MAX) return -1;
  return (int64_t)want;
}

typedef struct { jv *rec, *name, *dtype, *format, *shape; int64_t nbytes, offset; int decode; } tensor_t;

static int read_cache(const uint8_t *text, size_t n, const char *index, int version, int dir, buf_t *out,
                      refusal_t *r) {
  size_t bad;
  for (size_t i = 0; i < n; i = bad) {
    if (!utf8_valid(text, n, &bad, i)) return refuse(r, "malformed", "the index is not UTF-8");
  }
  jp_t j = NO_PARSER;
  j.p = text;
  j.n = n;
  jv *doc = jvalue(&j, 0);
  if (doc) { ws(&j); if (j.pos != n) doc = NULL; }
  int ok = 0;
  buf_t body = NO_BUF;
  if (!doc) { refuse(r, "malformed", "the index is not JSON"); goto done; }
  /* (a value other than an object has no member: need() refuses it) */
  jv *records = need(doc, "records", J_ARR);
  if (!records) { refuse(r, "invalid_document", "records is missing or not an array"); goto done; }
  puts_(&body, "{\"format\": \"tensor-cache\", \"index\": \""); puts_(&body, index);
  puts_(&body, "\", \"version\": "); putf_i(&body, version);
  puts_(&body, ", \"shards\": "); putf_u(&body, records->n);
  puts_(&body, ", \"tensors\": [");
  int first = 1;
  for (size_t s = 0; s < records->n; s++) {
    jv *sh = records->items[s];
    jv *path = need(sh, "dataPath", J_STR), *fmt = need(sh, "format", J_STR), *nb = need(sh, "nbytes", J_NUM);
    jv *tensors = need(sh, "records", J_ARR);
    if (!path || !fmt || !nb || !tensors) {
      refuse(r, "invalid_document", "a shard record lacks a key or has a wrong type"); goto done;
    }  /* (md5sum may hold any value: no loader reads it) */
    tensor_t *ts = calloc(tensors->n ? tensors->n : 1, sizeof *ts);
    for (size_t k = 0; k < tensors->n; k++) {
      jv *t = tensors->items[k];
      tensor_t *e = &ts[k];
      e->rec = t;
      e->shape = need(t, "shape", J_ARR);
      if (e->shape)
        for (size_t d = 0; d < e->shape->n; d++) {
          jv *x = e->shape->items[d];
          if (!x->is_int || !x->fits) e->shape = NULL;
          if (!e->shape) break;
        }
      e->name = need(t, "name", J_STR);
      e->dtype = need(t, "dtype", J_STR);
      e->format = need(t, "format", J_STR);
      jv *tn = need(t, "nbytes", J_NUM), *to = need(t, "byteOffset", J_NUM);
      if (!e->shape || !e->name || !e->dtype || !e->format || !tn || !to) {
        refuse(r, "invalid_document", "a tensor record lacks a key or has a wrong type"); free(ts); goto done;
      }
      e->nbytes = tn->i;
      e->offset = to->i;
    }
    if (!is(fmt, "raw-shard")) { refuse(r, "bad_constant", "the shard format is not raw-shard"); free(ts); goto done; }
    uint8_t **parts = calloc(path->len + 1, sizeof *parts);
    size_t *lens = calloc(path->len + 1, sizeof *lens), nparts;
    const char *problem = path_problem(path, parts, lens, &nparts);
    if (problem) { refuse(r, "unsafe", problem); free(parts); free(lens); free(ts); goto done; }
    int fd = open_below(dir, parts, lens, nparts);
    free(parts);
    free(lens);
    file_t f = NO_FILE;
    int got = read_fd(fd, &f);  /* (fails on a descriptor open_below did not give) */
    if (fd >= 0) close(fd);
    if (!got || (int64_t)f.n != nb->i) {
      refuse(r, open_class(fd), "the shard cannot be read, or its size differs from its nbytes");
      free(f.p); free(ts); goto done;
    }
    for (size_t k = 0; k < tensors->n; k++) {
      tensor_t *e = &ts[k];
      int bits; long lanes;
      if (!dtype_of(e->dtype->str, e->dtype->len, version, &bits, &lanes)) {
        refuse(r, "unknown_dtype", "the dtype is not a TVM dtype"); free(f.p); free(ts); goto done;
      }
      /* f32-to-bf16 applies to what parses as float32 with one lane (float32x1, float032 too) */
      e->decode = is(e->format, "f32-to-bf16") && bits == 32 && lanes == 1 && e->dtype->str[0] == 'f';
      int64_t want = stored_size(e->shape, e->decode ? 16 : bits, lanes);
      if (want < 0 || want != e->nbytes) {
        refuse(r, "constraint", "a negative extent, or nbytes differs from shape x dtype"); free(f.p); free(ts); goto done;
      }
      if (e->offset < 0 || (uint64_t)e->offset + (uint64_t)e->nbytes > f.n) {
        refuse(r, "constraint", "the tensor's bytes go past the shard"); free(f.p); free(ts); goto done;
      }
      if (!first) puts_(&body, ", ");
      first = 0;
      puts_(&body, "{"); put_name(&body, "name", e->name->str, e->name->len);
      puts_(&body, ", \"dtype\": "); put_raw(&body, text, e->dtype);
      puts_(&body, ", \"shape\": [");
      for (size_t d = 0; d < e->shape->n; d++) { if (d) puts_(&body, ", "); putf_i(&body, e->shape->items[d]->i); }
      puts_(&body, "], "); put_text(&body, "format", e->format);
      puts_(&body, ", "); put_text(&body, "shard", path);
      puts_(&body, ", \"offset\": "); putf_i(&body, e->offset);
      puts_(&body, ", \"nbytes\": "); putf_i(&body, e->nbytes);
      puts_(&body, ", \"sha256\": \"");
      const uint8_t *data = f.p + e->offset;
      if (e->decode) {
        size_t words = (size_t)e->nbytes / 2;
        uint8_t *wide = malloc(words * 4 + 1);
        for (size_t w = 0; w < words; w++) {
          wide[4 * w] = 0;
          wide[4 * w + 1] = 0;
          wide[4 * w + 2] = data[2 * w];
          wide[4 * w + 3] = data[2 * w + 1];
        }
        put_sha256(&body, wide, words * 4);
        free(wide);
      } else {
        put_sha256(&body, data, (size_t)e->nbytes);
      }
      puts_(&body, "\"}");
    }
    free(f.p);
    free(ts);
  }
  puts_(&body, "]}");
  puts_(out, body.p);
  ok = 1;
done:
  free(body.p);
  jfree(&j);
  return ok;
}

/* The folder's index (tensor-cache.json, else ndarray-cache.json: a name that is no regular
 * file is passed over) read against its shards. */
static int read_folder(int dir, buf_t *out, refusal_t *r) {
  for (int k = 0; k < 2; k++) {
    uint8_t *part = INDEX_NAMES[k];
    size_t len = strlen(INDEX_TEXT[k]);
    int fd = open_below(dir, &part, &len, 1);
    if (fd < 0) continue;
    file_t f = NO_FILE;
    int got = read_fd(fd, &f);
    close(fd);
    int ok = got ? read_cache(f.p, f.n, INDEX_TEXT[k], INDEX_VERSIONS[k], dir, out, r) : refuse(r, "error", "cannot read the index");
    free(f.p);
    return ok;
  }
  return refuse(r, "error", "no tensor-cache.json or ndarray-cache.json in the folder");
}
/* MUTATE END */

static int decode_folder(const char *path, buf_t *out, refusal_t *r) {
  int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) { r->cls = "error"; snprintf(r->msg, sizeof r->msg, "cannot open the folder"); return 0; }
  int ok = read_folder(dir, out, r);
  close(dir);
  return ok;
}

static int answer(long long rid, const char *fmt, const char *dir, int persistent) {
  buf_t out = {0};
  refusal_t r = {"malformed", ""};
  int ok;
  if (strcmp(fmt, "tensor-cache")) ok = 0, r.cls = "unsupported", snprintf(r.msg, sizeof r.msg, "only tensor-cache");
  else if (!dir) ok = 0, r.cls = "unsupported", snprintf(r.msg, sizeof r.msg, "no input_dir");
  else ok = decode_folder(dir, &out, &r);
  if (persistent) {
    if (ok) printf("{\"id\": %lld, \"ok\": true, \"reading\": %s}\n", rid, out.p);
    else printf("{\"id\": %lld, \"ok\": false, \"error\": {\"class\": \"%s\", \"message\": \"%s\"}}\n", rid, r.cls, r.msg);
  } else if (ok) puts(out.p);
  else printf("{\"error\": {\"class\": \"%s\", \"message\": \"%s\"}}\n", r.cls, r.msg);
  fflush(stdout);
  free(out.p);
  return ok;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "info")) { puts(INFO); return 0; }
  if (argc >= 3 && !strcmp(argv[1], "decode")) {
    const char *dir = NULL;
    for (int i = 3; i < argc; i++)
      if (!strncmp(argv[i], "input_dir=", 10)) dir = argv[i] + 10;
    return answer(0, argv[2], dir, 0) ? 0 : 1;
  }
  if (argc >= 2 && !strcmp(argv[1], "serve")) {
    size_t cap = 1 << 16, n;
    char *line = malloc(cap);
    int c;
    for (;;) {
      n = 0;
      while ((c = getchar()) != EOF && c != '\n') {
        if (n + 2 > cap) { cap *= 2; line = realloc(line, cap); }
        line[n++] = (char)c;
      }
      if (c == EOF && n == 0) break;
      line[n] = 0;
      const char *id = strstr(line, "\"id\":");
      size_t fl = 0, dl = 0;
      const char *fmt = json_str(line, "format", &fl), *dir = json_str(line, "input_dir", &dl);
      char fmtbuf[32] = {0}, *dirbuf = NULL;
      if (fmt && fl < sizeof fmtbuf) memcpy(fmtbuf, fmt, fl);
      if (dir) { dirbuf = calloc(1, dl + 1); memcpy(dirbuf, dir, dl); }
      answer(id ? atoll(id + 5) : 0, fmtbuf, dirbuf, 1);
      free(dirbuf);
      if (c == EOF) break;
    }
    free(line);
    return 0;
  }
  fprintf(stderr, "usage: %s info | serve | decode tensor-cache input_dir=PATH\n", argv[0]);
  return 2;
}
