/* Reading tensors: what a call needs from each tensor argument, in one C call.
 *
 * A tensor is read into a DLTensor through torch's DLPack exchange API
 * (`torch.Tensor.__dlpack_c_exchange_api__`), with no Python-level attribute
 * calls; a plain CUDA tensor, where set_reader() has handed over
 * torch_direct.cpp's READ, straight from its TensorImpl, which gives the same
 * for less. From a DLTensor come the call's facts:
 *
 *     facts(ranks, *tensors) -> (device, stream, then per tensor: data pointer, signature, size of each dim)
 *
 * The signature is one int encoding device, dtype and "contiguous"; a
 * non-contiguous tensor's signature is a tuple (int, *strides) so that every
 * layout gets its own cache key. `ranks` (bytes) holds each tensor's expected
 * rank. Anything this cannot handle (a non-tensor, a meta tensor, a rank
 * mismatch, a tensor without memory, one that requires grad, any tensor while
 * a forward-mode AD level is open) is handed to the Python fallback
 * registered with set_fallback() (callpath/tensors.py's `python_facts`),
 * which computes the same tuple (or fails, sending the call to the slow path).
 *
 * Included once, by cached_call.c: the functions are static.
 */
#ifndef TLTYPED_TENSORS_H
#define TLTYPED_TENSORS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "ATen/dlpack.h"

static const DLPackExchangeAPI* api = NULL;
static PyTypeObject* tensor_type = NULL;
static PyObject* fallback = NULL;
typedef int (*read_fn)(PyObject* tensor, DLTensor* out);
static read_fn reader = NULL;  // torch_direct.cpp's READ, or NULL

// A tensor's DLTensor, 0; or -1 (a Python error may be set) where the exchange API fails, or where no
// launch may take the tensor: one that requires grad with grad mode on (autograd is the slow path's), a
// tracer's, or any while torch.jit.trace records, READ tells (for any tensor); without READ, any tensor
// that requires grad, and any while torch.jit.trace is on (`torch._C._is_tracing`: the slow path tells
// whether it records the call).
static PyObject* requires_grad_name = NULL;
static PyObject* is_tracing = NULL;  // torch._C._is_tracing
static PyObject* is_neg_name = NULL;
static PyObject* is_conj_name = NULL;

// Whether a tensor is a negated or conjugated view (`.conj().imag`): the exchange API gives its memory, which
// holds other values than its elements. 1 also where torch cannot say.
static int holds_other_values(PyObject* tensor) {
  PyObject* names[] = {is_neg_name, is_conj_name};
  for (int i = 0; i < 2; i++) {
    PyObject* bit = PyObject_CallMethodNoArgs(tensor, names[i]);
    const int set = bit == NULL || PyObject_IsTrue(bit);
    Py_XDECREF(bit);
    if (set) {
      PyErr_Clear();
      return 1;
    }
  }
  return 0;
}

static int read_tensor(PyObject* tensor, DLTensor* out) {
  if (reader != NULL) {
    const int read = reader(tensor, out);
    if (read >= 0) return read == 0 ? 0 : -1;
    return api->dltensor_from_py_object_no_sync(tensor, out);
  }
  if (api->dltensor_from_py_object_no_sync(tensor, out) != 0) return -1;
  PyObject* grad = PyObject_GetAttr(tensor, requires_grad_name);
  const int requires_grad = grad == NULL || PyObject_IsTrue(grad);
  Py_XDECREF(grad);
  PyObject* tracing = PyObject_CallNoArgs(is_tracing);
  const int traced = tracing == NULL || PyObject_IsTrue(tracing);
  Py_XDECREF(tracing);
  return requires_grad || traced || holds_other_values(tensor) ? -1 : 0;
}

// Whether a tensor read into `t` has memory behind its elements: a tensor subclass without storage of its
// own (torch's wrapper subclasses) has a null data pointer, which no launch may be given.
static int has_memory(const DLTensor* t) {
  if (t->data != NULL) return 1;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] == 0) return 1;
  return 0;
}

// A tensor's device and dtype as one int.
static long long signature_code(const DLTensor* t) {
  return (((long long)t->device.device_type * 65536 + t->device.device_id) * 256 + t->dtype.code) * 256 + t->dtype.bits;
}

// As torch has it: strides as the sizes give them, except at dims of size 1; an empty tensor always is.
static int is_contiguous(const DLTensor* t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] == 0) return 1;
  long long expected = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] != 1) {
      if (t->strides != NULL && t->strides[d] != expected) return 0;
      expected *= t->shape[d];
    }
  }
  return 1;
}

