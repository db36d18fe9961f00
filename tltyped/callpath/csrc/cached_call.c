/* CachedCall: a jit function's cached call, done in C.
 *
 * CachedCall(launches, fallback, typed, params, names, defaults, alignment[, positional])
 * serves signatures whose only checks are that a dyn dim agrees wherever it
 * appears (callpath/plan.py's `CallPlan.in_c`). It reads the tensors as
 * tensors.h does, builds the same static key as the generated fast path
 * (plan.py states the key; `params` is the plan's `c_table()`), looks it up
 * in `launches` and calls the launch with the same arguments. Anything else
 * (a miss, an unknown keyword, a dyn dim that disagrees, misaligned data, a
 * value the launcher refuses) goes to `fallback`, the generated fast path,
 * which handles it as usual. The last few hits are remembered by what their
 * keys were made of, so a repeated call builds no key and looks nothing up,
 * and a compiled launcher is called through its raw C entry
 * (tltyped/abi.py), so no Python value is made for its pointers, dims,
 * stream or device. `params` holds one item per parameter: a tuple of
 * per-axis codes for a tensor (-1: a static axis, in the key; k >= 0: the
 * k-th dyn dim; (k, s): the k-th dyn dim, s times the stored size, the
 * innermost size of a sub-byte tensor held packed, plan.py), 0, 1 or 2 for a const (its key form: `value`, `type(value),
 * value` or `typed(value)`), None for a dyn scalar; `names` are the
 * parameters' names, `defaults` the values of the last ones, `positional`
 * how many may be given by position (the others are keyword-only; all, if
 * not given): a call with more goes to `fallback`, which raises Python's
 * TypeError. `guard_with(watched)` gives the places the kernels in `launches`
 * read values from (frontend/fingerprint.py's `Watch`: a dict and a name, a
 * closure cell, or a function and its attribute: `__code__`, `__defaults__`,
 * `__kwdefaults__`, `__wrapped__`; with the object it held): a call goes to
 * `fallback` unless each still holds its object.
 */
#include "tensors.h"

#include <structmember.h>

enum { MAX_ARGS = 64, MAX_DIMS = 16, MAX_DYN = 64, MAX_LAUNCH = MAX_ARGS + MAX_DYN, MEMO = 4 };
enum param_kind { TENSOR, CONST_PLAIN, CONST_TYPED, CONST_DEEP, SCALAR };

// A compiled launcher's entry for C callers (its LAUNCH_RAW capsule; tltyped/abi.py).
typedef PyObject* (*launch_raw_fn)(PyObject* const* objects, const uint64_t* words, PyObject* const* tensors,
                                   void* stream, long device);

// A recent hit: what its key was made of, and its launch. A hit on the memo makes no Python object
// until the launcher returns. An entry of `launches` never changes, and `launches` is emptied only
// with a new guard (`guard_with`, which forgets the remembered hits), so a remembered hit stays
// right. The key's words are the tensors' signatures and static dims (contiguous tensors only);
// consts are compared by identity, as a dict compares keys first (the same object gives the same
// key), and held so that no other object can take their address.
typedef struct {
  PyObject* launch;    // NULL: an empty entry
  launch_raw_fn raw;   // the launcher's C entry, or NULL: `launch` is called with Python values
  long long* words;    // key_words of them
  PyObject** consts;   // nconsts of them
} Memo;

typedef struct {
  PyObject_HEAD
  PyObject* launches;  // static key -> launch
  PyObject* fallback;  // the generated fast path
  PyObject* typed;     // a deep const's key (types/values.py's typed_key)
  PyObject* names;     // the parameters' names (a tuple of str)
  PyObject* defaults;  // the values of the last parameters (a tuple)
  PyObject* dict;      // the jit function's attributes (__name__, __wrapped__, ...)
  PyObject* guard;     // a tuple of (namespace, name or None, value): what must hold for `launches` to serve
  PyObject* weakrefs;
  vectorcallfunc vectorcall;
  Py_ssize_t hits;     // calls served here
  Py_ssize_t nparams, npositional, key_size, ndyn, key_words, nconsts;
  unsigned long long alignment_mask;
  int memo_next;       // the entry the next remembered hit replaces
  Memo memo[MEMO];
  unsigned char kind[MAX_ARGS], rank[MAX_ARGS];
  signed char dims[MAX_ARGS][MAX_DIMS];  // -1: static (key), else the dyn dim's index
  unsigned char scale[MAX_ARGS][MAX_DIMS];  // a dyn dim's value is the size times this (2: a packed innermost size)
} CachedCall;

