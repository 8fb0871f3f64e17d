#define _POSIX_C_SOURCE 200809L
/* params_check: a small .params validator in the style of a third-party reader (not written
 * for mlf-spec's mutation harness: no MUTATE markers, its own protocol code, POSIX getline and
 * openat, a static buffer sized by a macro, casts to byte pointers, an enum of states, error
 * messages made with snprintf). It speaks the conformance protocol with `"reads": []`: only
 * whether it accepts or refuses is judged. Built with -std=c11. Used by
 * tests/conformance/test_mutate_third_party.py to show that `conformance mutate` works on it
 * first time. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 4096
#define MAX_NDIM 64

enum verdict { V_OK = 0, V_REFUSED = 1 };

struct input {
  const unsigned char *p;
  size_t n, at;
  enum verdict state;
  char why[128];
};

static void refuse(struct input *in, const char *what) {
  if (in->state == V_OK) snprintf(in->why, sizeof in->why, "%s at byte %zu", what, in->at);
  in->state = V_REFUSED;
}

static uint64_t take(struct input *in, size_t width) {
  uint64_t v = 0;
  if (in->state != V_OK) return 0;
  if (in->n - in->at < width) { refuse(in, "input ends inside a field"); in->at = in->n; return 0; }
  for (size_t k = 0; k < width; k++) v |= (uint64_t)in->p[in->at + k] << (8 * k);
  in->at += width;
  return v;
}

static int code_known(unsigned code, unsigned bits) {
  if (code <= 6) return 1;
  if (code >= 7 && code <= 14) return bits == 8;
  if (code == 15 || code == 16) return bits == 6;
  if (code == 17) return bits == 4;
  return code >= 129;
}

static void tensor(struct input *in) {
  if (take(in, 8) != 0xDD5E40F096B4A13FULL) { refuse(in, "bad tensor magic"); return; }
  take(in, 8);
  int32_t device_type = (int32_t)take(in, 4);
  take(in, 4);
  int32_t ndim = (int32_t)take(in, 4);
  if (in->state != V_OK) return;
  if (device_type != 1) { refuse(in, "not a CPU tensor"); return; }
  if (ndim < 0 || ndim > MAX_NDIM) {
    char msg[64];
    snprintf(msg, sizeof msg, "ndim %d outside 0..%d", (int)ndim, 64);
    refuse(in, msg);
    return;
  }
  unsigned code = (unsigned)take(in, 1), bits = (unsigned)take(in, 1);
  take(in, 2);
  if (in->state == V_OK && !code_known(code, bits)) { refuse(in, "unknown dtype code"); return; }
  uint64_t numel = 1;
  int zero = 0, wraps = 0;
  for (int32_t i = 0; i < ndim && in->state == V_OK; i++) {
    int64_t e = (int64_t)take(in, 8);
    if (e < 0) { refuse(in, "negative extent"); return; }
    if (e == 0) zero = 1;
    else if (numel > UINT64_MAX / (uint64_t)e) wraps = 1;
    else numel *= (uint64_t)e;
  }
  if (zero) { numel = 0; wraps = 0; }
  uint64_t per = (bits + 7) / 8;
  if (per && numel > UINT64_MAX / per) wraps = 1;
  int64_t size = (int64_t)take(in, 8);
  if (in->state != V_OK) return;
  if (wraps || size < 0 || (uint64_t)size != numel * per) { refuse(in, "data size is not numel x bytes"); return; }
  if ((uint64_t)size > in->n - in->at) { refuse(in, "data runs past the input"); return; }
  in->at += (size_t)size;
}

static int check(const unsigned char *p, size_t n, char *why, size_t why_n) {
  struct input in = {p, n, 0, V_OK, ""};
  if (take(&in, 8) != 0xF7E58D4F05049CB7ULL && in.state == V_OK) refuse(&in, "bad file magic");
  take(&in, 8);
  uint64_t names = take(&in, 8);
  if (in.state == V_OK && names > (in.n - in.at) / 8) refuse(&in, "more names than bytes");
  for (uint64_t i = 0; i < names && in.state == V_OK; i++) {
    uint64_t len = take(&in, 8);
    if (in.state == V_OK && len > in.n - in.at) refuse(&in, "a name runs past the input");
    else in.at += (size_t)len;
  }
  uint64_t tensors = take(&in, 8);
  if (in.state == V_OK && tensors != names) refuse(&in, "tensor count differs from the name count");
  for (uint64_t i = 0; i < tensors && in.state == V_OK; i++) tensor(&in);
  if (in.state != V_OK) snprintf(why, why_n, "%s", in.why);
  return in.state == V_OK;
}

/* ---- protocol ---- */
static const char INFO[] = "{\"protocol\": \"mlf-conformance/1\", \"name\": \"params-check\", \"version\": \"1\", "
  "\"serve\": true, \"formats\": [{\"format\": \"params\", \"roles\": [\"decode\"], \"scope\": {\"dialect\": "
  "[\"v0.26\"]}, \"reads\": []}]}";

