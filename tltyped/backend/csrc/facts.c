/* tensor_facts: what the fast path needs from each tensor, in one C call.
 *
 * facts(ranks, *tensors) -> (device, stream, then per tensor: data pointer,
 * signature, size of each dim). The signature is one int encoding device,
 * dtype and "contiguous"; a non-contiguous tensor's signature is a tuple
 * (int, *strides) so that every layout gets its own cache key. `ranks` (bytes)
 * holds each tensor's expected rank.
 *
 * Tensors are read through torch's DLPack exchange API
 * (`torch.Tensor.__dlpack_c_exchange_api__`): no Python-level attribute calls.
 * Anything this cannot handle (a non-tensor, a meta tensor, a rank mismatch)
 * is handed to the Python fallback registered with set_fallback(), which
 * computes the same tuple (or fails, sending the call to the slow path).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ATen/dlpack.h"

static const DLPackExchangeAPI* api = NULL;
static PyTypeObject* tensor_type = NULL;
static PyObject* fallback = NULL;

static PyObject* signature(const DLTensor* t) {
  long long sig = (((long long)t->device.device_type * 65536 + t->device.device_id) * 256 + t->dtype.code) * 256 + t->dtype.bits;
  int contiguous = 1;
  long long expected = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] == 0) { contiguous = 1; break; }
    if (t->shape[d] != 1) {
      if (t->strides != NULL && t->strides[d] != expected) contiguous = 0;
      expected *= t->shape[d];
    }
  }
  if (contiguous) return PyLong_FromLongLong(sig);
  PyObject* out = PyTuple_New(t->ndim + 1);
  if (out == NULL) return NULL;
  PyTuple_SET_ITEM(out, 0, PyLong_FromLongLong(sig));
  for (int d = 0; d < t->ndim; d++) PyTuple_SET_ITEM(out, d + 1, PyLong_FromLongLong(t->strides[d]));
  return out;
}

static PyObject* use_fallback(PyObject* const* args, Py_ssize_t nargs) {
  PyErr_Clear();
  return PyObject_Vectorcall(fallback, args, nargs, NULL);
}

static PyObject* facts(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 2 || !PyBytes_Check(args[0]) || PyBytes_GET_SIZE(args[0]) != nargs - 1 || api == NULL)
    return use_fallback(args, nargs);
  const unsigned char* ranks = (const unsigned char*)PyBytes_AS_STRING(args[0]);
  Py_ssize_t size = 2;
  for (Py_ssize_t i = 0; i < nargs - 1; i++) size += 2 + ranks[i];
  PyObject* out = PyTuple_New(size);
  if (out == NULL) return NULL;
  Py_ssize_t at = 2;
  int device = -1;
  DLTensor t;
  for (Py_ssize_t i = 1; i < nargs; i++) {
    if (!PyObject_TypeCheck(args[i], tensor_type) || api->dltensor_from_py_object_no_sync(args[i], &t) != 0 ||
        t.ndim != ranks[i - 1]) {
      Py_DECREF(out);
      return use_fallback(args, nargs);
    }
    if (i == 1 && t.device.device_type == kDLCUDA) device = t.device.device_id;
    PyObject* sig = signature(&t);
    if (sig == NULL) { Py_DECREF(out); return NULL; }
    PyTuple_SET_ITEM(out, at++, PyLong_FromVoidPtr((char*)t.data + t.byte_offset));
    PyTuple_SET_ITEM(out, at++, sig);
    for (int d = 0; d < t.ndim; d++) PyTuple_SET_ITEM(out, at++, PyLong_FromLongLong(t.shape[d]));
  }
  void* stream = NULL;
  if (device >= 0 && api->current_work_stream(kDLCUDA, device, &stream) != 0) { Py_DECREF(out); return NULL; }
  PyTuple_SET_ITEM(out, 0, PyLong_FromLong(device));
  PyTuple_SET_ITEM(out, 1, PyLong_FromVoidPtr(stream));
  return out;
}

static PyObject* set_fallback(PyObject* self, PyObject* fn) {
  Py_XSETREF(fallback, Py_NewRef(fn));
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
  {"facts", (PyCFunction)(void (*)(void))facts, METH_FASTCALL, "Per-call facts of the tensors."},
  {"set_fallback", set_fallback, METH_O, "The Python function computing the same facts."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tltyped_facts", NULL, -1, methods};

PyMODINIT_FUNC PyInit_tltyped_facts(void) {
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == NULL) return NULL;
  PyObject* type = PyObject_GetAttrString(torch, "Tensor");
  Py_DECREF(torch);
  if (type == NULL) return NULL;
  tensor_type = (PyTypeObject*)type;
  PyObject* capsule = PyObject_GetAttrString(type, "__dlpack_c_exchange_api__");
  if (capsule == NULL) return NULL;
  api = (const DLPackExchangeAPI*)PyCapsule_GetPointer(capsule, "dlpack_exchange_api");
  Py_DECREF(capsule);
  if (api == NULL) return NULL;
  if (api->header.version.major != DLPACK_MAJOR_VERSION) {
    PyErr_SetString(PyExc_ImportError, "torch's DLPack exchange API has another major version");
    return NULL;
  }
  return PyModule_Create(&module);
}
