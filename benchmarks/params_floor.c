/* The floor of a lazy open of a .params file on this machine: the least any reader must do
   to index the file, in C. The format puts each tensor's header in front of its data, so a
   reader touches one header per tensor (a .params index cannot be read in one piece as a
   safetensors header can); these walkers read exactly those bytes, with the checks that
   decide where the next header starts, and make no objects. benchmarks/params.py builds
   this file with gcc at run time and calls it through ctypes (a named competitor).

   walk_pread: the headers by pread, one read per header the last read did not hold (1 KiB,
               or twice the last tensor when that was small: the library's windows).
   walk_mmap:  the headers through one read-only mapping of the file (page faults instead
               of system calls).
   Both return the number of tensors, or -1 for a file they refuse. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PARAMS_MAGIC 0xf7e58d4f05049cb7ULL
#define TENSOR_MAGIC 0xdd5e40f096b4a13fULL
#define FIRST (16 << 10)

static uint64_t u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static int32_t i32(const unsigned char *p) { int32_t v; memcpy(&v, p, 4); return v; }

/* The record whose header is at p (avail bytes there; the file ends left bytes after p):
   its whole size (header and data), 0 when more bytes are needed, -1 when it is bad. */
static int64_t record(const unsigned char *p, uint64_t avail, uint64_t left) {
    if (avail < 28) return left < 28 ? -1 : 0;
    if (u64(p) != TENSOR_MAGIC || i32(p + 16) != 1) return -1;
    int32_t ndim = i32(p + 24);
    if (ndim < 0 || ndim > 64) return -1;
    uint64_t head = 40 + 8 * (uint64_t)ndim;
    if (avail < head) return head > left ? -1 : 0;
    uint64_t n = (p[29] + 7) / 8;
    for (int32_t i = 0; i < ndim; i++) {
        int64_t d = (int64_t)u64(p + 32 + 8 * i);
        if (d < 0) return -1;
        n *= (uint64_t)d;
    }
    uint64_t nbytes = u64(p + 32 + 8 * ndim);
    if (nbytes != n || nbytes > left - head) return -1;
    return (int64_t)(head + nbytes);
}

/* The names (lengths checked, bytes skipped) and the tensor count: the offset of the first
   record, -2 when the names go past the have bytes read, -1 when the file is bad. */
static int64_t names(const unsigned char *b, uint64_t have, uint64_t size, uint64_t *count) {
    if (have < 24) return -1;
    if (u64(b) != PARAMS_MAGIC) return -1;
    uint64_t n = u64(b + 16), pos = 24;
    for (uint64_t i = 0; i < n; i++) {
        if (have - pos < 8) return have < size ? -2 : -1;
        uint64_t len = u64(b + pos);
        if (len > size - pos - 8) return -1;
        if (len > have - pos - 8) return -2;
        pos += 8 + len;
    }
    if (have - pos < 8) return have < size ? -2 : -1;
    if (u64(b + pos) != n) return -1;
    *count = n;
    return (int64_t)pos + 8;
}

long walk_pread(const char *path) {
    static unsigned char win[64 << 10];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    long out = -1;
    unsigned char *head = NULL;
    if (fstat(fd, &st) != 0) goto done;
    uint64_t size = (uint64_t)st.st_size, n = 0, have = size < FIRST ? size : FIRST;
    int64_t pos;
    for (;;) {  /* the file header and the names; read more while the names go on */
        unsigned char *more = realloc(head, have ? have : 1);
        if (more == NULL) goto done;
        head = more;
        if (pread(fd, head, have, 0) != (ssize_t)have) goto done;
        pos = names(head, have, size, &n);
        if (pos != -2) break;
        have = have * 8 < size ? have * 8 : size;
    }
    if (pos < 0) goto done;
    const unsigned char *b = head;
    uint64_t base = 0, last = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t off = (uint64_t)pos - base;
        int64_t r = off < have ? record(b + off, have - off, size - pos) : 0;
        if (r == 0) {
            uint64_t want = last == 0 || last > FIRST ? 1024 : 2 * last + 1024;
            if (want > sizeof win) want = sizeof win;
            if (want > size - pos) want = size - pos;
            ssize_t got = pread(fd, win, want, pos);
            if (got <= 0) goto done;
            b = win, base = (uint64_t)pos, have = (uint64_t)got;
            r = record(win, have, size - pos);
        }
        if (r <= 0) goto done;
        last = (uint64_t)r;
        pos += r;
    }
    out = (long)n;
done:
    free(head);
    close(fd);
    return out;
}

long walk_mmap(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0) { close(fd); return -1; }
    uint64_t size = (uint64_t)st.st_size, n = 0;
    const unsigned char *b = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (b == MAP_FAILED) return -1;
    long out = -1;
    int64_t pos = names(b, size, size, &n);
    if (pos < 0) goto done;
    for (uint64_t i = 0; i < n; i++) {
        int64_t r = record(b + pos, size - pos, size - pos);
        if (r <= 0) goto done;
        pos += r;
    }
    out = (long)n;
done:
    munmap((void *)b, size);
    return out;
}
