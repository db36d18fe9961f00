// The launcher of a compiled kernel, less what varies per kernel: each kernel's launcher source
// (templates/launcher.cpp.j2) includes this header, defines the names TileLang's pasted host code uses
// (the cubin's kernels), pastes that code (`init`, `call`, `get_last_error`, its `error_buf`), describes
// the kernel in one `tltyped_launcher::Kernel` and creates its module with `create_module`.
//
// A launch, as Python calls it (`launch(*arguments, stream, device)`) or as the C cached call does (the
// LAUNCH_RAW capsule, tltyped/abi.py): convert each argument as the binder admits it; refuse tensors the
// kernel writes that share memory with another argument or with themselves; allocate the outputs on
// torch's allocator; load the cubin and run TileLang's `init` on first use; call TileLang's `call`; bump
// the version of each tensor the kernel writes, as torch's in-place ops do (where the caller hands the
// launch its tensors, as the call path does).
// Sizes computed on the host are 64-bit and never wrap (`Size`).
//
// Host-only: no device headers are parsed here. Its names are in `tltyped_launcher`, but for what
// TileLang's host code calls by its own names (the macros below, the runtime calls it makes);
// templates/names.py keeps users' names off `tltyped_`.
#ifndef TLTYPED_LAUNCHER_H
#define TLTYPED_LAUNCHER_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <tuple>
#include <utility>

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ATen/dlpack.h"

// -- what TileLang's host code expects of its surroundings ------------------------------------------------
//
// Its `error_buf` and `ERROR_BUF_SIZE` are its own; these macros expand inside it.

#define TILELANG_CHECK(stmt)                                                                                  \
  do {                                                                                                        \
    cudaError_t tltyped_error_ = (stmt);                                                                      \
    if (tltyped_error_ != cudaSuccess) {                                                                      \
      snprintf(error_buf, ERROR_BUF_SIZE, "%s - %s", cudaGetErrorName(tltyped_error_),                        \
               cudaGetErrorString(tltyped_error_));                                                           \
      return -1;                                                                                              \
    }                                                                                                         \
  } while (0)

// A failed driver launch (see launch_with_driver). It is the only failure a launch can leave unreported:
// every runtime call in TileLang's host code has its result checked where it is made
// (tests/unit/test_tilelang_contract.py holds TileLang to that), so a launch does not pay a runtime call
// to ask for the last error.
#define TILELANG_CHECK_LAST_ERROR(kernel_name)                                                                \
  do {                                                                                                        \
    if (tltyped_launcher::launch_error != CUDA_SUCCESS) {                                                     \
      snprintf(error_buf, ERROR_BUF_SIZE, kernel_name ": %s",                                                 \
               tltyped_launcher::driver_error(tltyped_launcher::launch_error));                               \
      tltyped_launcher::launch_error = CUDA_SUCCESS;                                                          \
      return -1;                                                                                              \
    }                                                                                                         \
  } while (0)

// Driver entry points, looked up through the runtime: nothing links libcuda.
#define CUTLASS_CUDA_DRIVER_WRAPPER_CALL(func) tltyped_launcher::driver_##func

namespace tltyped_launcher {

// `value` rounded to the nearest float16 (ties to even), as its bits; past the largest finite float16 (65504), the
// infinity of its sign, as IEEE rounding has it (a launch refuses those values first: `as_float`).
static inline uint16_t float16_bits(double value) {
  constexpr int kMantissa = 10, kMinExponent = -14;  // 10 stored mantissa bits; normal numbers from 2^-14
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7e00;
  if (magnitude >= 65520.0) return sign | 0x7c00;  // 65504 + half its last place: rounds to infinity
  if (magnitude == 0.0) return sign;
  int exponent;
  std::frexp(magnitude, &exponent);                                 // magnitude in [2^(exponent - 1), 2^exponent)
  const int scale = exponent - 1 > kMinExponent ? exponent - 1 : kMinExponent;  // subnormals: the least exponent
  const double places = std::ldexp(magnitude, kMantissa - scale);  // in last places of `scale`: exact, < 2^11
  double units = std::floor(places);
  const double rest = places - units;
  if (rest > 0.5 || (rest == 0.5 && std::fmod(units, 2.0) != 0.0)) units += 1.0;  // to nearest, ties to even
  // a carry out of the mantissa (units = 2^11) moves to the next exponent, as the bits add up
  return sign | static_cast<uint16_t>(((scale - kMinExponent) << kMantissa) + static_cast<int>(units));
}

}  // namespace tltyped_launcher

// float16, as a kernel takes it by value (cutlass's half_t: its bits): made from a launch's double. TileLang's host
// code names it; element types the launcher does not pass by value are only declared (templates/launcher.cpp.j2).
struct half_t {
  uint16_t bits;
  explicit half_t(double value) : bits(tltyped_launcher::float16_bits(value)) {}
};
static_assert(sizeof(half_t) == 2 && alignof(half_t) == 2, "half_t as the device code has it");

namespace tltyped_launcher {

// The classes of the errors a launch raises to its caller (tltyped/errors.py's ArgumentValueError and
// LaunchError, so users catch one `tl.Error`), found when the module is created; until then, or where
// tltyped.errors cannot be imported, the builtins they derive from.
static struct {
  PyObject* argument_value;
  PyObject* launch;
} errors = {PyExc_ValueError, PyExc_RuntimeError};

static inline void find_errors() {
  PyObject* module = PyImport_ImportModule("tltyped.errors");
  PyObject* argument_value = module != NULL ? PyObject_GetAttrString(module, "ArgumentValueError") : NULL;
  PyObject* launch = module != NULL ? PyObject_GetAttrString(module, "LaunchError") : NULL;
  if (argument_value != NULL && launch != NULL) {
    errors = {argument_value, launch};  // held for the life of the process, as the module is
  } else {
    Py_XDECREF(argument_value);
    Py_XDECREF(launch);
  }
  Py_XDECREF(module);
  PyErr_Clear();
}

template <typename Fn>
static Fn driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found;
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess) return nullptr;
  return found == cudaDriverEntryPointSuccess ? reinterpret_cast<Fn>(fn) : nullptr;
}

