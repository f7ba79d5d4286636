/*
 * strobe._strobe: the C half of the Python package (python/strobe/__init__.py
 * is the rest). Built on the stable ABI, so one _strobe.abi3.so serves Python
 * 3.8 and later, with libstrobe linked in statically and its symbols hidden.
 *
 * The hot path is `with strobe.span("name"):`. span() returns one cached span
 * object per name string (a dict lookup, no allocation), and a span keeps
 * its name's UTF-8 bytes, so __enter__ and __exit__ are one libstrobe call
 * each, with no encoding. A span holds no state of its own (libstrobe closes
 * the innermost open span of a name on this thread), so one object serves
 * every thread, every nesting level and every use.
 *
 * Nothing here raises because of the recorder: libstrobe drops and counts.
 * What raises is a bad argument (a name that is not a str of 1 to 255 UTF-8
 * bytes without NUL, a value that is not a number), whether or not a recorder
 * listens, so a script behaves the same under `strobe run` and without it.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x03080000
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "strobe/ring.h"
#include "strobe/strobe.h"

#define SPAN_CACHE_MAX 4096 /* names cached; spans of further names are made per call */

struct span {
    PyObject_HEAD PyObject *name; /* the str it was made from */
    char *utf8; /* its UTF-8 bytes, NUL-terminated; PyMem_Malloc'd, freed with the span */
};

static PyTypeObject *span_type;
static PyObject *span_cache; /* dict: exact str -> span */
static PyObject *decorate;   /* __init__.py's (span, fn) -> wrapper, set by _set_decorator */

/* A new span for name, uncached; NULL with an exception set. */
static struct span *span_make(PyTypeObject *type, PyObject *name)
{
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "strobe: a name is a str, not %R", (PyObject *)Py_TYPE(name));
        return NULL;
    }
    PyObject *bytes = PyUnicode_AsUTF8String(name);
    if (!bytes)
        return NULL;
    char *text;
    Py_ssize_t len;
    struct span *s = NULL;
    if (PyBytes_AsStringAndSize(bytes, &text, &len) < 0)
        goto out_bytes;
    if (len < 1 || len > STROBE_NAME_MAX || memchr(text, '\0', (size_t)len)) {
        PyErr_Format(PyExc_ValueError,
                     "strobe: a name is 1 to %d bytes of UTF-8 without NUL, not %R",
                     STROBE_NAME_MAX, name);
        goto out_bytes;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    s = (struct span *)alloc(type, 0);
    if (!s)
        goto out_bytes;
    s->utf8 = PyMem_Malloc((size_t)len + 1);
    if (!s->utf8) {
        Py_DECREF(s);
        s = NULL;
        PyErr_NoMemory();
        goto out_bytes;
    }
    memcpy(s->utf8, text, (size_t)len + 1);
    Py_INCREF(name);
    s->name = name;
out_bytes:
    Py_DECREF(bytes);
    return s;
}

/* The span for name, from the cache when it is an exact str; a new
 * reference, or NULL with an exception set. */