static int b64(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static unsigned char *decode64(const char *s, size_t len, size_t *n) {
  unsigned char *out = malloc(len / 4 * 3 + 3);
  uint32_t acc = 0;
  int have = 0;
  *n = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64((unsigned char)s[i]);
    if (v < 0) continue;
    acc = acc << 6 | (uint32_t)v;
    have += 6;
    if (have >= 8) { have -= 8; out[(*n)++] = (unsigned char)(acc >> have); }
  }
  return out;
}

static void answer(long long id, const unsigned char *p, size_t n) {
  char why[160] = "";
  unsigned char *copy = malloc(n ? n : 1); /* exactly n bytes: a read past the input is seen */
  memcpy(copy, p, n);
  if (check((const unsigned char *)copy, n, why, sizeof why)) printf("{\"id\": %lld, \"ok\": true, \"reading\": {\"format\": \"params\"}}\n", id);
  else printf("{\"id\": %lld, \"ok\": false, \"error\": {\"class\": \"malformed\", \"message\": \"%s\"}}\n", id, why);
  fflush(stdout);
  free(copy);
}

/* stdin may be a directory when someone runs `params_check decode params < dir`: refuse it */
static int stdin_is_directory(void) {
  int fd = openat(0, ".", O_RDONLY | O_DIRECTORY);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

static int serve(void) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  while ((got = getline(&line, &cap, stdin)) > 0) {
    const char *id = strstr(line, "\"id\":");
    const char *in = strstr(line, "\"input\": \"");
    long long rid = id ? atoll(id + 5) : 0;
    size_t n = 0;
    unsigned char *data = NULL;
    if (in) {
      in += 10;
      const char *end = strchr(in, '"');
      data = decode64(in, end ? (size_t)(end - in) : 0, &n);
    }
    answer(rid, data ? data : (const unsigned char *)"", n);
    free(data);
  }
  free(line);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "info")) { puts(INFO); return 0; }
  if (argc > 1 && !strcmp(argv[1], "serve")) return serve();
  if (argc > 2 && !strcmp(argv[1], "decode")) {
    static unsigned char wide[CHUNK * 2];
    unsigned char *all = NULL;
    size_t n = 0, got;
    if (stdin_is_directory()) { fprintf(stderr, "stdin is a directory\n"); return 2; }
    while ((got = fread(wide, 1, sizeof wide, stdin)) > 0) {
      all = realloc(all, n + got);
      memcpy(all + n, wide, got);
      n += got;
    }
    char why[160] = "";
    int ok = check((const unsigned char *)(all ? all : wide), n, why, sizeof why);
    if (ok) puts("{\"format\": \"params\"}");
    else printf("{\"error\": {\"class\": \"malformed\", \"message\": \"%s\"}}\n", why);
    free(all);
    return ok ? 0 : 1;
  }
  fprintf(stderr, "usage: %s info | serve | decode params\n", argv[0]);
  return 2;
}