static inline const char* driver_error(CUresult result) {
  static auto fn = driver_entry<PFN_cuGetErrorString_v6000>("cuGetErrorString");
  const char* text = nullptr;
  return fn && fn(result, &text) == CUDA_SUCCESS && text ? text : "CUDA driver error";
}

static CUresult launch_error = CUDA_SUCCESS;  // the last failed launch's, for TILELANG_CHECK_LAST_ERROR

// The last TMA descriptor the driver refused to make, for an error naming the tensor it describes
// (TileLang's own names only the descriptor); sizes and strides innermost first, as TMA takes them.
static struct {
  CUresult result;
  cuuint32_t rank;
  cuuint64_t sizes[5], strides[4];  // strides[i]: dim i + 1's, in bytes
  const void* address;
} tma_refused = {};

// A TMA descriptor made by the driver's `encode` (nullptr: the driver has none); a refusal is kept.
template <typename Encode, typename... Rest>
static CUresult encode_tma(Encode encode, CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                           const cuuint64_t* sizes, const cuuint64_t* strides, Rest... rest) {
  CUresult result = encode ? encode(map, type, rank, address, sizes, strides, rest...) : CUDA_ERROR_NOT_FOUND;
  if (result == CUDA_SUCCESS || rank < 1 || rank > 5) return result;
  tma_refused.result = result;
  tma_refused.rank = rank;
  tma_refused.address = address;
  for (cuuint32_t i = 0; i < rank; i++) tma_refused.sizes[i] = sizes[i];
  for (cuuint32_t i = 0; i + 1 < rank; i++) tma_refused.strides[i] = strides[i];
  return result;
}
template <typename... Args>
static CUresult driver_cuTensorMapEncodeTiled(Args... args) {
  static auto fn = driver_entry<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  return encode_tma(fn, args...);
}
template <typename... Args>
static CUresult driver_cuTensorMapEncodeIm2col(Args... args) {
  static auto fn = driver_entry<PFN_cuTensorMapEncodeIm2col_v12000>("cuTensorMapEncodeIm2col");
  return encode_tma(fn, args...);
}

constexpr int kMaxDevices = 64;
static int launch_device = 0;  // the device of the launch under way: the current one, set by `run`

// A kernel of the cubin: its library handle, and its function in each device's context, so a launch goes
// straight to cuLaunchKernelEx (resolving the handle per launch costs microseconds).
struct CubinFunction {
  const char* name;
  CUkernel handle = nullptr;
  CUfunction functions[kMaxDevices] = {};

  explicit CubinFunction(const char* name_) : name(name_) {}
  explicit operator void*() const { return reinterpret_cast<void*>(handle); }  // for the runtime's rarer paths

  CUfunction function() {
    static auto get = driver_entry<PFN_cuKernelGetFunction_v12000>("cuKernelGetFunction");
    CUfunction& function = functions[launch_device];
    if (function == nullptr && get != nullptr && get(&function, handle) != CUDA_SUCCESS) function = nullptr;
    return function;
  }
};
template <typename... Params>
struct TypedCubinFunction : CubinFunction {  // carries the parameter types, as a __global__ function would
  using CubinFunction::CubinFunction;
};

static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "launch attributes differ in layout");
static_assert((int)cudaLaunchAttributeClusterDimension == (int)CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, "attribute ids");
static_assert((int)cudaLaunchAttributeProgrammaticStreamSerialization ==
                  (int)CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
              "attribute ids");
static_assert((int)cudaFuncAttributeMaxDynamicSharedMemorySize == (int)CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              "function attribute ids");
static_assert((int)cudaFuncAttributeNonPortableClusterSizeAllowed ==
                  (int)CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
              "function attribute ids");

// A runtime launch configuration, launched through the driver with the parameters in `values`.
template <typename Values, size_t... I>
static cudaError_t launch_with_driver(const cudaLaunchConfig_t* config, CubinFunction& kernel, Values& values,
                                      std::index_sequence<I...>) {
  static auto launch = driver_entry<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx");
  void* params[] = {static_cast<void*>(&std::get<I>(values))..., nullptr};
  CUlaunchConfig driver_config = {};
  driver_config.gridDimX = config->gridDim.x;
  driver_config.gridDimY = config->gridDim.y;
  driver_config.gridDimZ = config->gridDim.z;
  driver_config.blockDimX = config->blockDim.x;
  driver_config.blockDimY = config->blockDim.y;
  driver_config.blockDimZ = config->blockDim.z;
  driver_config.sharedMemBytes = static_cast<unsigned int>(config->dynamicSmemBytes);
  driver_config.hStream = reinterpret_cast<CUstream>(config->stream);
  driver_config.attrs = reinterpret_cast<CUlaunchAttribute*>(config->attrs);
  driver_config.numAttrs = config->numAttrs;
  CUfunction function = kernel.function();
  CUresult result = function == nullptr || launch == nullptr ? CUDA_ERROR_NOT_FOUND
                                                             : launch(&driver_config, function, params, nullptr);
  if (result != CUDA_SUCCESS) launch_error = result;
  return result == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}

}  // namespace tltyped_launcher

// The runtime calls TileLang's host code makes, for kernels of the cubin.
template <typename... Params, typename... Args>
static cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, tltyped_launcher::TypedCubinFunction<Params...>& kernel,
                                      Args&&... args) {
  std::tuple<Params...> values{static_cast<Params>(args)...};
  return tltyped_launcher::launch_with_driver(config, kernel, values, std::index_sequence_for<Params...>{});
}

