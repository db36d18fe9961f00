/* torch_direct: torch's C++ API where the call path would otherwise go through a slower layer of torch.
 *
 * The module holds three capsules, each with one C function:
 *
 *     EMPTY ("tltyped.empty"): PyObject* empty(const int64_t* shape, int ndim, DLDataType dtype, int device, void** data)
 *
 * a new, uninitialised, contiguous torch.Tensor on the CPU (device -1) or on
 * CUDA device `device`, which the caller has made the current device (a
 * launcher does so for its launch anyway; asking again costs a runtime call),
 * from the allocator torch itself uses there (on CUDA the caching allocator,
 * for that device's current stream), as `torch.empty` would; its data pointer
 * goes to `*data`. Errors come back as torch's own: `torch.OutOfMemoryError` when
 * the device is full, RuntimeError otherwise. It skips torch's dispatcher and
 * the DLPack exchange API's allocate-then-wrap round trip, about half the cost
 * of an allocating call. Launchers allocate their outputs with it.
 *
 *     READ ("tltyped.read"): int read_tensor(PyObject* tensor, DLTensor* out)
 *
 * the DLTensor torch's DLPack exchange API (`dltensor_from_py_object_no_sync`)
 * gives for a plain CUDA tensor (dense, no conjugate or negative bit, no
 * subclass dispatch, made outside inference mode), read from its TensorImpl in
 * a tenth of the time; -1, with no Python error set, for any other tensor,
 * which the caller then reads through the API; and first, for any tensor, 1
 * where no launch may take it: it requires grad while grad mode is on (the
 * slow path raises tltyped's AutogradError, or runs the op of the kernel's
 * registered backward), torch's Python dispatch handles it (a tracer's
 * FakeTensor or FunctionalTensor, which the slow path hands to the kernel's
 * torch op), or torch.jit.trace records the ops called now (a launch would be
 * missing from its graph, and its outputs baked into the graph as constants;
 * the slow path calls the kernel's torch op, which the trace records). The cached call (csrc/cached_call.c) reads its tensors with it. It relies on where a torch.Tensor object keeps
 * its TensorImpl, and takes dtypes from the exchange API itself: both are
 * established when the module is imported, and where either is not as
 * expected, READ is None.
 *
 *     BUMP ("tltyped.bump"): void bump(PyObject* tensor)
 *
 * what a torch in-place op does to the tensor it writes: the next version in its
 * version counter, so autograd, which saved the tensor at an earlier version,
 * refuses to use the written values ("modified by an inplace operation"), where it
 * would compute a silently wrong gradient. An inference tensor has no counter,
 * and nothing autograd saved can hold it: it is left as it is. A launcher calls it
 * for each tensor its kernel writes (backend/csrc/launcher.h). It reads the
 * TensorImpl where READ does, and is None where READ is.
 *
 * All three are built once per torch installation against torch's headers and
 * libraries; where that fails, the call path uses the DLPack exchange API, and
 * launchers torch's `torch.autograd.graph.increment_version`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/dlpack.h>
#include <c10/core/Allocator.h>
#include <c10/core/GradMode.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

// Declared here rather than included: their headers pull in all of ATen and torch's Python bindings.
namespace at {
TORCH_API ScalarType toScalarType(const DLDataType& dtype);  // ATen/DLConvertor.h
}
PyObject* THPVariable_Wrap(at::TensorBase&& var);  // torch/csrc/autograd/python_variable.h

static PyObject* out_of_memory = nullptr;  // torch.OutOfMemoryError

static PyObject* empty(const int64_t* shape, int ndim, DLDataType dtype, int device, void** data) {
  try {
    const bool cuda = device >= 0;
    const c10::DeviceType type = cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
    if (cuda) at::globalContext().lazyInitDevice(type);  // once per process; what torch.empty does too
    at::TensorBase tensor = at::detail::empty_generic(
        c10::IntArrayRef(shape, ndim), c10::GetAllocator(type),
        c10::DispatchKeySet(cuda ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU), at::toScalarType(dtype), std::nullopt);
    *data = tensor.data_ptr();
    return THPVariable_Wrap(std::move(tensor));
  } catch (const c10::OutOfMemoryError& e) {
    PyErr_SetString(out_of_memory, e.what_without_backtrace());
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// What READ relies on, established at import.
static const size_t impl_offset = sizeof(PyObject);  // a torch.Tensor's TensorImpl pointer: right after the object header
static c10::DispatchKeySet plain_cuda;                // the dispatch keys of a plain CUDA tensor, as torch gives them
static const c10::DispatchKeySet never_read(
    {c10::DispatchKey::Python, c10::DispatchKey::Negative, c10::DispatchKey::Conjugate});
static const int dtype_count = static_cast<int>(c10::ScalarType::NumOptions);
static DLDataType dtypes[dtype_count];                // each dtype as the exchange API gives it
static bool known[dtype_count];                       // ... where it gives one

// Whether torch.jit.trace records the ops called now: tracing, and not inside an op it records (whose own
// calls it does not record), as torch's tracer decides (callpath/tensors.py's `jit_tracing`).
static bool jit_tracing() {
  const c10::impl::LocalDispatchKeySet local = c10::impl::tls_local_dispatch_key_set();  // one thread-local read
  return local.included_.has(c10::DispatchKey::Tracer) && !local.excluded_.has(c10::DispatchKey::Tracer);
}

static int read_tensor(PyObject* tensor, DLTensor* out) {
  const c10::TensorImpl* impl = *reinterpret_cast<c10::TensorImpl* const*>(reinterpret_cast<const char*>(tensor) + impl_offset);
  const int dtype = static_cast<int>(impl->dtype().toScalarType());
  // a tracer's tensor (fake, functional), a negated or conjugated view (its memory holds other values than its
  // elements: `.conj().imag`), one autograd would record, or any under torch.jit.trace: never read
  if (impl->key_set().has_any(never_read) || (impl->requires_grad() && c10::GradMode::is_enabled()) || jit_tracing())
    return 1;
  if (impl->key_set() != plain_cuda || dtype < 0 || dtype >= dtype_count || !known[dtype]) return -1;
  try {
    out->data = const_cast<c10::TensorImpl*>(impl)->mutable_data();
  } catch (...) {
    return -1;
  }
  out->byte_offset = 0;
  out->device = DLDevice{kDLCUDA, impl->device().index()};
  out->ndim = static_cast<int32_t>(impl->dim());
  out->dtype = dtypes[dtype];
  out->shape = const_cast<int64_t*>(impl->sizes().data());
  out->strides = const_cast<int64_t*>(impl->strides().data());
  return 0;
}

static void bump(PyObject* tensor) {
  c10::TensorImpl* impl = *reinterpret_cast<c10::TensorImpl* const*>(reinterpret_cast<const char*>(tensor) + impl_offset);
  if (!impl->is_inference()) impl->bump_version();
}

// A probe tensor of an experimental dtype makes torch warn; no one asked for it.
struct Silent : c10::WarningHandler {
  void process(const c10::Warning&) override {}
};

// Establish what READ relies on, on CPU tensors made here; false where something is not as expected.
static bool calibrate(const DLPackExchangeAPI* api) {
  Silent silent;
  c10::WarningUtils::WarningHandlerGuard quiet(&silent);
  try {
    plain_cuda = c10::make_intrusive<c10::TensorImpl>(c10::DispatchKeySet(c10::DispatchKey::CUDA), caffe2::TypeMeta::Make<float>(),
                                                      c10::Device(c10::DeviceType::CUDA, 0))->key_set();
    for (int s = 0; s < dtype_count; s++) {
      at::TensorBase probe;
      try {
        probe = at::detail::empty_generic({0}, c10::GetAllocator(c10::DeviceType::CPU), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                          static_cast<c10::ScalarType>(s), std::nullopt);
      } catch (const c10::Error&) {
        continue;  // a dtype torch makes no tensors of
      }
      const c10::TensorImpl* impl = probe.unsafeGetTensorImpl();
      PyObject* object = THPVariable_Wrap(std::move(probe));
      if (object == nullptr) return false;
      const bool in_place = *reinterpret_cast<c10::TensorImpl* const*>(reinterpret_cast<const char*>(object) + impl_offset) == impl;
      DLTensor t;
      known[s] = in_place && api->dltensor_from_py_object_no_sync(object, &t) == 0;
      if (known[s]) dtypes[s] = t.dtype;
      PyErr_Clear();
      Py_DECREF(object);
      if (!in_place) return false;
    }
    return true;
  } catch (const std::exception&) {
    PyErr_Clear();
    return false;
  }
}

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tltyped_torch_direct", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_tltyped_torch_direct(void) {
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == NULL) return NULL;
  out_of_memory = PyObject_GetAttrString(torch, "OutOfMemoryError");
  PyObject* tensor_type = out_of_memory != NULL ? PyObject_GetAttrString(torch, "Tensor") : NULL;
  Py_DECREF(torch);
  PyObject* api_capsule = tensor_type != NULL ? PyObject_GetAttrString(tensor_type, "__dlpack_c_exchange_api__") : NULL;
  Py_XDECREF(tensor_type);
  PyErr_Clear();  // no exchange API: READ is None
  const DLPackExchangeAPI* api =
      api_capsule != NULL ? static_cast<const DLPackExchangeAPI*>(PyCapsule_GetPointer(api_capsule, "dlpack_exchange_api")) : nullptr;
  Py_XDECREF(api_capsule);
  PyErr_Clear();
  if (out_of_memory == NULL) return NULL;
  PyObject* m = PyModule_Create(&module);
  PyObject* empty_capsule = m != NULL ? PyCapsule_New((void*)&empty, "tltyped.empty", NULL) : NULL;
  const bool calibrated = api != nullptr && calibrate(api);
  PyObject* read_capsule = calibrated ? PyCapsule_New((void*)&read_tensor, "tltyped.read", NULL) : Py_NewRef(Py_None);
  PyObject* bump_capsule = calibrated ? PyCapsule_New((void*)&bump, "tltyped.bump", NULL) : Py_NewRef(Py_None);
  if (empty_capsule == NULL || read_capsule == NULL || bump_capsule == NULL || PyModule_AddObjectRef(m, "EMPTY", empty_capsule) != 0 ||
      PyModule_AddObjectRef(m, "READ", read_capsule) != 0 || PyModule_AddObjectRef(m, "BUMP", bump_capsule) != 0)
    Py_CLEAR(m);
  Py_XDECREF(empty_capsule);
  Py_XDECREF(read_capsule);
  Py_XDECREF(bump_capsule);
  return m;
}
