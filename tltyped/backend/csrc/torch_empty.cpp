/* torch_empty: how launchers allocate the outputs they return, straight from torch's C++ allocators.
 *
 * The module's EMPTY capsule ("tltyped.empty") holds one C function:
 *
 *     PyObject* empty(const int64_t* shape, int ndim, DLDataType dtype, int device, void** data)
 *
 * a new, uninitialised, contiguous torch.Tensor on the CPU (device -1) or on
 * CUDA device `device`, from the allocator torch itself uses there (on CUDA
 * the caching allocator, for that device's current stream), as `torch.empty`
 * would; its data pointer goes to `*data`. Errors come back as torch's own: `torch.OutOfMemoryError` when
 * the device is full, RuntimeError otherwise.
 *
 * It skips torch's dispatcher and the DLPack exchange API's allocate-then-wrap
 * round trip, which is about half the cost of an allocating call. It is built
 * once per torch installation against torch's headers and libraries; where
 * that fails, launchers allocate through the DLPack exchange API instead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/dlpack.h>
#include <c10/core/Allocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
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
    // torch's CUDA allocator allocates on its current device: make it `device` where it is not. Asked
    // first, as torch knows it: a guard made anyway costs a driver query as it restores the device.
    const c10::Device target(type, (c10::DeviceIndex)(cuda ? device : -1));
    const bool switch_device = cuda && c10::impl::getDeviceGuardImpl(type)->getDevice() != target;
    c10::OptionalDeviceGuard guard(switch_device ? std::optional<c10::Device>(target) : std::nullopt);
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

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tltyped_torch_empty", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_tltyped_torch_empty(void) {
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == NULL) return NULL;
  out_of_memory = PyObject_GetAttrString(torch, "OutOfMemoryError");
  Py_DECREF(torch);
  if (out_of_memory == NULL) return NULL;
  PyObject* m = PyModule_Create(&module);
  PyObject* capsule = m != NULL ? PyCapsule_New((void*)&empty, "tltyped.empty", NULL) : NULL;
  if (capsule == NULL || PyModule_AddObjectRef(m, "EMPTY", capsule) != 0) Py_CLEAR(m);
  Py_XDECREF(capsule);
  return m;
}