static struct span *span_for(PyObject *name)
{
    int cacheable = PyUnicode_CheckExact(name);
    if (cacheable) {
        PyObject *hit = PyDict_GetItemWithError(span_cache, name); /* borrowed */
        if (hit) {
            Py_INCREF(hit);
            return (struct span *)hit;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    struct span *s = span_make(span_type, name);
    if (s && cacheable && PyDict_Size(span_cache) < SPAN_CACHE_MAX &&
        PyDict_SetItem(span_cache, name, (PyObject *)s) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

/* ---- the span type ------------------------------------------------------- */

static PyObject *span_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *name;
    static char *kwlist[] = {"name", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Span", kwlist, &name))
        return NULL;
    return (PyObject *)span_make(type, name);
}

static void span_dealloc(PyObject *self)
{
    struct span *s = (struct span *)self;
    PyTypeObject *type = Py_TYPE(self);
    PyMem_Free(s->utf8);
    Py_XDECREF(s->name);
    freefunc free_self = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_self(self);
    Py_DECREF(type); /* instances of heap types hold their type */
}

static PyObject *span_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    strobe_span_begin(((struct span *)self)->utf8);
    Py_INCREF(self);
    return self;
}

/* METH_VARARGS: METH_FASTCALL is in the limited API from 3.10 only. The
 * exception, if any, is never swallowed. */
static PyObject *span_exit(PyObject *self, PyObject *args)
{
    (void)args;
    strobe_span_end(((struct span *)self)->utf8);
    Py_RETURN_FALSE;
}

/* span(fn): the decorator, made by __init__.py so that it is a real Python
 * function (functools.wraps, binds as a method). */
static PyObject *span_call(PyObject *self, PyObject *args, PyObject *kwds)
{
    if ((kwds && PyDict_Size(kwds) > 0) || PyTuple_Size(args) != 1) {
        PyErr_SetString(PyExc_TypeError, "strobe.span(name) decorates one function");
        return NULL;
    }
    PyObject *fn = PyTuple_GetItem(args, 0);
    if (!fn)
        return NULL;
    if (!decorate) {
        PyErr_SetString(PyExc_RuntimeError, "strobe: the package is not initialised");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(decorate, self, fn, NULL);
}

static PyObject *span_repr(PyObject *self)
{
    return PyUnicode_FromFormat("strobe.span(%R)", ((struct span *)self)->name);
}

static PyObject *span_get_name(PyObject *self, void *closure)
{
    (void)closure;
    PyObject *name = ((struct span *)self)->name;
    Py_INCREF(name);
    return name;
}

static PyMethodDef span_methods[] = {
    {"__enter__", span_enter, METH_NOARGS, "Open the span on this thread."},
    {"__exit__", span_exit, METH_VARARGS, "Close the span; never swallows an exception."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef span_getset[] = {
    {"name", span_get_name, NULL, "The span's name.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot span_slots[] = {
    {Py_tp_doc, "A named span: a context manager, and a decorator of functions. Made by "
                "strobe.span(name)."},
    {Py_tp_new, span_new},
    {Py_tp_dealloc, span_dealloc},
    {Py_tp_call, span_call},
    {Py_tp_repr, span_repr},
    {Py_tp_methods, span_methods},
    {Py_tp_getset, span_getset},
    {0, NULL},
};

static PyType_Spec span_spec = {
    .name = "strobe.Span",
    .basicsize = sizeof(struct span),
    .itemsize = 0,
    .flags = Py_TPFLAGS_DEFAULT, /* holds only a str: no cycles, no GC */
    .slots = span_slots,
};

/* ---- module functions ---------------------------------------------------- */

static PyObject *mod_span(PyObject *mod, PyObject *name)
{
    (void)mod;
    return (PyObject *)span_for(name);
}

static PyObject *mod_instant(PyObject *mod, PyObject *name)
{
    (void)mod;
    struct span *s = span_for(name);
    if (!s)
        return NULL;
    strobe_instant(s->utf8);
    Py_DECREF(s);
    Py_RETURN_NONE;
}

static PyObject *mod_complete(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *name;
    long long start_ns, duration_ns;
    if (!PyArg_ParseTuple(args, "OLL:complete", &name, &start_ns, &duration_ns))
        return NULL;
    if (duration_ns < 0) {
        PyErr_SetString(PyExc_ValueError, "strobe.complete: duration_ns is negative");
        return NULL;
    }
    struct span *s = span_for(name);
    if (!s)
        return NULL;
    strobe_span_complete(s->utf8, (int64_t)start_ns, (int64_t)duration_ns);
    Py_DECREF(s);
    Py_RETURN_NONE;
}

/* A step number from a Python int: 0 to 2^32 - 1; -1 with an exception set. */
static int step_number(PyObject *obj, uint32_t *step)
{
    PyObject *index = PyNumber_Index(obj); /* an int, or anything with __index__ */
    if (!index)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(index);
    Py_DECREF(index);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "strobe: a step is 0 to 4294967295");
        }
        return -1;
    }
    if (v > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "strobe: a step is 0 to 4294967295");
        return -1;
    }
    *step = (uint32_t)v;
    return 0;
}

static PyObject *mod_log(PyObject *mod, PyObject *args, PyObject *kwds)
{
    (void)mod;
    PyObject *name, *value, *step_obj = Py_None;
    static char *kwlist[] = {"name", "value", "step", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|O:log", kwlist, &name, &value, &step_obj))
        return NULL;
    /* a str is not a number, even one float() would parse */
    if (PyUnicode_Check(value) || PyBytes_Check(value)) {
        PyErr_Format(PyExc_TypeError, "strobe.log: value is a number, not %R",
                     (PyObject *)Py_TYPE(value));
        return NULL;
    }
    double v = PyFloat_AsDouble(value); /* __float__, else __index__ */
    if (v == -1.0 && PyErr_Occurred())
        return NULL;
    uint32_t step = 0;
    if (step_obj != Py_None && step_number(step_obj, &step) < 0)
        return NULL;
    struct span *s = span_for(name);
    if (!s)
        return NULL;
    if (step_obj == Py_None)
        strobe_counter(s->utf8, v);
    else
        strobe_counter_at_step(s->utf8, v, step);
    Py_DECREF(s);
    Py_RETURN_NONE;
}

static PyObject *mod_step(PyObject *mod, PyObject *n)
{
    (void)mod;
    uint32_t step;
    if (step_number(n, &step) < 0)
        return NULL;
    strobe_step(step);
    Py_RETURN_NONE;
}

static PyObject *mod_enabled(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyBool_FromLong(strobe_enabled());
}

static PyObject *mod_control_seq(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyLong_FromUnsignedLongLong(strobe_control_seq());
}

static PyObject *mod_set_decorator(PyObject *mod, PyObject *fn)
{
    (void)mod;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "strobe: the decorator factory must be callable");
        return NULL;
    }
    Py_INCREF(fn);
    PyObject *old = decorate;
    decorate = fn;
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
    {"span", mod_span, METH_O,
     "span(name) -> Span: a context manager and decorator; one cached object per name."},
    {"instant", mod_instant, METH_O, "instant(name): a point in time."},
    {"complete", mod_complete, METH_VARARGS,
     "complete(name, start_ns, duration_ns): a span already measured (CLOCK_MONOTONIC)."},
    {"log", (PyCFunction)(void (*)(void))mod_log, METH_VARARGS | METH_KEYWORDS,
     "log(name, value, step=None): a value the script measured."},
    {"step", mod_step, METH_O, "step(n): step n begins (the package's strobe.step wraps it)."},
    {"enabled", mod_enabled, METH_NOARGS, "enabled() -> bool: whether a recorder listens."},
    {"control_seq", mod_control_seq, METH_NOARGS,
     "control_seq() -> int: the recorder's request counter (strobe ctl); 0 when none."},
    {"_set_decorator", mod_set_decorator, METH_O, "Set the (span, fn) -> wrapper factory."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "strobe._strobe",
    .m_doc = "strobe's annotation API in C (libstrobe); use it through the strobe package.",
    .m_size = -1,
    .m_methods = mod_methods,
};

PyMODINIT_FUNC PyInit__strobe(void);

PyMODINIT_FUNC PyInit__strobe(void)
{
    PyObject *mod = PyModule_Create(&module_def);
    if (!mod)
        return NULL;
    if (!span_type && !(span_type = (PyTypeObject *)PyType_FromSpec(&span_spec)))
        goto out_mod;
    if (!span_cache && !(span_cache = PyDict_New()))
        goto out_mod;
    Py_INCREF(span_type);
    if (PyModule_AddObject(mod, "Span", (PyObject *)span_type) < 0) {
        Py_DECREF(span_type);
        goto out_mod;
    }
    return mod;
out_mod:
    Py_DECREF(mod);
    return NULL;
}