// The launcher's raw entry, if `launch` is a compiled launcher's `launch` (a Python callable otherwise).
static launch_raw_fn raw_entry(PyObject* launch) {
  if (!PyCFunction_Check(launch) || PyCFunction_GET_SELF(launch) == NULL || !PyModule_Check(PyCFunction_GET_SELF(launch)))
    return NULL;
  PyObject* capsule = PyObject_GetAttrString(PyCFunction_GET_SELF(launch), "LAUNCH_RAW");
  launch_raw_fn fn = capsule != NULL ? (launch_raw_fn)PyCapsule_GetPointer(capsule, "tltyped.launch_raw") : NULL;
  Py_XDECREF(capsule);
  PyErr_Clear();
  return fn;
}

static Memo* memo_find(CachedCall* self, const long long* words, PyObject* const* consts) {
  for (int m = 0; m < MEMO; m++) {
    Memo* e = &self->memo[m];
    if (e->launch == NULL || memcmp(e->words, words, (size_t)self->key_words * sizeof(long long)) != 0) continue;
    Py_ssize_t c = 0;
    while (c < self->nconsts && e->consts[c] == consts[c]) c++;
    if (c == self->nconsts) return e;
  }
  return NULL;
}

static Memo* memo_store(CachedCall* self, PyObject* launch, const long long* words, PyObject* const* consts) {
  Memo* e = &self->memo[self->memo_next];
  self->memo_next = (self->memo_next + 1) % MEMO;
  Py_XSETREF(e->launch, Py_NewRef(launch));
  e->raw = raw_entry(launch);
  memcpy(e->words, words, (size_t)self->key_words * sizeof(long long));
  for (Py_ssize_t c = 0; c < self->nconsts; c++) Py_XSETREF(e->consts[c], Py_NewRef(consts[c]));
  return e;
}

static PyObject *code_name, *defaults_name, *kwdefaults_name;  // "__code__", ... (interned, as fingerprint.py's)

// What a function's watched attribute holds now, as Python's getattr reads it (None for no defaults; NULL, maybe
// with an error, where it has none). fingerprint.py's names are interned: its code and defaults are read by a
// pointer compare; another name (`__wrapped__`), or a str of the same text made elsewhere, by a lookup.
static PyObject* function_attribute(PyObject* fn, PyObject* name) {
  PyObject* now;
  if (name == code_name) return PyFunction_GET_CODE(fn);
  if (name == defaults_name) {
    now = PyFunction_GET_DEFAULTS(fn);
  } else if (name == kwdefaults_name) {
    now = PyFunction_GET_KW_DEFAULTS(fn);
  } else {
    now = PyObject_GetAttr(fn, name);
    Py_XDECREF(now);  // compared by its address alone (the watched object is alive: no other can have it)
    return now;
  }
  return now != NULL ? now : Py_None;
}

// Whether each watched place of `guard` (a tuple of 3-tuples) still holds its object (fingerprint.unchanged,
// reading a place as fingerprint._held does).
static int guard_holds(PyObject* guard) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(guard); i++) {
    PyObject* watch = PyTuple_GET_ITEM(guard, i);
    PyObject *space = PyTuple_GET_ITEM(watch, 0), *name = PyTuple_GET_ITEM(watch, 1);
    PyObject* now = name == Py_None      ? (PyCell_Check(space) ? PyCell_GET(space) : NULL)
                    : PyDict_Check(space) ? PyDict_GetItemWithError(space, name)
                    : PyFunction_Check(space) ? function_attribute(space, name)
                                              : NULL;
    if (now != PyTuple_GET_ITEM(watch, 2)) {
      PyErr_Clear();
      return 0;
    }
  }
  return 1;
}

