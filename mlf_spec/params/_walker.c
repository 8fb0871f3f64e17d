/* mlf_spec.params._walker: the header walk of a .params file in C (optional accelerator).

   What it does: the index of a .params file from its headers alone -- the file header
   (magic, reserved), the names, the count, and each tensor record's header (magic,
   reserved, device, ndim, dtype, shape, data_byte_size) -- read by pread from a file
   descriptor (or from a buffer), with every check the generated Python reader
   (generated/params_fast.py, generated/tensor_fast.py: read_params_file,
   read_tensor_record) makes that decides where the next header starts and whether the
   file is valid, in the same order. It makes the names, the name -> position index and the
   set of dtypes; the headers stay packed in one bytes object, made into the generated
   reader's flat header tuples on first use (`unpack`). `open_path` also opens the file (as
   mlf_spec/_io.open_regular_fd does), so that params.open runs few Python calls: in a
   process whose caches are cold each one costs microseconds. mlf_spec/params/codec.py
   composes them (dialect detection stays in Python, one source).

   Why by hand: the generated reader is the reference and the fallback; this file is the
   one compiled piece and is held to the reference by a differential test
   (tests/params/test_walker.py: every .params vector, hypothesis-drawn valid and broken
   files, hostile counts and truncation at every byte). Its constants are the spec's
   (spec/binary/params.yaml, spec/binary/tensor.yaml); the test checks them against the
   generated reader.

   On bad input it raises ``Refusal(kind, field, offset)``: the class name of the error
   the reference raises there, the field path and the byte offset. The caller then runs
   the reference reader, which words the error (one source for the messages); an I/O
   failure or a file that shrank is ``Refusal("io", None, offset)``.

   Memory: nothing is allocated by a count read from the input before the bytes it
   claims are known to exist (counts are checked against the file size first). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The constants come from the spec (generated/params_walker.h, made by tools/generate.py):
   the magics, MAX_NDIM, the byte offsets FILE_* and REC_* of the fixed headers, FIXED (where
   a record's shape starts) and the read windows. FIRST is the first read (header, names,
   first records); SPARSE_MIN the average tensor size from which headers are read one window
   at a time. After a tensor of more than SMALL_MAX bytes the next read is HEAD_WINDOW bytes: a
   header (at most 552 bytes) and maybe a small tensor after it; after a smaller one, twice
   that tensor and HEAD_WINDOW (a run of small tensors), at most MAX_WINDOW; DENSE_WINDOW for
   small tensors read as runs. Measured on the ResNet-50-like file of benchmarks/params.py
   (shuffled rounds, against 4 KiB and 16 KiB): every byte read costs (page-cache lookups and
   copies from memory the CPU has not cached), so a read is sized for headers, and the data of
   a tensor over 4 KiB is skipped by a read of its own. */
#include "params_walker.h"

#define FILE_COUNT FILE_NAMES              /* the name count ... */
#define FILE_FIRST_NAME (FILE_NAMES + 8)   /* ... then the names */

static PyObject *Refusal;

typedef struct {
    int fd;                   /* -1: `mem` holds the whole input */
    const unsigned char *mem;
    unsigned char *win;       /* fd: the bytes [base, base + have) of the file */
    uint64_t cap, base, have, size;
} source;

static uint64_t u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static int64_t i64(const unsigned char *p) { int64_t v; memcpy(&v, p, 8); return v; }
static int32_t i32(const unsigned char *p) { int32_t v; memcpy(&v, p, 4); return v; }

