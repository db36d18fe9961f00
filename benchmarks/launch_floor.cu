// The launch floor: what launching the 128-element fp16 add costs with no
// Python at all, so that the Python paths in dispatch.py can be read as
// "floor + their own overhead".
//
// Three ways to launch the same kernel, each timed as the best of LOOPS runs
// of CALLS launches with one cudaDeviceSynchronize at the end of each run:
//   runtime  add_kernel<<<1, 128>>>(...)
//   driver   cuLaunchKernel (the driver entry point, found at run time)
//   tilelang cudaLaunchKernelEx with the programmatic-stream-serialization
//            attribute, then cudaGetLastError, with a cudaGetDevice before:
//            what the C side of a tltyped launch does per call (TileLang's
//            generated host `call()` plus tltyped's device guard)
// Nothing links against libcuda: the driver function is looked up through
// the runtime, so this also builds on a machine with no driver.
//
// Build: nvcc -O3 -arch=sm_90a -o launch_floor launch_floor.cu
// Run:   ./launch_floor [CALLS=20000] [LOOPS=5]
// Prints one line per way: "launch <way> <microseconds per call>".

#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#define CHECK(expr)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (expr);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s failed: %s\n", #expr, cudaGetErrorString(err_));      \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int kN = 128;

__global__ void add_kernel(const __half* a, const __half* b, __half* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = __hadd(a[i], b[i]);
}

using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);

struct Args {
  const __half* a;
  const __half* b;
  __half* c;
  int n;
};

// Microseconds per launch: best of `loops` runs of `calls` launches.
template <typename Launch>
double time_launches(Launch launch, int calls, int loops) {
  for (int i = 0; i < 1000; ++i) launch();  // warm-up
  CHECK(cudaDeviceSynchronize());
  double best = INFINITY;
  for (int l = 0; l < loops; ++l) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) launch();
    CHECK(cudaDeviceSynchronize());
    std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    best = std::fmin(best, took.count() / calls);
  }
  CHECK(cudaGetLastError());
  return best;
}

// The kernel really ran: c == a + b (a = 1, b = 2), then c is cleared for the next way.
static void check_and_clear(const char* way, __half* c) {
  __half host[kN];
  CHECK(cudaMemcpy(host, c, sizeof(host), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) {
    if (__half2float(host[i]) != 3.0f) {
      std::fprintf(stderr, "%s: wrong result c[%d] = %f\n", way, i, __half2float(host[i]));
      std::exit(1);
    }
  }
  CHECK(cudaMemset(c, 0, sizeof(host)));
}

int main(int argc, char** argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  int loops = argc > 2 ? std::atoi(argv[2]) : 5;

  __half host[kN];
  __half *a, *b, *c;
  CHECK(cudaMalloc(&a, sizeof(host)));
  CHECK(cudaMalloc(&b, sizeof(host)));
  CHECK(cudaMalloc(&c, sizeof(host)));
  for (int i = 0; i < kN; ++i) host[i] = __float2half(1.0f);
  CHECK(cudaMemcpy(a, host, sizeof(host), cudaMemcpyHostToDevice));
  for (int i = 0; i < kN; ++i) host[i] = __float2half(2.0f);
  CHECK(cudaMemcpy(b, host, sizeof(host), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(c, 0, sizeof(host)));
  Args args{a, b, c, kN};

  double runtime = time_launches([&] { add_kernel<<<1, kN>>>(args.a, args.b, args.c, args.n); }, calls, loops);
  check_and_clear("runtime", c);
  std::printf("launch runtime %.3f\n", runtime);

  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &found));
  if (entry == nullptr || found != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "cuLaunchKernel not found in the driver\n");
    return 1;
  }
  LaunchFn cu_launch = reinterpret_cast<LaunchFn>(entry);
  cudaFunction_t function;
  CHECK(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(add_kernel)));
  void* params[] = {&args.a, &args.b, &args.c, &args.n};
  double driver = time_launches(
      [&] { cu_launch(reinterpret_cast<CUfunction>(function), 1, 1, 1, kN, 1, 1, 0, nullptr, params, nullptr); },
      calls, loops);
  check_and_clear("driver", c);
  std::printf("launch driver %.3f\n", driver);

  double tilelang = time_launches(
      [&] {
        int device = 0;
        cudaGetDevice(&device);
        cudaLaunchConfig_t config = {};
        cudaLaunchAttribute attribute[1];
        attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute[0].val.programmaticStreamSerializationAllowed = 1;
        config.attrs = attribute;
        config.numAttrs = 1;
        config.stream = nullptr;
        config.gridDim = dim3(1, 1, 1);
        config.blockDim = dim3(kN, 1, 1);
        cudaLaunchKernelEx(&config, add_kernel, args.a, args.b, args.c, args.n);
        cudaGetLastError();
      },
      calls, loops);
  check_and_clear("tilelang", c);
  std::printf("launch tilelang %.3f\n", tilelang);
  return 0;
}