// guard_holds on the call's guard, held meanwhile: a lookup may run Python code (a key's __eq__) that sets another.
static int guard_held(CachedCall* self) {
  PyObject* guard = Py_NewRef(self->guard);
  int holds = guard_holds(guard);
  Py_DECREF(guard);
  return holds;
}

static void memo_forget(CachedCall* self) {
  for (int m = 0; m < MEMO; m++) {
    Py_CLEAR(self->memo[m].launch);
    for (Py_ssize_t c = 0; self->memo[m].consts != NULL && c < self->nconsts; c++) Py_CLEAR(self->memo[m].consts[c]);
  }
  self->memo_next = 0;
}

// The static key, as the generated fast path builds it, of tensors already read into `ts`.
static PyObject* make_key(CachedCall* self, PyObject* const* full, const DLTensor* ts) {
  PyObject* key = PyTuple_New(self->key_size);
  Py_ssize_t k = 0, n = 0;
  if (key == NULL) return NULL;
  for (Py_ssize_t i = 0; i < self->nparams; i++) {
    if (self->kind[i] != TENSOR) continue;
    const DLTensor* t = &ts[n++];
    PyObject* sig = signature(t);
    if (sig == NULL) goto fail;
    PyTuple_SET_ITEM(key, k++, sig);
    for (int d = 0; d < t->ndim; d++) {
      if (self->dims[i][d] >= 0) continue;
      PyObject* size = PyLong_FromLongLong(t->shape[d]);
      if (size == NULL) goto fail;
      PyTuple_SET_ITEM(key, k++, size);
    }
  }
  for (Py_ssize_t i = 0; i < self->nparams; i++) {
    if (self->kind[i] == CONST_TYPED) PyTuple_SET_ITEM(key, k++, Py_NewRef((PyObject*)Py_TYPE(full[i])));
    if (self->kind[i] == CONST_TYPED || self->kind[i] == CONST_PLAIN) PyTuple_SET_ITEM(key, k++, Py_NewRef(full[i]));
    if (self->kind[i] == CONST_DEEP) {
      PyObject* item = PyObject_CallOneArg(self->typed, full[i]);
      if (item == NULL) goto fail;
      PyTuple_SET_ITEM(key, k++, item);
    }
  }
  return key;
fail:
  Py_DECREF(key);
  return NULL;
}

// `launch` called with Python values, as the generated fast path calls it (a word, a data pointer or a
// size, is never negative), the call's `nt` tensors last.
static PyObject* call_with_objects(PyObject* launch, Py_ssize_t n, PyObject* const* objects, const uint64_t* words,
                                   Py_ssize_t nt, PyObject* const* tensors, void* stream, long device) {
  PyObject* largs[MAX_LAUNCH + 2 + MAX_ARGS];
  PyObject* result = NULL;
  Py_ssize_t made = 0;
  for (; made < n; made++) {
    PyObject* value = objects[made] != NULL ? Py_NewRef(objects[made]) : PyLong_FromUnsignedLongLong(words[made]);
    if (value == NULL) goto done;
    largs[made] = value;
  }
  if ((largs[made] = PyLong_FromVoidPtr(stream)) == NULL) goto done;
  made++;
  if ((largs[made] = PyLong_FromLong(device)) == NULL) goto done;
  made++;
  for (Py_ssize_t t = 0; t < nt; t++) largs[made++] = Py_NewRef(tensors[t]);
  result = PyObject_Vectorcall(launch, largs, made, NULL);
done:
  while (made > 0) Py_DECREF(largs[--made]);
  return result;
}