static PyObject *refuse(const char *kind, PyObject *field, uint64_t offset) {
    if (field == NULL && PyErr_Occurred()) return NULL;
    PyObject *args = Py_BuildValue("(sOK)", kind, field ? field : Py_None, (unsigned long long)offset);
    Py_XDECREF(field);
    if (args != NULL) {
        PyErr_SetObject(Refusal, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* The bytes [pos, pos + n) (the caller has checked n <= size - pos); in a file, read
   with `want` bytes at pos (at least n, at most the rest of the file) unless the window
   holds them. NULL with Refusal("io") on a read error or a file that shrank. */
static const unsigned char *need(source *s, uint64_t pos, uint64_t n, uint64_t want) {
    if (s->fd < 0) return s->mem + pos;
    if (s->win != NULL && pos >= s->base && pos + n <= s->base + s->have) return s->win + (pos - s->base);
    if (want < n) want = n;
    if (want > s->size - pos) want = s->size - pos;
    if (want > s->cap || s->win == NULL) {
        unsigned char *more = PyMem_Realloc(s->win, want ? want : 1);
        if (more == NULL) { PyErr_NoMemory(); return NULL; }
        s->win = more, s->cap = want;
    }
    uint64_t got = 0;
    s->have = 0;
    while (got < want) {
        ssize_t r = pread(s->fd, s->win + got, want - got, (off_t)(pos + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { refuse("io", NULL, pos + got); return NULL; }
        got += (uint64_t)r;
    }
    s->base = pos, s->have = want;
    return s->win;
}

/* arrays[i].<name> */
static PyObject *field(uint64_t i, const char *name) {
    return PyUnicode_FromFormat("arrays[%llu].%s", (unsigned long long)i, name);
}

/* The fixed part of record i at pos ran past the end: the first field that does not fit
   (as the generated `truncated` names it). */
static PyObject *cut_fixed(uint64_t i, uint64_t pos, uint64_t rem) {
    static const struct { unsigned start, stop; const char *name; } ends[] = {
        {REC_MAGIC, REC_RESERVED, "magic"}, {REC_RESERVED, REC_DEVICE_TYPE, "reserved"},
        {REC_DEVICE_TYPE, REC_NDIM, "device"}, {REC_NDIM, REC_DTYPE_CODE, "ndim"}, {REC_DTYPE_CODE, FIXED, "dtype"}};
    for (int k = 0; k < 5; k++)
        if (ends[k].stop > rem) return refuse("TruncatedError", field(i, ends[k].name), pos + ends[k].start);
    return refuse("TruncatedError", NULL, pos);
}

/* numel(shape) * ceil(bits / 8), or -1 when it is larger than any int64 (then it differs
   from every stored data_byte_size, as the reference's unbounded integers say). */
static int64_t expected_size(const unsigned char *shape, int32_t ndim, unsigned bits) {
    uint64_t n = (bits + 7) / 8;
    for (int32_t j = 0; j < ndim; j++)
        if (i64(shape + 8 * j) == 0) return 0;
    for (int32_t j = 0; j < ndim; j++)
        if (__builtin_mul_overflow(n, (uint64_t)i64(shape + 8 * j), &n)) return -1;
    return n > (uint64_t)INT64_MAX ? -1 : (int64_t)n;
}

/* A growing array of int64 words: the packed headers (see `walk`). */
typedef struct { int64_t *w; size_t n, cap; } words;

static int put(words *a, const int64_t *v, size_t k) {
    if (a->n + k > a->cap) {
        size_t cap = a->cap ? a->cap : 256;
        while (cap < a->n + k) cap *= 2;
        int64_t *more = PyMem_Realloc(a->w, cap * sizeof *more);
        if (more == NULL) { PyErr_NoMemory(); return -1; }
        a->w = more, a->cap = cap;
    }
    memcpy(a->w + a->n, v, k * sizeof *v);
    a->n += k;
    return 0;
}

/* The walk itself; see the module docstring. Returns (magic, reserved, names, by_name,
   packed, keys, end), or None for a file the caller reads otherwise (not sparse, not
   dense). ``by_name`` maps each name to the position of its last tensor (a repeated name
   reads as the later one, as in TVM; the dict keeps the first one's place). ``packed``
   holds each record's header as int64 words (data offset, reserved, device_id, ndim, code,
   bits, lanes, shape..., data_byte_size; magic and device_type are the constants the checks
   required), made into Python tuples only when asked for (`unpack`); ``keys`` is the set of
   (code, bits, lanes) that occur. */
static PyObject *walk(source *s, int dense) {
    uint64_t size = s->size, pos, n, magic, reserved, last = 0;
    PyObject *names = NULL, *by_name = NULL, *keys = NULL, *out = NULL;
    words packed = {NULL, 0, 0};
    int64_t last_key = -1;
    const unsigned char *p = need(s, 0, 0, FIRST);
    if (p == NULL) return NULL;
    int sparse = size >= FILE_FIRST_NAME && (n = u64(p + FILE_COUNT)) != 0 && size / n >= SPARSE_MIN;
    if (!sparse && !dense) Py_RETURN_NONE;
    if (size < FILE_NAMES) return refuse("TruncatedError", PyUnicode_FromString(size < FILE_RESERVED ? "magic" : "reserved"),
                                         size < FILE_RESERVED ? FILE_MAGIC : FILE_RESERVED);
    magic = u64(p + FILE_MAGIC), reserved = u64(p + FILE_RESERVED);
    if (magic != PARAMS_MAGIC) return refuse("ConstMismatchError", PyUnicode_FromString("magic"), FILE_MAGIC);
    if (size - FILE_COUNT < 8) return refuse("TruncatedError", PyUnicode_FromString("names"), FILE_COUNT);
    n = u64(p + FILE_COUNT), pos = FILE_FIRST_NAME;
    if (n > (size - pos) / 8) return refuse("LengthError", PyUnicode_FromString("names"), FILE_COUNT);
    if ((names = PyList_New((Py_ssize_t)n)) == NULL) return NULL;  /* n <= size / 8: the bytes exist */
    if ((by_name = _PyDict_NewPresized((Py_ssize_t)n)) == NULL) goto fail;
    for (uint64_t i = 0; i < n; i++) {
        if (size - pos < 8) {
            refuse("TruncatedError", PyUnicode_FromFormat("names[%llu]", (unsigned long long)i), pos);
            goto fail;
        }
        if ((p = need(s, pos, 8, FIRST)) == NULL) goto fail;
        uint64_t len = u64(p);
        if (len > size - pos - 8) {
            refuse("LengthError", PyUnicode_FromFormat("names[%llu]", (unsigned long long)i), pos);
            goto fail;
        }
        if ((p = need(s, pos, 8 + len, FIRST)) == NULL) goto fail;
        PyObject *name = PyUnicode_DecodeUTF8((const char *)p + 8, (Py_ssize_t)len, "surrogateescape");
        if (name == NULL) goto fail;
        PyList_SET_ITEM(names, (Py_ssize_t)i, name);
        PyObject *at = PyLong_FromUnsignedLongLong(i);
        if (at == NULL || PyDict_SetItem(by_name, name, at) < 0) { Py_XDECREF(at); goto fail; }
        Py_DECREF(at);
        pos += 8 + len;
    }
    if (size - pos < 8) { refuse("TruncatedError", PyUnicode_FromString("count"), pos); goto fail; }
    if ((p = need(s, pos, 8, FIRST)) == NULL) goto fail;
    if (u64(p) != n) { refuse("CountMismatchError", PyUnicode_FromString("count"), pos); goto fail; }
    pos += 8;
    if (n > (size - pos) / (FIXED + 8)) {  /* a record holds its fixed header and data_byte_size */ refuse("LengthError", PyUnicode_FromString("arrays"), pos); goto fail; }
    if ((keys = PySet_New(NULL)) == NULL) goto fail;
    /* room for 4-dimensional headers (n was checked against the bytes: 40 or more per record) */
    packed.cap = (size_t)(n < 4096 ? n : 4096) * 12;
    if (packed.cap && (packed.w = PyMem_Malloc(packed.cap * sizeof(int64_t))) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t rem = size - pos;
        /* the next read: a header's worth after a large tensor, two small tensors' worth after a small one */
        uint64_t want = dense ? DENSE_WINDOW : last == 0 || last > SMALL_MAX ? HEAD_WINDOW : 2 * last + HEAD_WINDOW;
        if (want > MAX_WINDOW && !dense) want = MAX_WINDOW;
        if (rem < FIXED) { cut_fixed(i, pos, rem); goto fail; }
        if ((p = need(s, pos, FIXED, want)) == NULL) goto fail;
        if (u64(p + REC_MAGIC) != TENSOR_MAGIC) { refuse("ConstMismatchError", field(i, "magic"), pos); goto fail; }
        if (i32(p + REC_DEVICE_TYPE) != 1) {
            refuse("ConstraintError", field(i, "device"), pos + REC_DEVICE_TYPE);
            goto fail;
        }
        int32_t ndim = i32(p + REC_NDIM);
        if (ndim < 0 || ndim > MAX_NDIM) { refuse("ConstraintError", field(i, "ndim"), pos + REC_NDIM); goto fail; }
        uint64_t sp = pos + FIXED, k = (uint64_t)ndim;
        if (8 * k + 8 > size - sp) {
            if (8 * k > size - sp) refuse("TruncatedError", field(i, "shape"), sp);
            else refuse("TruncatedError", field(i, "data_byte_size"), sp + 8 * k);
            goto fail;
        }
        if ((p = need(s, pos, FIXED + 8 * k + 8, want)) == NULL) goto fail;
        const unsigned char *shape = p + FIXED;
        for (uint64_t j = 0; j < k; j++)
            if (i64(shape + 8 * j) < 0) {
                refuse("ConstraintError", PyUnicode_FromFormat("arrays[%llu].shape[%llu]", (unsigned long long)i,
                                                               (unsigned long long)j), sp + 8 * j);
                goto fail;
            }
        int64_t nbytes = i64(shape + 8 * k), expected = expected_size(shape, ndim, p[REC_DTYPE_BITS]);
        if (expected < 0 || nbytes != expected) {
            refuse("ConstraintError", field(i, "data_byte_size"), sp + 8 * k);
            goto fail;
        }
        uint64_t dp = sp + 8 * k + 8;
        if ((uint64_t)nbytes > size - dp) { refuse("TruncatedError", field(i, "data"), dp); goto fail; }
        int64_t code = p[REC_DTYPE_CODE], bits = p[REC_DTYPE_BITS];
        int64_t lanes = p[REC_DTYPE_LANES] | (p[REC_DTYPE_LANES + 1] << 8), key = code | (bits << 8) | (lanes << 16);
        int64_t head[7] = {(int64_t)dp, i64(p + REC_RESERVED), i32(p + REC_DEVICE_ID), ndim, code, bits, lanes};
        if (put(&packed, head, 7) < 0) goto fail;
        for (uint64_t j = 0; j <= k; j++) {
            int64_t v = i64(shape + 8 * j);
            if (put(&packed, &v, 1) < 0) goto fail;
        }
        if (key != last_key) {
            PyObject *t = Py_BuildValue("(iii)", (int)code, (int)bits, (int)lanes);
            if (t == NULL || PySet_Add(keys, t) < 0) { Py_XDECREF(t); goto fail; }
            Py_DECREF(t);
            last_key = key;
        }
        last = FIXED + 8 * k + 8 + (uint64_t)nbytes;
        pos = dp + (uint64_t)nbytes;
    }
    PyObject *blob = PyBytes_FromStringAndSize((const char *)packed.w, (Py_ssize_t)(packed.n * sizeof(int64_t)));
    if (blob == NULL) goto fail;
    out = Py_BuildValue("(KKNNNNK)", (unsigned long long)magic, (unsigned long long)reserved, names, by_name, blob,
                        keys, (unsigned long long)pos);
    PyMem_Free(packed.w);
    return out;
fail:
    PyMem_Free(packed.w);
    Py_XDECREF(names);
    Py_XDECREF(by_name);
    Py_XDECREF(keys);
    return NULL;
}

PyDoc_STRVAR(unpack_doc,
"unpack(packed) -> (heads, offsets)\n\n"
"The records of a walk as the generated reader gives them: flat header tuples (magic,\n"
"reserved, device_type, device_id, ndim, code, bits, lanes, *shape, data_byte_size; see\n"
"read_tensor_record_heads) and the offset where each one's data starts.");

static PyObject *unpack(PyObject *self, PyObject *arg) {
    char *raw;
    Py_ssize_t len;
    if (PyBytes_AsStringAndSize(arg, &raw, &len) < 0) return NULL;
    size_t n = (size_t)len / sizeof(int64_t), at = 0;
    PyObject *heads = PyList_New(0), *offsets = PyList_New(0), *magic = PyLong_FromUnsignedLongLong(TENSOR_MAGIC);
    if (heads == NULL || offsets == NULL || magic == NULL) goto fail;
    while (at + 8 <= n) {
        int64_t w[7];
        memcpy(w, raw + at * 8, sizeof w);
        if (w[3] < 0 || w[3] > MAX_NDIM || at + 8 + (size_t)w[3] > n) {
            PyErr_SetString(PyExc_ValueError, "not a walk's packed headers");
            goto fail;
        }
        size_t k = (size_t)w[3];
        PyObject *h = PyTuple_New((Py_ssize_t)(k + 9));
        if (h == NULL) goto fail;
        Py_INCREF(magic);
        PyTuple_SET_ITEM(h, 0, magic);
        PyTuple_SET_ITEM(h, 1, PyLong_FromUnsignedLongLong((uint64_t)w[1]));
        PyTuple_SET_ITEM(h, 2, PyLong_FromLong(1));
        for (int j = 2; j < 7; j++) PyTuple_SET_ITEM(h, j + 1, PyLong_FromLongLong(w[j]));
        for (size_t j = 0; j <= k; j++) {
            int64_t v;
            memcpy(&v, raw + (at + 7 + j) * 8, 8);
            PyTuple_SET_ITEM(h, (Py_ssize_t)(8 + j), PyLong_FromLongLong(v));
        }
        int bad = PyList_Append(heads, h) < 0;
        Py_DECREF(h);
        for (Py_ssize_t j = 0; !bad && j < (Py_ssize_t)(k + 9); j++) bad = PyTuple_GET_ITEM(h, j) == NULL;
        PyObject *o = bad ? NULL : PyLong_FromLongLong(w[0]);
        if (o == NULL || PyList_Append(offsets, o) < 0) { Py_XDECREF(o); goto fail; }
        Py_DECREF(o);
        at += 8 + k;
    }
    Py_DECREF(magic);
    return Py_BuildValue("(NN)", heads, offsets);
fail:
    Py_XDECREF(heads);
    Py_XDECREF(offsets);
    Py_XDECREF(magic);
    return NULL;
}

PyDoc_STRVAR(index_fd_doc,
"index_fd(fd, size, dense) -> (magic, reserved, names, by_name, packed, keys, end) | None\n\n"
"The index of the .params file open at ``fd`` (``size`` bytes), its headers read by pread.\n"
"None when its tensors are small (under 16 KiB on average) and not ``dense``: the caller\n"
"reads those as runs. Raises Refusal(kind, field, offset) on bad input.");

static PyObject *index_fd(PyObject *self, PyObject *args) {
    int fd, dense;
    unsigned long long size;
    if (!PyArg_ParseTuple(args, "iKp", &fd, &size, &dense)) return NULL;
    source s = {fd, NULL, NULL, 0, 0, 0, size};
    PyObject *out = walk(&s, dense);
    PyMem_Free(s.win);
    return out;
}

PyDoc_STRVAR(index_buffer_doc,
"index_buffer(buf, size, dense=False) -> (magic, reserved, names, by_name, packed, keys, end) | None\n\n"
"The same walk over the first ``size`` bytes of a buffer.");

static PyObject *index_buffer(PyObject *self, PyObject *args) {
    Py_buffer view;
    unsigned long long size;
    int dense = 0;
    if (!PyArg_ParseTuple(args, "y*K|p", &view, &size, &dense)) return NULL;
    if (size > (unsigned long long)view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "size is larger than the buffer");
        return NULL;
    }
    source s = {-1, view.buf, NULL, 0, 0, size, size};
    PyObject *out = walk(&s, dense);
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(open_path_doc,
"open_path(path, dense) -> (fd, size, walk | None) | None\n\n"
"``path`` opened for reading as mlf_spec._io.open_regular_fd opens it (not blocking on a\n"
"FIFO, close-on-exec, then blocking), its size taken and, unless it is empty, walked as\n"
"index_fd walks it (walk None: small tensors, not ``dense``). None, with nothing left\n"
"open, when it cannot be opened or is not a regular file: the caller opens it again and\n"
"names the error. On a Refusal the file is closed.");

static PyObject *open_path(PyObject *self, PyObject *args) {
    PyObject *given, *path = NULL, *walked = NULL;
    int dense, fd, off = 0;
    struct stat st;
    if (!PyArg_ParseTuple(args, "Op", &given, &dense)) return NULL;
    if (!PyUnicode_FSConverter(given, &path)) {
        PyErr_Clear();  /* (an embedded NUL, a wrong type): the caller's open says it */
        Py_RETURN_NONE;
    }
    const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    if (PySys_Audit("open", "OOi", given, Py_None, flags) < 0) {  /* as os.open: audit hooks see it */
        Py_DECREF(path);
        return NULL;
    }
    do fd = open(PyBytes_AS_STRING(path), flags);
    while (fd < 0 && errno == EINTR);
    Py_DECREF(path);
    if (fd < 0) Py_RETURN_NONE;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || ioctl(fd, FIONBIO, &off) != 0) {
        close(fd);
        Py_RETURN_NONE;
    }
    if (st.st_size > 0) {
        source s = {fd, NULL, NULL, 0, 0, 0, (uint64_t)st.st_size};
        walked = walk(&s, dense);
        PyMem_Free(s.win);
        if (walked == NULL) {
            close(fd);
            return NULL;
        }
    } else {
        walked = Py_NewRef(Py_None);
    }
    PyObject *out = Py_BuildValue("(iKN)", fd, (unsigned long long)st.st_size, walked);
    if (out == NULL) close(fd);
    return out;
}

static PyMethodDef methods[] = {
    {"open_path", open_path, METH_VARARGS, open_path_doc},
    {"index_fd", index_fd, METH_VARARGS, index_fd_doc},
    {"index_buffer", index_buffer, METH_VARARGS, index_buffer_doc},
    {"unpack", unpack, METH_O, unpack_doc},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walker",
    "The .params header walk in C (optional accelerator; see mlf_spec/params/accel.py).", -1, methods};

PyMODINIT_FUNC PyInit__walker(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Refusal = PyErr_NewExceptionWithDoc("mlf_spec.params._walker.Refusal",
        "Bad input: args are (kind, field, offset), kind the reference's error class name or 'io'.", NULL, NULL);
    if (Refusal == NULL || PyModule_AddObject(m, "Refusal", Refusal) < 0) {
        Py_XDECREF(Refusal);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(Refusal);
    PyModule_AddIntConstant(m, "MAX_NDIM", MAX_NDIM);
    PyModule_AddObject(m, "PARAMS_MAGIC", PyLong_FromUnsignedLongLong(PARAMS_MAGIC));
    PyModule_AddObject(m, "TENSOR_MAGIC", PyLong_FromUnsignedLongLong(TENSOR_MAGIC));
    return m;
}
