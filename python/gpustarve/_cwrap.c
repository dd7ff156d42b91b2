/* _cwrap.c — gpustarve._cwrap, the call wrapper that leaves no Python frame.
 *
 * Responsible for: one type, Wrapper(orig, before=None, after=None,
 * on_error=None, reduce=None, after_star=False), that gpustarve's Python
 * side puts in place of a DataLoader method (or the program's
 * worker_init_fn, a worker's fetch, a loader's exec_module). Calling it
 * calls, from C:
 *   before(args, kwargs)  -> None, or (ctx, args, kwargs) to call orig with
 *                            other arguments (args None: the same ones);
 *   orig(*args, **kwargs) -> the result, returned as it is;
 *   after(ctx, args, result)        when orig returned (after(*ctx) with
 *                                   after_star, when ctx is a tuple: a
 *                                   ctypes marker function called with no
 *                                   Python frame at all);
 *   on_error(ctx, args)             when orig raised; the exception is put
 *                                   aside while it runs and comes back as it
 *                                   was (traceback included).
 * No frame of gpustarve is on the Python stack while orig runs, so a stack
 * walked from inside it (inspect.stack(), sys._getframe, traceback) and a
 * traceback through it are the untraced ones (docs/python.md, "Invisible to
 * the program"). It binds like a function (a bound method of
 * types.MethodType when read through an instance), answers attributes from
 * its own __dict__ (__wrapped__, __name__, __qualname__, __module__,
 * __doc__ of orig), then forwards any other one to orig, and its __class__
 * is orig's: inspect.isfunction, getfile, getsourcefile, getsourcelines,
 * signature, getmodule and unwrap answer as for orig. Pickled, it is orig's
 * qualified name (a method found again by name), or what `reduce` says.
 *
 * Must never: link libpython (it is built against the limited API,
 * Py_LIMITED_API 3.8, and resolves Python's symbols in the process that
 * loads it), change what orig returns or raises, or swallow orig's
 * exception (a hook that raises while orig's exception is set aside is
 * reported as unraisable and orig's exception propagates).
 */
#define Py_LIMITED_API 0x03080000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *orig;
    PyObject *before;
    PyObject *after;
    PyObject *on_error;
    PyObject *reduce;
    PyObject *dict;
    PyObject *weaklist;
    int after_star;
} Wrapper;

static PyObject *method_type; /* types.MethodType */

static int wrapper_traverse(PyObject *o, visitproc visit, void *arg)
{
    Wrapper *w = (Wrapper *)o;
    Py_VISIT(w->orig);
    Py_VISIT(w->before);
    Py_VISIT(w->after);
    Py_VISIT(w->on_error);
    Py_VISIT(w->reduce);
    Py_VISIT(w->dict);
    return 0;
}

static int wrapper_clear(PyObject *o)
{
    Wrapper *w = (Wrapper *)o;
    Py_CLEAR(w->orig);
    Py_CLEAR(w->before);
    Py_CLEAR(w->after);
    Py_CLEAR(w->on_error);
    Py_CLEAR(w->reduce);
    Py_CLEAR(w->dict);
    return 0;
}

static void wrapper_dealloc(PyObject *o)
{
    PyTypeObject *tp = Py_TYPE(o);
    PyObject_GC_UnTrack(o);
    if (((Wrapper *)o)->weaklist != NULL)
        PyObject_ClearWeakRefs(o);
    wrapper_clear(o);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(o);
    Py_DECREF(tp);
}

/* None stays NULL: a hook that is not there costs one pointer test. */
static PyObject *hook(PyObject *h)
{
    if (h == NULL || h == Py_None)
        return NULL;
    Py_INCREF(h);
    return h;
}