static PyObject* cached_call(PyObject* op, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  CachedCall* self = (CachedCall*)op;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PyObject *launch = NULL, *result;
  launch_raw_fn raw = NULL;
  // the launch's arguments (tltyped/abi.py): a dyn scalar's value in `objects`, a pointer or dim in `words`
  PyObject* objects[MAX_LAUNCH];
  uint64_t words[MAX_LAUNCH];
  Py_ssize_t nl = 0, nt = 0, nk = 0, nc = 0;
  long long dyn[MAX_DYN], key_words[MAX_ARGS * (MAX_DIMS + 1)];
  unsigned char seen[MAX_DYN];
  unsigned long long addresses = 0;
  int device = -1, contiguous = 1;
  void* stream = NULL;
  DLTensor ts[MAX_ARGS];
  PyObject* tensors[MAX_ARGS];  // the tensor arguments (borrowed), for the launch to bump those it writes
  PyObject* full[MAX_ARGS];  // every parameter's value (borrowed): positional, keyword or default
  PyObject* consts[MAX_ARGS];
  Py_ssize_t nparams = self->nparams, nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
  Py_ssize_t first_default = nparams - PyTuple_GET_SIZE(self->defaults);
  if (nargs > self->npositional || api == NULL || forward_ad_open() || !guard_held(self)) goto fallback;
  for (Py_ssize_t i = 0; i < nparams; i++) full[i] = i < nargs ? args[i] : NULL;
  for (Py_ssize_t j = 0; j < nkw; j++) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, j);
    Py_ssize_t i = 0;
    while (i < nparams && PyTuple_GET_ITEM(self->names, i) != name &&
           PyUnicode_Compare(PyTuple_GET_ITEM(self->names, i), name) != 0)
      i++;
    if (i == nparams || full[i] != NULL) goto fallback;  // the fast path raises the TypeError
    full[i] = args[nargs + j];
  }
  for (Py_ssize_t i = 0; i < nparams; i++) {
    if (full[i] == NULL && i < first_default) goto fallback;
    if (full[i] == NULL) full[i] = PyTuple_GET_ITEM(self->defaults, i - first_default);
  }
  memset(seen, 0, (size_t)self->ndyn);
  for (Py_ssize_t i = 0; i < nparams; i++) {
    if (self->kind[i] == SCALAR) objects[nl++] = full[i];
    if (self->kind[i] != TENSOR && self->kind[i] != SCALAR) consts[nc++] = full[i];
    if (self->kind[i] != TENSOR) continue;
    tensors[nt] = full[i];
    DLTensor* t = &ts[nt++];
    if (!PyObject_TypeCheck(full[i], tensor_type) || read_tensor(full[i], t) != 0 ||
        t->ndim != self->rank[i] || !has_memory(t))
      goto fallback;
    if (nt == 1 && t->device.device_type == kDLCUDA) device = t->device.device_id;
    contiguous &= is_contiguous(t);
    key_words[nk++] = signature_code(t);
    char* data = (char*)t->data + t->byte_offset;
    addresses |= (unsigned long long)(uintptr_t)data;
    objects[nl] = NULL, words[nl++] = (uint64_t)(uintptr_t)data;
    for (int d = 0; d < t->ndim; d++) {
      int code = self->dims[i][d];
      if (code < 0) {
        key_words[nk++] = t->shape[d];
      } else if (!seen[code]) {
        seen[code] = 1, dyn[code] = t->shape[d] * self->scale[i][d];
      } else if (dyn[code] != t->shape[d] * self->scale[i][d]) {
        goto fallback;
      }
    }
  }
  if (addresses & self->alignment_mask) goto fallback;
  for (Py_ssize_t j = 0; j < self->ndyn; j++) objects[nl] = NULL, words[nl++] = (uint64_t)dyn[j];
  Memo* hit = contiguous ? memo_find(self, key_words, consts) : NULL;
  if (hit != NULL) {
    launch = Py_NewRef(hit->launch), raw = hit->raw;
  } else {
    PyObject* key = make_key(self, full, ts);
    if (key == NULL) goto fallback;
    launch = Py_XNewRef(PyDict_GetItemWithError(self->launches, key));
    Py_DECREF(key);
    if (launch == NULL) goto fallback;
    if (contiguous) raw = memo_store(self, launch, key_words, consts)->raw;
  }
  if (device >= 0 && api->current_work_stream(kDLCUDA, device, &stream) != 0) goto fallback;
  result = raw != NULL ? raw(objects, words, tensors, stream, device)
                       : call_with_objects(launch, nl, objects, words, nt, tensors, stream, device);
  if (result == NULL && (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_OverflowError)))
    goto fallback;  // a dyn value the launcher refuses to convert: the fast path's slow path says why
  if (result != NULL) self->hits++;
  Py_DECREF(launch);
  return result;
