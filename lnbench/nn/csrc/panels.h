// lnbench's recurrence kernel (recurrence.cpp, which includes every part once, in order): the per-timestep products: h_{t-1} W_h^T and dR_t W_h on packed panels.
#pragma once

// ---- The per-timestep products ------------------------------------------------------------------

// A timestep's two products, h_{t-1} W_h^T (forward) and dR_t W_h (backward), have B rows per
// member: too few for a library GEMM to pay (at::bmm costs ~4 us a call whatever the size, and at
// B 4 H 512 MKL reads W_h at ~20 GB/s, a third of what a streaming read gets). So the fixed factor
// is packed once per sequence into panels of L columns (L = one vector of lanes), each panel's K
// rows contiguous, and every timestep streams the panels once per block of up to 16 rows: one
// vector accumulator per row, k in order (mul, then add: no contraction). Measured, one thread,
// against torch.mm (MKL): 2.6x faster at (4, 512) x (512, 2048), 1.2x at (64, 256) x (256, 1024),
// 0.97-1.07x at 256 rows (docs/speed.md, "The per-timestep products").

// M (S, K, N), any strides -> (S, ceil(N / L), K, L): member s's columns [p L, p L + L) as panel p,
// the last one zero-padded.
template <typename T>
static Tensor panels_of(const Tensor& M) {
  constexpr int L = lnbench::Lanes<T>::n;
  const int64_t S = M.size(0), K = M.size(1), N = M.size(2), NP = (N + L - 1) / L;
  return at::constant_pad_nd(M, {0, NP * L - N}).contiguous().view({S, K, NP, L}).permute({0, 2, 1, 3}).contiguous();
}

// C (RB, N) = A (RB, K) M (K, N), M as panels (NP, K, L); A and C row-major. A is read through a
// k-major copy (K, RB): its RB rows, K apart, would otherwise share an L1 set whenever K is a
// multiple of 4 KB (at B 16, (16, 1024) x (1024, 256) took 1.7x torch.mm's time, 0.8x with
// the copy).
template <typename T, int RB>
static void panel_rows(const T* __restrict__ A, const T* __restrict__ P, T* __restrict__ C, int64_t K, int64_t N) {
  constexpr int L = lnbench::Lanes<T>::n;
  using V = lnbench::Vec<T>;
  static thread_local std::vector<T> a_by_k;
  a_by_k.resize(K * RB);
  T* __restrict__ ak = a_by_k.data();
  for (int b = 0; b < RB; ++b)
    for (int64_t k = 0; k < K; ++k) ak[k * RB + b] = A[b * K + k];
  for (int64_t p = 0; p * L < N; ++p) {
    const T* __restrict__ panel = P + p * K * L;
    V acc[RB] = {};
    for (int64_t k = 0; k < K; ++k) {
      const V m = lnbench::load_lanes(panel + k * L);
      for (int b = 0; b < RB; ++b) acc[b] += ak[k * RB + b] * m;
    }
    const int64_t width = std::min<int64_t>(L, N - p * L);
    for (int b = 0; b < RB; ++b) std::memcpy(C + b * N + p * L, &acc[b], width * sizeof(T));
  }
}

// C (R, N) = A (R, K) M (K, N) in blocks of 16 rows, then 8, then 4 (only 4 without AVX-512: 16
// accumulators need its 32 vector registers), then the last 1-3, so that no row is computed twice.
template <typename T>
static void panel_product(const T* A, const T* P, T* C, int64_t R, int64_t K, int64_t N) {
  int64_t r = 0;
#ifdef __AVX512F__
  for (; r + 16 <= R; r += 16) panel_rows<T, 16>(A + r * K, P, C + r * N, K, N);
  for (; r + 8 <= R; r += 8) panel_rows<T, 8>(A + r * K, P, C + r * N, K, N);
#endif
  for (; r + 4 <= R; r += 4) panel_rows<T, 4>(A + r * K, P, C + r * N, K, N);
  switch (R - r) {
    case 3: panel_rows<T, 3>(A + r * K, P, C + r * N, K, N); break;
    case 2: panel_rows<T, 2>(A + r * K, P, C + r * N, K, N); break;
    case 1: panel_rows<T, 1>(A + r * K, P, C + r * N, K, N); break;
    default: break;
  }
}

// out[s] = A[s] M[s] for each member: A (S, R, K) and out (S, R, N) contiguous, M as panels_of.
template <typename T>
static void member_products(const Tensor& A, const Tensor& panels, int64_t N, Tensor& out) {
  const int64_t S = A.size(0), R = A.size(1), K = A.size(2);
  TORCH_INTERNAL_ASSERT(A.is_contiguous() && out.is_contiguous() && panels.size(2) == K);
  const int64_t panel_size = panels.size(1) * K * panels.size(3);
  for (int64_t s = 0; s < S; ++s)
    panel_product<T>(A.data_ptr<T>() + s * R * K, panels.data_ptr<T>() + s * panel_size,
                     out.data_ptr<T>() + s * R * N, R, K, N);
}