static PyObject *wrapper_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"orig", "before", "after", "on_error", "reduce", "after_star", NULL};
    PyObject *orig, *before = NULL, *after = NULL, *on_error = NULL, *reduce = NULL;
    int after_star = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOOp:Wrapper", names, &orig, &before,
                                     &after, &on_error, &reduce, &after_star))
        return NULL;
    if (!PyCallable_Check(orig)) {
        PyErr_SetString(PyExc_TypeError, "Wrapper: orig must be callable");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    Wrapper *w = (Wrapper *)alloc(tp, 0);
    if (w == NULL)
        return NULL;
    Py_INCREF(orig);
    w->orig = orig;
    w->before = hook(before);
    w->after = hook(after);
    w->on_error = hook(on_error);
    w->reduce = hook(reduce);
    w->after_star = after_star;
    w->dict = PyDict_New();
    if (w->dict == NULL)
        goto fail;
    static const char *const copied[] = {"__name__", "__qualname__", "__module__", "__doc__"};
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        PyObject *v = PyObject_GetAttrString(orig, copied[i]);
        if (v == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                goto fail;
            PyErr_Clear();
            continue;
        }
        const int rc = PyDict_SetItemString(w->dict, copied[i], v);
        Py_DECREF(v);
        if (rc != 0)
            goto fail;
    }
    if (PyDict_SetItemString(w->dict, "__wrapped__", orig) != 0 ||
        PyDict_SetItemString(w->dict, "_gpustarve_wrapper", Py_True) != 0)
        goto fail;
    return (PyObject *)w;
fail:
    Py_DECREF(w);
    return NULL;
}

/* A hook raised while orig's exception was set aside: say so, keep orig's. */
static void call_aside(PyObject *h, PyObject *ctx, PyObject *args)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyObject *r = PyObject_CallFunctionObjArgs(h, ctx, args, NULL);
    if (r == NULL)
        PyErr_WriteUnraisable(h);
    else
        Py_DECREF(r);
    PyErr_Restore(t, v, tb);
}

static PyObject *wrapper_call(PyObject *o, PyObject *args, PyObject *kwargs)
{
    Wrapper *w = (Wrapper *)o;
    PyObject *ctx = Py_None, *res;
    PyObject *r = NULL; /* before's answer; owns ctx and any new arguments */
    if (w->before != NULL) {
        r = PyObject_CallFunctionObjArgs(w->before, args, kwargs ? kwargs : Py_None, NULL);
        if (r == NULL)
            return NULL;
        if (r != Py_None) {
            if (!PyTuple_Check(r) || PyTuple_Size(r) != 3) {
                PyErr_SetString(PyExc_TypeError,
                                "Wrapper: before must return None or (ctx, args, kwargs)");
                Py_DECREF(r);
                return NULL;
            }
            ctx = PyTuple_GetItem(r, 0);
            PyObject *a = PyTuple_GetItem(r, 1), *k = PyTuple_GetItem(r, 2);
            if (a != Py_None) {
                if (!PyTuple_Check(a) || (k != Py_None && !PyDict_Check(k))) {
                    PyErr_SetString(PyExc_TypeError,
                                    "Wrapper: before's args must be a tuple, kwargs a dict");
                    Py_DECREF(r);
                    return NULL;
                }
                args = a;
                kwargs = k == Py_None ? NULL : k;
            }
        }
    }
    res = PyObject_Call(w->orig, args, kwargs);
    if (res == NULL) {
        if (w->on_error != NULL)
            call_aside(w->on_error, ctx, args);
    } else if (w->after != NULL) {
        PyObject *h;
        if (!w->after_star)
            h = PyObject_CallFunctionObjArgs(w->after, ctx, args, res, NULL);
        else if (PyTuple_Check(ctx))
            h = PyObject_Call(w->after, ctx, NULL);
        else { /* before said nothing to do */
            Py_INCREF(Py_None);
            h = Py_None;
        }
        if (h == NULL)
            Py_CLEAR(res);
        else
            Py_DECREF(h);
    }
    Py_XDECREF(r);
    return res;
}

static PyObject *wrapper_descr_get(PyObject *o, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(o);
        return o;
    }
    return PyObject_CallFunctionObjArgs(method_type, o, obj, NULL);
}