fallback:
  PyErr_Clear();
  Py_XDECREF(launch);
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static int parse_params(CachedCall* self, PyObject* params) {
  if (!PyTuple_Check(params) || PyTuple_GET_SIZE(params) > MAX_ARGS) {
    PyErr_SetString(PyExc_ValueError, "params: a tuple of at most 64 items");
    return -1;
  }
  self->nparams = PyTuple_GET_SIZE(params);
  for (Py_ssize_t i = 0; i < self->nparams; i++) {
    PyObject* item = PyTuple_GET_ITEM(params, i);
    if (item == Py_None) {
      self->kind[i] = SCALAR;
    } else if (PyLong_Check(item)) {
      long form = PyLong_AsLong(item);
      if (form < 0 || form > 2) {
        PyErr_SetString(PyExc_ValueError, "params: a const's key form is 0, 1 or 2");
        return -1;
      }
      self->kind[i] = form == 0 ? CONST_PLAIN : form == 1 ? CONST_TYPED : CONST_DEEP;
      self->key_size += form == 1 ? 2 : 1;
      self->nconsts++;
    } else if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) <= MAX_DIMS) {
      self->kind[i] = TENSOR, self->key_size++, self->key_words++;
      self->rank[i] = (unsigned char)PyTuple_GET_SIZE(item);
      for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(item); d++) {
        PyObject* axis = PyTuple_GET_ITEM(item, d);
        long code, scale = 1;
        if (PyTuple_Check(axis) && PyTuple_GET_SIZE(axis) == 2) {  // (dyn dim's index, scale)
          code = PyLong_AsLong(PyTuple_GET_ITEM(axis, 0));
          scale = PyErr_Occurred() ? 0 : PyLong_AsLong(PyTuple_GET_ITEM(axis, 1));
          if (code < 0 || scale < 1 || scale > 8) code = MAX_DYN;  // refused below
        } else {
          code = PyLong_AsLong(axis);
        }
        if (code < -1 || code >= MAX_DYN || PyErr_Occurred()) {
          PyErr_Clear();
          PyErr_SetString(PyExc_ValueError, "params: a dim code is -1, a dyn dim's index, or (its index, a scale)");
          return -1;
        }
        self->dims[i][d] = (signed char)code;
        self->scale[i][d] = (unsigned char)scale;
        if (code < 0) self->key_size++, self->key_words++;
        if (code + 1 > self->ndyn) self->ndyn = code + 1;
      }
    } else {
      PyErr_SetString(PyExc_ValueError, "params: each item is a tuple of dim codes, 0, 1 or 2, or None");
      return -1;
    }
  }
  return 0;
}