// A tensor's part of the key: its code, with its strides where it is not contiguous.
static PyObject* signature(const DLTensor* t) {
  if (is_contiguous(t)) return PyLong_FromLongLong(signature_code(t));
  PyObject* out = PyTuple_New(t->ndim + 1);
  if (out == NULL) return NULL;
  PyTuple_SET_ITEM(out, 0, PyLong_FromLongLong(signature_code(t)));
  for (int d = 0; d < t->ndim; d++) PyTuple_SET_ITEM(out, d + 1, PyLong_FromLongLong(t->strides[d]));
  return out;
}

// torch.autograd.forward_ad's globals, whose `_current_level` is -1 unless a dual level is open (`dual_level()`,
// which torch.func.jvp opens too); NULL where torch keeps no such global (then no check).
static PyObject* forward_ad_globals = NULL;
static PyObject* current_level_name = NULL;

// Whether a forward-mode AD level is open: a tensor may then carry a tangent, which a launch would drop (the
// outputs would get none), so no call is launched here; the slow path looks at the tangents. Never an error.
static int forward_ad_open(void) {
  if (forward_ad_globals == NULL) return 0;
  PyObject* level = PyDict_GetItemWithError(forward_ad_globals, current_level_name);  // borrowed
  if (level == NULL || !PyLong_CheckExact(level)) {
    PyErr_Clear();
    return 1;
  }
  return PyLong_AsLong(level) >= 0;
}

static PyObject* use_fallback(PyObject* const* args, Py_ssize_t nargs) {
  PyErr_Clear();
  return PyObject_Vectorcall(fallback, args, nargs, NULL);
}

static PyObject* facts(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 2 || !PyBytes_Check(args[0]) || PyBytes_GET_SIZE(args[0]) != nargs - 1 || api == NULL ||
      forward_ad_open())
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
    if (!PyObject_TypeCheck(args[i], tensor_type) || read_tensor(args[i], &t) != 0 ||
        t.ndim != ranks[i - 1] || !has_memory(&t)) {
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

// set_reader(capsule or None): torch_direct.cpp's READ, or None to read every tensor through the exchange API.
static PyObject* set_reader(PyObject* self, PyObject* capsule) {
  read_fn fn = NULL;
  if (capsule != Py_None && (fn = (read_fn)PyCapsule_GetPointer(capsule, "tltyped.read")) == NULL) return NULL;
  reader = fn;
  Py_RETURN_NONE;
}

// torch's DLPack exchange API and tensor type, found once when the module is imported; -1 with an error set.
static int tensors_init(void) {
  if ((requires_grad_name = PyUnicode_InternFromString("requires_grad")) == NULL) return -1;
  if ((is_neg_name = PyUnicode_InternFromString("is_neg")) == NULL) return -1;
  if ((is_conj_name = PyUnicode_InternFromString("is_conj")) == NULL) return -1;
  if ((current_level_name = PyUnicode_InternFromString("_current_level")) == NULL) return -1;
  PyObject* forward_ad = PyImport_ImportModule("torch.autograd.forward_ad");
  if (forward_ad == NULL) return -1;
  PyObject* globals = PyModule_GetDict(forward_ad);  // borrowed
  if (PyDict_GetItemWithError(globals, current_level_name) != NULL) forward_ad_globals = Py_NewRef(globals);
  Py_DECREF(forward_ad);
  if (PyErr_Occurred()) return -1;
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == NULL) return -1;
  PyObject* torch_c = PyObject_GetAttrString(torch, "_C");
  is_tracing = torch_c != NULL ? PyObject_GetAttrString(torch_c, "_is_tracing") : NULL;
  Py_XDECREF(torch_c);
  PyObject* type = is_tracing != NULL ? PyObject_GetAttrString(torch, "Tensor") : NULL;
  Py_DECREF(torch);
  if (type == NULL) return -1;
  tensor_type = (PyTypeObject*)type;
  PyObject* capsule = PyObject_GetAttrString(type, "__dlpack_c_exchange_api__");
  if (capsule == NULL) return -1;
  api = (const DLPackExchangeAPI*)PyCapsule_GetPointer(capsule, "dlpack_exchange_api");
  Py_DECREF(capsule);
  if (api == NULL) return -1;
  if (api->header.version.major != DLPACK_MAJOR_VERSION) {
    PyErr_SetString(PyExc_ImportError, "torch's DLPack exchange API has another major version");
    return -1;
  }
  return 0;
}

#endif  // TLTYPED_TENSORS_H