static PyObject *wrapper_getattro(PyObject *o, PyObject *name)
{
    Wrapper *w = (Wrapper *)o;
    PyObject *v = PyDict_GetItemWithError(w->dict, name);
    if (v != NULL) {
        Py_INCREF(v);
        return v;
    }
    if (PyErr_Occurred())
        return NULL;
    v = PyObject_GenericGetAttr(o, name);
    if (v != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return v;
    PyErr_Clear();
    return PyObject_GetAttr(w->orig, name);
}

static int wrapper_setattro(PyObject *o, PyObject *name, PyObject *value)
{
    Wrapper *w = (Wrapper *)o;
    if (value != NULL)
        return PyDict_SetItem(w->dict, name, value);
    if (PyDict_DelItem(w->dict, name) == 0)
        return 0;
    if (PyErr_ExceptionMatches(PyExc_KeyError)) {
        PyErr_Clear();
        PyErr_SetObject(PyExc_AttributeError, name);
    }
    return -1;
}

static PyObject *wrapper_repr(PyObject *o)
{
    return PyObject_Repr(((Wrapper *)o)->orig);
}

static PyObject *get_class(PyObject *o, void *unused)
{
    return PyObject_GetAttrString(((Wrapper *)o)->orig, "__class__");
}

static PyObject *get_dict(PyObject *o, void *unused)
{
    Wrapper *w = (Wrapper *)o;
    Py_INCREF(w->dict);
    return w->dict;
}

static PyObject *wrapper_reduce(PyObject *o, PyObject *unused)
{
    Wrapper *w = (Wrapper *)o;
    if (w->reduce != NULL) {
        Py_INCREF(w->reduce);
        return w->reduce;
    }
    /* like a function: found again by its qualified name in its module */
    return PyObject_GetAttrString(o, "__qualname__");
}

static PyGetSetDef wrapper_getset[] = {
    {"__class__", get_class, NULL, NULL, NULL},
    {"__dict__", get_dict, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* RATIONALE: honoured by PyType_FromSpec from 3.9 on (on 3.8 the wrapper
 * simply takes no weak references); functions take them, and code that
 * caches by function (functools, torch's compilers) may ask. */
static PyMemberDef wrapper_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(Wrapper, weaklist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef wrapper_methods[] = {
    {"__reduce__", wrapper_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot wrapper_slots[] = {
    {Py_tp_new, (void *)wrapper_new},
    {Py_tp_dealloc, (void *)wrapper_dealloc},
    {Py_tp_traverse, (void *)wrapper_traverse},
    {Py_tp_clear, (void *)wrapper_clear},
    {Py_tp_call, (void *)wrapper_call},
    {Py_tp_descr_get, (void *)wrapper_descr_get},
    {Py_tp_getattro, (void *)wrapper_getattro},
    {Py_tp_setattro, (void *)wrapper_setattro},
    {Py_tp_repr, (void *)wrapper_repr},
    {Py_tp_getset, (void *)wrapper_getset},
    {Py_tp_methods, (void *)wrapper_methods},
    {Py_tp_members, (void *)wrapper_members},
    {0, NULL},
};

/* RATIONALE: METHOD_DESCRIPTOR (stable ABI since 3.8, 1 << 17) lets CPython
 * call the wrapper with the instance first instead of binding a method
 * object on every next(); it promises that calling it unbound is the same as
 * calling what __get__ returns, which holds here. */
static PyType_Spec wrapper_spec = {
    "gpustarve._cwrap.Wrapper",
    sizeof(Wrapper),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | (1UL << 17),
    wrapper_slots,
};

static struct PyModuleDef cwrap_module = {
    PyModuleDef_HEAD_INIT,
    "_cwrap",
    "gpustarve's frame-free call wrapper (python/gpustarve/_cwrap.c).",
    -1,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__cwrap(void)
{
    if (method_type == NULL) {
        PyObject *types = PyImport_ImportModule("types");
        if (types == NULL)
            return NULL;
        method_type = PyObject_GetAttrString(types, "MethodType");
        Py_DECREF(types);
        if (method_type == NULL)
            return NULL;
    }
    PyObject *m = PyModule_Create(&cwrap_module);
    if (m == NULL)
        return NULL;
    PyObject *tp = PyType_FromSpec(&wrapper_spec);
    if (tp == NULL || PyModule_AddObject(m, "Wrapper", tp) != 0) {
        Py_XDECREF(tp);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