static PyObject* cached_call_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *launches, *fallback, *typed, *params, *names, *defaults;
  unsigned long long alignment;
  Py_ssize_t positional = -1;
  if (!PyArg_ParseTuple(args, "O!OOOO!O!K|n", &PyDict_Type, &launches, &fallback, &typed, &params, &PyTuple_Type, &names,
                        &PyTuple_Type, &defaults, &alignment, &positional))
    return NULL;
  if (PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(params) || PyTuple_GET_SIZE(defaults) > PyTuple_GET_SIZE(params)) {
    PyErr_SetString(PyExc_ValueError, "one name per parameter, and no more defaults than parameters");
    return NULL;
  }
  CachedCall* self = (CachedCall*)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  self->vectorcall = cached_call;
  self->launches = Py_NewRef(launches);
  self->fallback = Py_NewRef(fallback);
  self->typed = Py_NewRef(typed);
  self->names = Py_NewRef(names);
  self->defaults = Py_NewRef(defaults);
  self->alignment_mask = alignment - 1;
  self->guard = PyTuple_New(0);
  if (self->guard == NULL || parse_params(self, params) != 0) {
    Py_DECREF(self);
    return NULL;
  }
  self->npositional = positional < 0 || positional > self->nparams ? self->nparams : positional;
  for (int m = 0; m < MEMO; m++) {
    self->memo[m].words = PyMem_Calloc((size_t)self->key_words + 1, sizeof(long long));
    self->memo[m].consts = PyMem_Calloc((size_t)self->nconsts + 1, sizeof(PyObject*));
    if (self->memo[m].words == NULL || self->memo[m].consts == NULL) {
      Py_DECREF(self);
      return PyErr_NoMemory();
    }
  }
  return (PyObject*)self;
}

static int cached_call_traverse(PyObject* op, visitproc visit, void* arg) {
  CachedCall* self = (CachedCall*)op;
  Py_VISIT(Py_TYPE(op));
  Py_VISIT(self->launches);
  Py_VISIT(self->fallback);
  Py_VISIT(self->typed);
  Py_VISIT(self->names);
  Py_VISIT(self->defaults);
  Py_VISIT(self->dict);
  Py_VISIT(self->guard);
  for (int m = 0; m < MEMO; m++) {
    Py_VISIT(self->memo[m].launch);
    for (Py_ssize_t c = 0; self->memo[m].consts != NULL && c < self->nconsts; c++) Py_VISIT(self->memo[m].consts[c]);
  }
  return 0;
}

static int cached_call_clear(PyObject* op) {
  CachedCall* self = (CachedCall*)op;
  Py_CLEAR(self->launches);
  Py_CLEAR(self->fallback);
  Py_CLEAR(self->typed);
  Py_CLEAR(self->names);
  Py_CLEAR(self->defaults);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->guard);
  memo_forget(self);
  return 0;
}

static void cached_call_dealloc(PyObject* op) {
  PyTypeObject* type = Py_TYPE(op);
  PyObject_GC_UnTrack(op);
  if (((CachedCall*)op)->weakrefs != NULL) PyObject_ClearWeakRefs(op);
  cached_call_clear(op);
  for (int m = 0; m < MEMO; m++) {
    PyMem_Free(((CachedCall*)op)->memo[m].words);
    PyMem_Free(((CachedCall*)op)->memo[m].consts);
  }
  type->tp_free(op);
  Py_DECREF(type);  // an instance of a heap type holds a reference to it
}

static PyObject* cached_call_repr(PyObject* op) {
  PyObject* name = ((CachedCall*)op)->dict ? PyDict_GetItemString(((CachedCall*)op)->dict, "__qualname__") : NULL;
  return name ? PyUnicode_FromFormat("<tltyped jit function %U>", name) : PyUnicode_FromString("<tltyped jit function>");
}

static PyObject* cached_call_reduce(PyObject* op, PyObject* unused) {  // pickled by name, as functions are
  PyObject* name = ((CachedCall*)op)->dict ? PyDict_GetItemString(((CachedCall*)op)->dict, "__qualname__") : NULL;
  if (name == NULL) {
    PyErr_SetString(PyExc_TypeError, "a jit function without a __qualname__ cannot be pickled");
    return NULL;
  }
  return Py_NewRef(name);
}