static inline cudaError_t cudaFuncSetAttribute(tltyped_launcher::CubinFunction& kernel, cudaFuncAttribute attr, int value) {
  static auto set = tltyped_launcher::driver_entry<PFN_cuFuncSetAttribute_v9000>("cuFuncSetAttribute");
  CUfunction function = kernel.function();
  if (function == nullptr || set == nullptr) return cudaErrorInvalidDeviceFunction;
  return set(function, static_cast<CUfunction_attribute>(attr), value) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

namespace tltyped_launcher {

// -- sizes ------------------------------------------------------------------------------------------------

// A size computed on the host from the launch's arguments (an output's dim, a tensor's extent): 64-bit,
// never wrapped. An overflow or a division by zero is kept as the problem it is, for the error naming it.
// `/` and `%` are floor division and modulo, as in the kernel's TIR.
struct Size {
  int64_t value = 0;
  const char* problem = nullptr;  // why `value` means nothing, or nullptr

  constexpr Size(int64_t v = 0) : value(v) {}  // implicit: literals and arguments are sizes

  static constexpr const char* kOverflow = "a size past the 64-bit range";
  static constexpr const char* kDivisionByZero = "an undefined size (a division by zero)";

  static Size failed(const Size& a, const Size& b, const char* problem) {
    Size r;
    r.problem = a.problem ? a.problem : b.problem ? b.problem : problem;
    return r;
  }
  friend Size operator+(Size a, Size b) {
    Size r;
    return a.problem || b.problem || __builtin_add_overflow(a.value, b.value, &r.value) ? failed(a, b, kOverflow) : r;
  }
  friend Size operator-(Size a, Size b) {
    Size r;
    return a.problem || b.problem || __builtin_sub_overflow(a.value, b.value, &r.value) ? failed(a, b, kOverflow) : r;
  }
  friend Size operator*(Size a, Size b) {
    Size r;
    return a.problem || b.problem || __builtin_mul_overflow(a.value, b.value, &r.value) ? failed(a, b, kOverflow) : r;
  }
  friend Size operator/(Size a, Size b) {
    if (a.problem || b.problem || b.value == 0) return failed(a, b, kDivisionByZero);
    if (a.value == INT64_MIN && b.value == -1) return failed(a, b, kOverflow);
    int64_t q = a.value / b.value;
    return q - (a.value % b.value != 0 && (a.value < 0) != (b.value < 0));
  }
  friend Size operator%(Size a, Size b) {
    if (a.problem || b.problem || b.value == 0) return failed(a, b, kDivisionByZero);
    if (b.value == -1) return 0;
    int64_t r = a.value % b.value;
    return r != 0 && (r < 0) != (b.value < 0) ? r + b.value : r;
  }
  friend Size min(Size a, Size b) { return a.problem || b.problem ? failed(a, b, nullptr) : a.value <= b.value ? a : b; }
  friend Size max(Size a, Size b) { return a.problem || b.problem ? failed(a, b, nullptr) : a.value >= b.value ? a : b; }
};

// An argument a size names, with its value, for messages: `n = 1073741825`.
struct Named {
  const char* name;
  Size value;
};

// -- the launch's arguments -------------------------------------------------------------------------------

// How `launch` converts an argument: exactly what the binder admits (an int is never a bool here, a pointer
// never negative, an integer within its type's range, a float within its type's finite range or not finite);
// a refusal is a TypeError or OverflowError naming it, which sends a cached call to the slow path, whose
// binder says why.
enum class Convert { pointer, dim, integer, boolean, real };

struct Arg {
  const char* label;  // what errors call it: the parameter, or `dim N`
  Convert convert;
  long long lo;           // an integer's or a dim's range, [lo, hi]: lo <= 0, and hi past the signed range for
  unsigned long long hi;  // uint64 (whose values past it a Value holds as their bits)
  double max;             // a real's: the largest finite value of its type (torch.finfo's max)
};

// An argument, converted: its C type is applied where TileLang's `call` takes it.
union Value {
  void* pointer;
  long long integer;
  bool boolean;
  double real;
};

// An output the launcher allocates.
struct Output {
  const char* label;  // `output 'C'`
  const char* shape;  // its shape as C expressions, for messages
  DLDataType dtype;
};

// An output dim the kernel computes its indices of in int32 (a TIR expression of dtype int32): past
// INT32_MAX, its index arithmetic overflows.
struct Int32Dim {
  int dim;
  const char* expression;  // over the user's names: `n * 4`
  std::initializer_list<Named> names;
};

// A tensor by its name in TileLang's host code (a TMA descriptor is named after its tensor: `A_desc`,
// `A_desc_1`), and what errors call it.
struct TensorName {
  const char* host_name;
  const char* label;
};

class Outputs;

// What the launcher needs of one compiled kernel: the generated part of its launcher.
struct Kernel {
  const char* name;  // the jit function's name, for messages
  const Arg* args;   // what `launch` takes before the stream and the device (tltyped/abi.py)
  int nargs;
  const Output* outputs;  // what it allocates, in parameter order
  int noutputs;
  const int* returns;  // indices into `outputs`, in the order the kernel returns them
  int nreturns;
  CubinFunction* const* functions;  // the cubin's kernels TileLang's host code launches
  int nfunctions;
  const TensorName* tensors;  // for errors naming a tensor TileLang's host code names
  int ntensors;
  int ntensor_args;    // the call's tensor parameters, which the call path passes `launch` last
  const int* written;  // those the kernel writes, as indices among them
  int nwritten;
  int (*allocate)(const Value* values, Outputs& outputs);  // allocates every output, through `outputs.add`
  int (*check_written)(const Value* values);  // refuses tensors the kernel writes sharing memory; or nullptr
  int (*init)();                              // TileLang's
  int (*call)(const Value* values, void* const* outputs, cudaStream_t stream);  // TileLang's `call`
  const char* (*last_error)();                                                  // TileLang's
};

static inline int bad_arg(const Kernel& k, const char* param, const char* expected, PyObject* got) {
  PyErr_Format(PyExc_TypeError, "%s: argument '%s' expects %s, got %.200s", k.name, param, expected, Py_TYPE(got)->tp_name);
  return -1;
}

static inline int out_of_range(const Kernel& k, const char* param, const char* what) {
  PyErr_Clear();
  PyErr_Format(PyExc_OverflowError, "%s: argument '%s' %s", k.name, param, what);
  return -1;
}

static inline int in_range(const Kernel& k, long long v, const Arg& arg) {
  if (v >= arg.lo && (v < 0 || static_cast<unsigned long long>(v) <= arg.hi)) return 0;
  PyErr_Format(PyExc_OverflowError, "%s: argument '%s' = %lld is out of range [%lld, %llu]", k.name, arg.label, v,
               arg.lo, arg.hi);
  return -1;
}

// A dim's value: an int of 64 bits (its range is checked with the other arguments').
static inline int as_int(const Kernel& k, PyObject* obj, const char* param, long long* out) {
  if (!PyLong_CheckExact(obj)) return bad_arg(k, param, "an int", obj);
  int overflow = 0;
  *out = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (*out == -1 && PyErr_Occurred()) return -1;
  return overflow ? out_of_range(k, param, "does not fit in 64 bits") : 0;
}

// An integer parameter's value, in its type's range. Past the signed range is uint64's upper half (the one type
// whose range reaches there, to 2^64 - 1): held as its bits, which the parameter's C cast reads back.
static inline int as_integer(const Kernel& k, PyObject* obj, const Arg& arg, long long* out) {
  if (!PyLong_CheckExact(obj)) return bad_arg(k, arg.label, "an int", obj);
  int overflow = 0;
  *out = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (*out == -1 && PyErr_Occurred()) return -1;
  if (overflow > 0 && arg.hi == ULLONG_MAX) {
    unsigned long long value = PyLong_AsUnsignedLongLong(obj);
    if (value == ULLONG_MAX && PyErr_Occurred()) return out_of_range(k, arg.label, "does not fit in 64 bits");
    *out = static_cast<long long>(value);
    return 0;
  }
  if (overflow) return out_of_range(k, arg.label, "does not fit in 64 bits");
  return in_range(k, *out, arg);
}

static inline int as_bool(const Kernel& k, PyObject* obj, const char* param, bool* out) {
  if (!PyBool_Check(obj)) return bad_arg(k, param, "a bool", obj);
  *out = obj == Py_True;
  return 0;
}

// A float parameter's value: a float (or a subclass's: numpy's float64) or an int, whose magnitude is at most its
// type's largest finite value, as the binder has it (`abs(value) <= max`, exactly for an int), or a float infinity
// or NaN.
static inline int as_float(const Kernel& k, PyObject* obj, const Arg& arg, double* out) {
  if (!PyFloat_Check(obj) && !PyLong_CheckExact(obj)) return bad_arg(k, arg.label, "a float", obj);
  *out = PyFloat_AsDouble(obj);
  if (*out == -1.0 && PyErr_Occurred()) return out_of_range(k, arg.label, "does not fit in a double");
  const double magnitude = std::fabs(*out);
  const bool exact = PyFloat_Check(obj);  // an int's double may be rounded (an int never converts to inf)
  if (magnitude < arg.max || std::isnan(*out) || (exact && (magnitude == arg.max || std::isinf(*out)))) return 0;
  if (magnitude == arg.max) {  // an int that rounds to the largest value: compared exactly, as Python compares
    PyObject* largest = PyLong_FromDouble(arg.max);  // (an integer: every float type's largest value is one)
    PyObject* absolute = largest != NULL ? PyNumber_Absolute(obj) : NULL;
    int past = absolute != NULL ? PyObject_RichCompareBool(absolute, largest, Py_GT) : -1;
    Py_XDECREF(absolute);
    Py_XDECREF(largest);
    if (past <= 0) return past;
  }
  char range[96];
  snprintf(range, sizeof(range), "[%.17g, %.17g]", -arg.max, arg.max);
  PyErr_Format(PyExc_OverflowError, "%s: argument '%s' = %R is out of range %s", k.name, arg.label, obj, range);
  return -1;
}

static inline int as_ptr(const Kernel& k, PyObject* obj, const char* param, uint64_t* out) {
  if (!PyLong_CheckExact(obj)) return bad_arg(k, param, "a device address (an int >= 0)", obj);
  *out = PyLong_AsUnsignedLongLong(obj);
  if (*out == (unsigned long long)-1 && PyErr_Occurred())
    return out_of_range(k, param, "is not a device address (an int >= 0)");
  return 0;
}

// The launch's arguments in their raw form (tltyped/abi.py): a data pointer or a dyn dim in `words`, a dyn
// scalar as its Python value in `objects`; converted into `values` with every check. (A template, so that
// the compiler sees each kernel's constant table of arguments.)
template <const Kernel& K>
static int convert_raw(PyObject* const* objects, const uint64_t* words, Value* values) {
  for (int i = 0; i < K.nargs; i++) {
    const Arg& arg = K.args[i];
    Value& value = values[i];
    switch (arg.convert) {
      case Convert::pointer:
        value.pointer = reinterpret_cast<void*>(static_cast<uintptr_t>(words[i]));
        break;
      case Convert::dim:
        value.integer = static_cast<long long>(words[i]);
        if (in_range(K, value.integer, arg)) return -1;
        break;
      case Convert::integer:
        if (as_integer(K, objects[i], arg, &value.integer)) return -1;
        break;
      case Convert::boolean:
        if (as_bool(K, objects[i], arg.label, &value.boolean)) return -1;
        break;
      case Convert::real:
        if (as_float(K, objects[i], arg, &value.real)) return -1;
        break;
    }
  }
  return 0;
}

// The launch's arguments as Python values, `(*arguments, stream, device)`: pointers and dyn dims read into
// words, then converted as raw arguments are.
template <const Kernel& K>
static int convert(PyObject* const* args, Py_ssize_t nargs, Value* values, cudaStream_t* stream, long* device) {
  if (nargs != K.nargs + 2) {
    PyErr_Format(PyExc_TypeError, "%s: launch takes %d arguments (%d with the call's tensors), got %zd", K.name,
                 K.nargs + 2, K.nargs + 2 + K.ntensor_args, nargs);
    return -1;
  }
  PyObject* objects[K.nargs + 1];
  uint64_t words[K.nargs + 1];
  for (int i = 0; i < K.nargs; i++) {
    const Arg& arg = K.args[i];
    long long value;
    objects[i] = args[i];
    if (arg.convert == Convert::pointer && as_ptr(K, args[i], arg.label, &words[i])) return -1;
    if (arg.convert == Convert::dim) {
      if (as_int(K, args[i], arg.label, &value)) return -1;
      words[i] = static_cast<uint64_t>(value);
    }
  }
  if (convert_raw<K>(objects, words, values)) return -1;
  *stream = static_cast<cudaStream_t>(PyLong_AsVoidPtr(args[K.nargs]));
  *device = PyLong_AsLong(args[K.nargs + 1]);
  return PyErr_Occurred() ? -1 : 0;
}

// -- tensors the kernel writes ----------------------------------------------------------------------------

// The bytes a tensor argument spans, [begin, end), by its data pointer and the shape and strides (in
// elements) the kernel is built for; an empty tensor spans none. Strides are never negative (torch has
// none). A span whose size cannot be computed is taken to reach the end of memory.
struct Span {
  const char* label;  // `argument 'C'`
  bool written;       // by the kernel
  uintptr_t begin, end;
  int shared_dim;  // a dim of size > 1 and stride 0 (an expanded tensor: its elements share memory), or -1
  int64_t shared_size;
};

static inline Span span(const char* label, bool written, const void* data, int bits, std::initializer_list<Size> shape,
                        std::initializer_list<Size> strides) {
  Span s = {label, written, reinterpret_cast<uintptr_t>(data), reinterpret_cast<uintptr_t>(data), -1, 0};
  Size last = 0;  // the offset of the last element, in elements
  const Size* stride = strides.begin();
  int dim = 0;
  for (const Size& size : shape) {
    if (size.problem == nullptr && size.value == 0) return s;
    if (size.problem == nullptr && size.value > 1 && stride->problem == nullptr && stride->value == 0 && s.shared_dim < 0) {
      s.shared_dim = dim;
      s.shared_size = size.value;
    }
    last = last + (size - 1) * *stride;
    stride++, dim++;
  }
  Size bytes = ((last + 1) * bits + 7) / 8;
  bool reaches_the_end = bytes.problem != nullptr || static_cast<uint64_t>(bytes.value) > UINTPTR_MAX - s.begin;
  s.end = reaches_the_end ? UINTPTR_MAX : s.begin + static_cast<uintptr_t>(bytes.value);
  return s;
}

// Refuses a launch in which a tensor the kernel writes shares memory: with itself (a stride of 0 on a dim of
// size > 1), or with another tensor argument, read or written (the same tensor passed twice included: a
// kernel that updates a tensor in place takes it as one parameter that it reads and writes).
template <size_t N>
static int check_written(const char* kernel, const Span (&spans)[N]) {
  for (size_t i = 0; i < N; i++) {
    const Span& w = spans[i];
    if (!w.written) continue;
    if (w.shared_dim >= 0) {
      PyErr_Format(errors.argument_value,
                   "%s: %s is written by the kernel, but its dim %d (size %lld) has stride 0: its elements share memory "
                   "and the kernel's writes to them would race; pass a tensor whose elements are distinct (not an "
                   "expanded one)",
                   kernel, w.label, w.shared_dim, (long long)w.shared_size);
      return -1;
    }
    for (size_t j = 0; j < N; j++) {
      const Span& o = spans[j];
      if (j == i || (o.written && j > i) || w.begin == w.end || o.begin == o.end) continue;  // each pair once
      if (w.begin == o.begin && w.end == o.end) {
        PyErr_Format(errors.argument_value,
                     "%s: %s, which the kernel writes, is the same memory as %s; pass distinct tensors (a kernel that "
                     "updates a tensor in place takes it as one parameter that it reads and writes)",
                     kernel, w.label, o.label);
        return -1;
      }
      if (w.begin < o.end && o.begin < w.end) {
        PyErr_Format(errors.argument_value,
                     "%s: %s, which the kernel writes, overlaps %s in memory; pass tensors that do not share memory",
                     kernel, w.label, o.label);
        return -1;
      }
    }
  }
  return 0;
}

// -- versions of the tensors the kernel writes ----------------------------------------------------------
//
// Autograd keeps a tensor it saved for the backward together with the tensor's version, and refuses a
// backward that would read it at a later one ("modified by an inplace operation"). A kernel that writes a
// tensor is an in-place op on it, so each launch given the tensors bumps the version of those it writes:
// through tltyped's torch_direct helper (its BUMP), handed over by set_version_bump(); without it, through
// a Python callable (torch.autograd.graph.increment_version).

typedef void (*BumpFn)(PyObject* tensor);
static BumpFn torch_bump = nullptr;
static PyObject* python_bump = nullptr;
static PyTypeObject* tensor_type = nullptr;  // torch.Tensor, found at import: what `launch` takes as tensors

template <const Kernel& K>
static int bump_written(PyObject* const* tensors) {
  for (int w = 0; w < K.nwritten; w++) {
    PyObject* tensor = tensors[K.written[w]];
    if (torch_bump != nullptr) {
      torch_bump(tensor);
    } else if (python_bump != nullptr) {
      PyObject* done = PyObject_CallOneArg(python_bump, tensor);
      if (done == NULL) return -1;
      Py_DECREF(done);
    }
  }
  return 0;
}

// -- outputs ----------------------------------------------------------------------------------------------

// How outputs are made: torch's C++ allocator through tltyped's torch_direct helper, handed over by
// set_allocator(); without it, torch's DLPack exchange API (allocate, then wrap).
typedef PyObject* (*EmptyFn)(const int64_t* shape, int ndim, DLDataType dtype, int device, void** data);
static EmptyFn torch_empty = nullptr;
static const DLPackExchangeAPI* dlpack = nullptr;  // torch's, found at import

static inline void allocation_error(void*, const char* kind, const char* message) {
  PyErr_Format(errors.launch, "%s: %s", kind, message);
}

// A new tensor on `device` (the CPU where device is -1), or NULL with the error set; its data into `data`.
static inline PyObject* new_tensor(const int64_t* shape, int ndim, DLDataType dtype, long device, void** data) {
  if (torch_empty != nullptr) return torch_empty(shape, ndim, dtype, (int)device, data);
  if (dlpack == nullptr) {
    PyErr_SetString(errors.launch, "torch has no DLPack exchange API (torch >= 2.10 has one) to allocate with");
    return NULL;
  }
  DLTensor prototype = {};
  prototype.device = device < 0 ? DLDevice{kDLCPU, 0} : DLDevice{kDLCUDA, (int32_t)device};
  prototype.ndim = ndim;
  prototype.dtype = dtype;
  prototype.shape = const_cast<int64_t*>(shape);
  DLManagedTensorVersioned* tensor = nullptr;
  if (dlpack->managed_tensor_allocator(&prototype, &tensor, nullptr, allocation_error) != 0) return NULL;
  *data = (char*)tensor->dl_tensor.data + tensor->dl_tensor.byte_offset;
  void* object = nullptr;
  if (dlpack->managed_tensor_to_py_object_no_sync(tensor, &object) != 0) return NULL;
  return (PyObject*)object;
}

// The outputs of one launch, allocated in parameter order by the kernel's `allocate`: their tensors in
// `objects`, their data pointers in `data`. Those made are released unless `keep` is called.
class Outputs {
 public:
  Outputs(const Kernel& kernel, long device, PyObject** objects, void** data)
      : kernel_(kernel), device_(device), objects_(objects), data_(data) {}
  Outputs(const Outputs&) = delete;
  Outputs& operator=(const Outputs&) = delete;
  ~Outputs() {
    while (made_ > 0) Py_DECREF(objects_[--made_]);
  }

  void keep() { made_ = 0; }

  // The next output, of this shape; -1 with the error set where a dim is negative, past the 64-bit range,
  // or, for a dim the kernel computes in int32, past the int32 range, or where torch cannot allocate it.
  template <size_t Rank>
  int add(const std::array<Size, Rank>& shape, std::initializer_list<Int32Dim> int32_dims) {
    const Output& output = kernel_.outputs[made_];
    int64_t sizes[Rank + 1];
    int dim = 0;
    for (const Size& size : shape) {
      if (size.problem != nullptr || size.value < 0) {
        if (size.problem != nullptr)
          PyErr_Format(errors.argument_value, "%s: %s would have %s in dim %d (its shape is %s)", kernel_.name,
                       output.label, size.problem, dim, output.shape);
        else
          PyErr_Format(errors.argument_value, "%s: %s would have size %lld in dim %d (its shape is %s)", kernel_.name,
                       output.label, (long long)size.value, dim, output.shape);
        return -1;
      }
      sizes[dim++] = size.value;
    }
    for (const Int32Dim& d : int32_dims) {
      if (sizes[d.dim] > INT32_MAX) return past_int32(output, d, sizes[d.dim]);
    }
    PyObject* object = new_tensor(sizes, dim, output.dtype, device_, &data_[made_]);
    if (object == NULL) return failed(output);
    objects_[made_++] = object;
    return 0;
  }

 private:
  int past_int32(const Output& output, const Int32Dim& d, int64_t size) {
    char names[256] = "";
    int at = 0;
    for (const Named& n : d.names) {
      if (at < 0 || at >= (int)sizeof(names)) break;
      at += snprintf(names + at, sizeof(names) - at, "%s%s = %lld", at ? ", " : ", with ", n.name, (long long)n.value.value);
    }
    PyErr_Format(errors.argument_value,
                 "%s: %s would have %lld elements in dim %d (%s%s), past the int32 range the kernel computes its "
                 "indices in",
                 kernel_.name, output.label, (long long)size, d.dim, d.expression, names);
    return -1;
  }

  // The error of a failed allocation, restated with the kernel and the output; its type is kept
  // (torch.OutOfMemoryError stays one).
  int failed(const Output& output) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyErr_Format(type != NULL ? type : errors.launch, "%s: allocating %s (shape %s) failed: %S", kernel_.name,
                 output.label, output.shape, value != NULL ? value : Py_None);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    return -1;
  }

  const Kernel& kernel_;
  long device_;
  PyObject** objects_;
  void** data_;
  int made_ = 0;
};

// -- the launch -------------------------------------------------------------------------------------------

static PyObject* cubin = nullptr;  // set by set_cubin(), loaded at the first launch
static cudaLibrary_t library = nullptr;
static unsigned long long ready_devices = 0;  // bit d: TileLang's init() has run on device d

// Loads the cubin and finds its kernels, once; an error into `message` (and the next launch tries again).
static inline int load_functions(const Kernel& k, char* message, size_t size) {
  if (library != nullptr) return 0;
  if (cubin == nullptr) {
    snprintf(message, size, "the kernel's cubin was not set");
    return -1;
  }
  cudaLibrary_t loaded = nullptr;
  cudaError_t error = cudaLibraryLoadData(&loaded, PyBytes_AS_STRING(cubin), nullptr, nullptr, 0, nullptr, nullptr, 0);
  for (int i = 0; error == cudaSuccess && i < k.nfunctions; i++) {
    cudaKernel_t kernel;
    error = cudaLibraryGetKernel(&kernel, loaded, k.functions[i]->name);
    k.functions[i]->handle = reinterpret_cast<CUkernel>(kernel);
  }
  if (error == cudaSuccess) {
    library = loaded;
    return 0;
  }
  if (loaded != nullptr) cudaLibraryUnload(loaded);
  snprintf(message, size, "%s - %s", cudaGetErrorName(error), cudaGetErrorString(error));
  return -1;
}

// The error of a launch whose TMA descriptor the driver refused: the tensor, its sizes as the descriptor has
// them, and the rule they break where it is one of TMA's. TileLang's message ends with the descriptor's name,
// which is its tensor's (`A_desc`, `A_desc_1`).
static inline void tma_failed(const Kernel& k) {
  const auto& r = tma_refused;
  const char* descriptor = strrchr(k.last_error(), ' ');
  const char* tensor = "a tensor";
  for (int t = 0; descriptor != nullptr && t < k.ntensors; t++) {
    size_t n = strlen(k.tensors[t].host_name);
    const char* rest = descriptor + 1 + n;
    if (strncmp(descriptor + 1, k.tensors[t].host_name, n) == 0 && strncmp(rest, "_desc", 5) == 0 &&
        (rest[5] == '\0' || rest[5] == '_'))
      tensor = k.tensors[t].label;
  }
  char sizes[128] = "", rule[128] = "";
  for (int i = (int)r.rank - 1, at = 0; i >= 0; i--)
    at += snprintf(sizes + at, sizeof(sizes) - at, i > 0 ? "%llu, " : "%llu", (unsigned long long)r.sizes[i]);
  for (int i = (int)r.rank - 1; i >= 0 && !rule[0]; i--)
    if (r.sizes[i] == 0)
      snprintf(rule, sizeof(rule), "; TMA needs every size to be at least 1, and dim %d is 0", (int)r.rank - 1 - i);
  for (int i = (int)r.rank - 2; i >= 0 && !rule[0]; i--)
    if (r.strides[i] % 16 != 0)
      snprintf(rule, sizeof(rule), "; TMA needs strides in multiples of 16 bytes, and dim %d's is %llu bytes",
               (int)r.rank - 2 - i, (unsigned long long)r.strides[i]);
  if (!rule[0] && reinterpret_cast<uintptr_t>(r.address) % 16 != 0)
    snprintf(rule, sizeof(rule), "; TMA needs a 16-byte aligned address");
  PyErr_Format(errors.launch, "%s: kernel launch failed: the driver refused the TMA descriptor of %s (sizes (%s)): %s%s",
               k.name, tensor, sizes, driver_error(r.result), rule);
  tma_refused.result = CUDA_SUCCESS;
}

// Makes CUDA device `device` current while it lives: TileLang's host code works on the current device.
// The device already current is recognised by its context, a thread-local read in the driver; the runtime's
// cudaGetDevice, four times the cost, runs only for a context not yet seen current on it.
static CUcontext contexts[kMaxDevices] = {};  // the context seen current on each device
struct OnDevice {
  int previous = -1;
  cudaError_t error = cudaSuccess;
  explicit OnDevice(long device) {
    if (device < 0) return;  // the CPU
    if (device >= kMaxDevices) {
      error = cudaErrorInvalidDevice;
      return;
    }
    static auto get_context = driver_entry<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent");
    CUcontext context = nullptr;
    if (get_context != nullptr && get_context(&context) == CUDA_SUCCESS && context != nullptr &&
        context == contexts[device])
      return;
    int current = 0;
    if ((error = cudaGetDevice(&current)) != cudaSuccess) return;
    if (current != device || context == nullptr) {
      // another device, or none current in this thread yet (a thread torch's autograd runs a backward in):
      // cudaSetDevice makes the device's primary context current, which the driver calls need
      if ((error = cudaSetDevice((int)device)) == cudaSuccess && current != device) previous = current;
      return;
    }
    contexts[device] = context;
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  ~OnDevice() {
    if (previous >= 0) cudaSetDevice(previous);
  }
};

// The error of a device that could not be made current.
static inline PyObject* device_failed(const Kernel& k, long device, cudaError_t error) {
  PyErr_Format(errors.launch, "%s: kernel launch failed: cannot make CUDA device %ld current: %s - %s", k.name,
               device, cudaGetErrorName(error), cudaGetErrorString(error));
  return NULL;
}

// One launch of converted arguments: refuse written tensors that share memory, allocate the outputs, load
// the kernels and run TileLang's `init` on first use, call the kernel; returns what the kernel returns.
template <const Kernel& K>
static PyObject* run(const Value* values, cudaStream_t stream, long device, PyObject* const* tensors) {
  if (device < 0 || device >= kMaxDevices) {
    PyErr_Format(errors.argument_value, "%s: launches on a CUDA device (0 to %d), not on device %ld", K.name,
                 kMaxDevices - 1, device);
    return NULL;
  }
  if (K.check_written != nullptr && K.check_written(values)) return NULL;
  OnDevice on_device(device);
  if (on_device.error != cudaSuccess) return device_failed(K, device, on_device.error);
  PyObject* objects[K.noutputs + 1];
  void* data[K.noutputs + 1];
  Outputs outputs(K, device, objects, data);
  if (K.allocate(values, outputs)) return NULL;
  launch_device = (int)device;
  char message[256] = "";
  int rc = load_functions(K, message, sizeof(message));
  if (rc == 0 && !(ready_devices & (1ULL << device))) {
    rc = K.init();
    if (rc == 0) ready_devices |= 1ULL << device;
  }
  if (rc == 0) rc = K.call(values, data, stream);
  if (rc != 0) {
    if (tma_refused.result != CUDA_SUCCESS)
      tma_failed(K);
    else
      PyErr_Format(errors.launch, "%s: kernel launch failed: %s", K.name, message[0] ? message : K.last_error());
    return NULL;
  }
  if (tensors != nullptr && bump_written<K>(tensors)) return NULL;  // the outputs are freed with `outputs`
  outputs.keep();
  for (int i = 0; i < K.noutputs; i++) {  // the outputs the kernel does not return
    bool returned = false;
    for (int r = 0; r < K.nreturns; r++) returned |= K.returns[r] == i;
    if (!returned) Py_DECREF(objects[i]);
  }
  if (K.nreturns == 0) Py_RETURN_NONE;
  if (K.nreturns == 1) return objects[K.returns[0]];
  PyObject* result = PyTuple_New(K.nreturns);
  for (int r = 0; r < K.nreturns; r++) {
    if (result != NULL) PyTuple_SET_ITEM(result, r, objects[K.returns[r]]); else Py_DECREF(objects[K.returns[r]]);
  }
  return result;
}

// launch(*arguments, stream, device[, *tensors]): the launch as Python calls it; the call path passes the
// call's tensor arguments too (torch.Tensors, in order), so that it bumps the versions of those it writes.
template <const Kernel& K>
static PyObject* launch(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Value values[K.nargs + 1];
  cudaStream_t stream;
  long device;
  const bool given = nargs == K.nargs + 2 + K.ntensor_args && K.ntensor_args > 0;
  for (int t = 0; given && t < K.ntensor_args; t++) {
    PyObject* tensor = args[K.nargs + 2 + t];
    if (tensor_type == nullptr || !PyObject_TypeCheck(tensor, tensor_type))
      return PyErr_Format(PyExc_TypeError, "%s: launch's tensor %d is a %.200s, not a torch.Tensor", K.name, t,
                          Py_TYPE(tensor)->tp_name);
  }
  if (convert<K>(args, given ? K.nargs + 2 : nargs, values, &stream, &device)) return NULL;
  return run<K>(values, stream, device, given ? args + K.nargs + 2 : nullptr);
}

// The launch as the C cached call makes it (the LAUNCH_RAW capsule, tltyped/abi.py): the same conversions and
// launch, with no Python values made for pointers, dims, stream or device.
template <const Kernel& K>
static PyObject* launch_raw(PyObject* const* objects, const uint64_t* words, PyObject* const* tensors, void* stream,
                            long device) {
  Value values[K.nargs + 1];
  if (convert_raw<K>(objects, words, values)) return NULL;
  return run<K>(values, static_cast<cudaStream_t>(stream), device, tensors);
}

// empty_outputs(*launch arguments): the outputs a launch with these arguments allocates, in parameter order,
// not written; the last argument is the device (-1: the CPU). For inspecting a kernel's outputs.
template <const Kernel& K>
static PyObject* empty_outputs(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Value values[K.nargs + 1];
  cudaStream_t stream;
  long device;
  if (convert<K>(args, nargs, values, &stream, &device)) return NULL;
  OnDevice on_device(device);
  if (on_device.error != cudaSuccess) return device_failed(K, device, on_device.error);
  PyObject* objects[K.noutputs + 1];
  void* data[K.noutputs + 1];
  Outputs outputs(K, device, objects, data);
  if (K.allocate(values, outputs)) return NULL;
  PyObject* result = PyTuple_New(K.noutputs);
  if (result == NULL) return NULL;
  outputs.keep();
  for (int i = 0; i < K.noutputs; i++) PyTuple_SET_ITEM(result, i, objects[i]);
  return result;
}

// set_allocator(capsule or None): torch_direct.cpp's EMPTY capsule, or None for the DLPack exchange API.
static inline PyObject* set_allocator(PyObject*, PyObject* capsule) {
  EmptyFn empty = nullptr;
  if (capsule != Py_None && (empty = (EmptyFn)PyCapsule_GetPointer(capsule, "tltyped.empty")) == nullptr) return NULL;
  torch_empty = empty;
  Py_RETURN_NONE;
}

// set_version_bump(capsule, callable or None): torch_direct.cpp's BUMP capsule, or a Python callable that
// bumps a tensor's version, or None (tests of the launcher alone).
static inline PyObject* set_version_bump(PyObject*, PyObject* bump) {
  BumpFn fn = nullptr;
  if (PyCapsule_CheckExact(bump) && (fn = (BumpFn)PyCapsule_GetPointer(bump, "tltyped.bump")) == nullptr) return NULL;
  torch_bump = fn;
  Py_XSETREF(python_bump, fn == nullptr && bump != Py_None ? Py_NewRef(bump) : nullptr);
  Py_RETURN_NONE;
}

static inline PyObject* set_cubin(PyObject*, PyObject* bytes) {
  if (!PyBytes_Check(bytes)) {
    PyErr_SetString(PyExc_TypeError, "set_cubin expects bytes");
    return NULL;
  }
  Py_XSETREF(cubin, Py_NewRef(bytes));
  Py_RETURN_NONE;
}

// torch's DLPack exchange API, or nullptr (then outputs can be allocated only through set_allocator); and
// torch.Tensor into `tensor_type`.
static inline const DLPackExchangeAPI* find_torch() {
  const DLPackExchangeAPI* api = nullptr;
  PyObject* torch = PyImport_ImportModule("torch");
  PyObject* tensor = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
  PyObject* capsule = tensor ? PyObject_GetAttrString(tensor, "__dlpack_c_exchange_api__") : NULL;
  if (capsule != NULL) api = (const DLPackExchangeAPI*)PyCapsule_GetPointer(capsule, "dlpack_exchange_api");
  if (tensor != NULL && PyType_Check(tensor)) tensor_type = (PyTypeObject*)Py_NewRef(tensor);
  Py_XDECREF(capsule);
  Py_XDECREF(tensor);
  Py_XDECREF(torch);
  PyErr_Clear();
  return api != nullptr && api->header.version.major == DLPACK_MAJOR_VERSION ? api : nullptr;
}

// The kernel's extension module `name`: launch, empty_outputs, set_cubin, set_allocator, its DESCRIPTION
// (JSON, read by backend/kernel.py) and its LAUNCH_RAW capsule.
template <const Kernel& K>
static PyObject* create_module(const char* name, const char* description) {
  static PyMethodDef methods[] = {
      {"launch", (PyCFunction)(void (*)(void))launch<K>, METH_FASTCALL, "Launch the kernel; returns its outputs."},
      {"empty_outputs", (PyCFunction)(void (*)(void))empty_outputs<K>, METH_FASTCALL, "Allocate the outputs only."},
      {"set_cubin", set_cubin, METH_O, "The device code to load at the first launch."},
      {"set_allocator", set_allocator, METH_O, "How outputs are allocated: torch_direct's EMPTY capsule, or None."},
      {"set_version_bump", set_version_bump, METH_O, "How written tensors' versions are bumped: BUMP, a callable or None."},
      {NULL, NULL, 0, NULL},
  };
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, name, NULL, -1, methods, NULL, NULL, NULL, NULL};
  dlpack = find_torch();
  find_errors();
  PyObject* module = PyModule_Create(&module_def);
  if (module != NULL && PyModule_AddStringConstant(module, "DESCRIPTION", description) != 0) Py_CLEAR(module);
  PyObject* raw = module != NULL ? PyCapsule_New((void*)&launch_raw<K>, "tltyped.launch_raw", NULL) : NULL;
  if (module != NULL && (raw == NULL || PyModule_AddObjectRef(module, "LAUNCH_RAW", raw) != 0)) Py_CLEAR(module);
  Py_XDECREF(raw);
  return module;
}

}  // namespace tltyped_launcher

#endif  // TLTYPED_LAUNCHER_H