static PyMemberDef cached_call_members[] = {
  {"hits", T_PYSSIZET, offsetof(CachedCall, hits), READONLY, "Calls served by the C path."},
  {"__vectorcalloffset__", T_PYSSIZET, offsetof(CachedCall, vectorcall), READONLY, NULL},
  {"__dictoffset__", T_PYSSIZET, offsetof(CachedCall, dict), READONLY, NULL},
  {"__weaklistoffset__", T_PYSSIZET, offsetof(CachedCall, weakrefs), READONLY, NULL},
  {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef cached_call_getset[] = {
  {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

// 0 where `guard` is a tuple of 3-tuples, as guard_holds reads it; else -1 with a TypeError.
static int check_guard(PyObject* guard) {
  int ok = PyTuple_Check(guard);
  for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(guard); i++)
    ok = PyTuple_Check(PyTuple_GET_ITEM(guard, i)) && PyTuple_GET_SIZE(PyTuple_GET_ITEM(guard, i)) == 3;
  if (!ok) PyErr_SetString(PyExc_TypeError, "guard: a tuple of (namespace, name or None, value)");
  return ok ? 0 : -1;
}

static PyObject* unchanged(PyObject* module, PyObject* guard) {
  if (check_guard(guard) != 0) return NULL;
  return PyBool_FromLong(guard_holds(guard));
}

static PyObject* cached_call_guard_with(PyObject* op, PyObject* guard) {
  CachedCall* self = (CachedCall*)op;
  if (check_guard(guard) != 0) return NULL;
  Py_XSETREF(self->guard, Py_NewRef(guard));
  memo_forget(self);  // a remembered hit is a launch of `launches`, which the caller may have emptied
  Py_RETURN_NONE;
}

static PyMethodDef cached_call_methods[] = {
  {"__reduce__", cached_call_reduce, METH_NOARGS, NULL},
  {"guard_with", cached_call_guard_with, METH_O, "Serve calls only while each watched place holds its object."},
  {NULL, NULL, 0, NULL},
};

static PyType_Slot cached_call_slots[] = {
  {Py_tp_new, cached_call_new},
  {Py_tp_call, PyVectorcall_Call},
  {Py_tp_traverse, cached_call_traverse},
  {Py_tp_clear, cached_call_clear},
  {Py_tp_dealloc, cached_call_dealloc},
  {Py_tp_repr, cached_call_repr},
  {Py_tp_members, cached_call_members},
  {Py_tp_methods, cached_call_methods},
  {Py_tp_getset, cached_call_getset},
  {Py_tp_doc, "CachedCall(launches, fallback, typed, params, names, defaults, alignment): a jit function's cached call, in C."},
  {0, NULL},
};

static PyType_Spec cached_call_spec = {
  "tltyped_cached_call.CachedCall", sizeof(CachedCall), 0,
  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, cached_call_slots,
};

static PyMethodDef methods[] = {
  {"facts", (PyCFunction)(void (*)(void))facts, METH_FASTCALL, "Per-call facts of the tensors."},
  {"set_fallback", set_fallback, METH_O, "The Python function computing the same facts."},
  {"set_reader", set_reader, METH_O, "How plain CUDA tensors are read: torch_direct's READ capsule, or None."},
  {"unchanged", unchanged, METH_O, "Whether each watched place still holds its object (fingerprint.unchanged)."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tltyped_cached_call", NULL, -1, methods};

PyMODINIT_FUNC PyInit_tltyped_cached_call(void) {
  if (tensors_init() != 0) return NULL;
  if (code_name == NULL && ((code_name = PyUnicode_InternFromString("__code__")) == NULL
                            || (defaults_name = PyUnicode_InternFromString("__defaults__")) == NULL
                            || (kwdefaults_name = PyUnicode_InternFromString("__kwdefaults__")) == NULL))
    return NULL;
  PyObject* m = PyModule_Create(&module);
  PyObject* cached = m != NULL ? PyType_FromSpec(&cached_call_spec) : NULL;
  if (cached == NULL || PyModule_AddObjectRef(m, "CachedCall", cached) != 0) Py_CLEAR(m);
  Py_XDECREF(cached);
  return m;
}
