// lnbench: a whole recurrence (the tanh RNN or the LSTM, with its norm) as one autograd node:
// the forward over T timesteps and the backward through time, written by hand. Python calls
// recurrence_forward once per sequence and recurrence_backward once per backward
// (lnbench/nn/fused.py, the autograd Function); the equations are those of lnbench/nn/rnn.py and
// lnbench/nn/lstm.py, whose step-by-step Python code is the reference the tests compare with.
//
// The interface is named (the structs below, bound to Python as classes whose constructors take
// keywords only; an unknown name raises): Inputs (the cell, U, W_h, bias, tap, h0 and one NormSlot
// per norm position, norm_h, norm_x, norm_c) -> Forward (hidden, saturated, the over-batch
// statistics per slot, and Saved: what the backward reads); recurrence_backward(Inputs, Saved,
// OutputGrads, Wants) -> Grads, one field per input, undefined where not wanted. Saved is kept by
// autograd as a flat list in the one order of Saved::fields (from_tensors checks the count).
//
// Layout: time-major, the member axis S of a seed ensemble next (S = 1 for one model), then the
// batch B: every per-step slab is S*B contiguous rows; row r belongs to member r / B.
//   U     (S, T, B, G)  the input terms (member-major, as one matrix product per member gives them), computed for every timestep before the recurrence:
//                       W_x x_t; the joint RNN adds it inside norm_h, the separate RNN and the LSTM
//                       add norm_x of it after
//   W_h   (S, G, H)     the (effective) recurrent weights; G = H (RNN) or 4H (LSTM, gates i f o g)
//   bias  (S, G)        added after the norm (absent: a norm with a beta is the joint RNN's bias)
//   tap   (T, S, B, H)  optional, added to h_t: its gradient is the total dL/dh_t (the probes)
//   h0    (S, B, H)     optional, the initial state h_0 (absent: h_0 = 0; c_0 is always 0)
// One step (inner = the joint RNN, eq. 4 of Ba et al. 2016):
//   R = h_{t-1} W_h^T (R = 0 at t = 1 without h0);  pre = norm_h(R + U_t) + bias  (inner)
//                       pre = norm_h(R) + norm_x(U_t) + bias  (otherwise)
//   RNN:  h_t = tanh(pre)
//   LSTM: i, f, o = sigmoid(pre_i, pre_f, pre_o), g = tanh(pre_g)
//         c_t = f c_{t-1} + i g,  h_t = o tanh(norm_c(c_t))
// A norm (norm_h and norm_x over G, norm_c over H) is one of
//   NONE    the identity
//   LAYER   y = gamma (x - mean) rstd + beta over the row (Ba et al. 2016, eq. 4)
//   RMS     y = gamma x / sqrt(mean(x^2) + eps) over the row (Zhang & Sennrich 2019, eq. 4)
//   BATCH   y = gamma (x - mean) rstd + beta per feature over each group of `group` consecutive
//           rows of a member (group = B: the batch's statistics at this timestep, Cooijmans et
//           al. 2016; the biased variance; the means and variances are returned for the running
//           statistics, updated in Python)
//   AFFINE  y = scale_t x + shift_t per feature (BatchNorm in eval: its running statistics folded
//           into scale and shift by the caller), scale and shift (T, S, D)
// LAYER and RMS are lnbench::RowNorm of norm.h, the module's LayerNorm kernel's too (layernorm.cpp):
// one C++ LayerNorm (norm.h says how it sums a row). BATCH's statistics are per feature
// over the group's rows, in the scalar type. The backward is the x-hat form of
// lnbench/nn/layernorm.py (NormalizeAffine) per norm, the derivatives of tanh and sigmoid from the
// saved activations, and dW_h = sum_t dR_t^T h_{t-1} after the loop. Parameter gradients are
// summed over a timestep's rows in the scalar type and over the timesteps in double.
#include <torch/extension.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "norm.h"

namespace py = pybind11;
using torch::Tensor;
using OptT = std::optional<Tensor>;

enum Mode : int64_t { NONE = 0, LAYER = 1, RMS = 2, BATCH = 3, AFFINE = 4 };

static bool has(const OptT& t) { return t.has_value() && t->defined() && t->numel() > 0; }

// exp, sigmoid and tanh the compiler vectorizes (ATen's took ~1.9 ns per element at these sizes, a
// call per block; these ~0.5 ns with AVX-512). exp: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2,
// the Taylor polynomial of e^r (degree 7 for float: error < 6e-9; 13 for double: < 5e-18), times 2^n
// from the exponent bits. Inputs clamped to +-88 (float) or +-708 (double), NaN kept as NaN.
// tanh(x) = 1 - 2 / (e^{2|x|} + 1) with x's sign, and its Taylor series below |x| = 0.25 (float)
// or 0.01 (double), where the subtraction would lose digits. Relative error against libm: float
// 1.4e-7 (sigmoid) and 2.8e-7 (tanh), double 3e-16 and 1e-14.
template <typename T> struct Bits;
template <> struct Bits<float> { using I = int32_t; static constexpr int mant = 23, bias = 127; };
template <> struct Bits<double> { using I = int64_t; static constexpr int mant = 52, bias = 1023; };

template <typename T>
static inline T vexp(T x) {
  using I = typename Bits<T>::I;
  constexpr bool f = sizeof(T) == 4;
  const T hi = f ? (T)88.0 : (T)708.0;
  x = x > hi ? hi : x;  // NaN compares false: it stays NaN
  x = x < -hi ? -hi : x;
  const T magic = f ? (T)12582912.0 : (T)6755399441055744.0;  // 1.5 * 2^23 / 2^52: round to nearest
  const T n = (x * (T)1.4426950408889634 + magic) - magic;
  const T C1 = f ? (T)0.693359375 : (T)6.93145751953125E-1;  // ln 2 = C1 + C2
  const T C2 = f ? (T)-2.12194440e-4 : (T)1.42860682030941723212E-6;
  const T r = (x - n * C1) - n * C2;
  T p;
  if (f) {
    p = (T)(1.0 / 5040);
    p = p * r + (T)(1.0 / 720);
    p = p * r + (T)(1.0 / 120);
    p = p * r + (T)(1.0 / 24);
    p = p * r + (T)(1.0 / 6);
    p = p * r + (T)0.5;
    p = p * r + (T)1;
    p = p * r + (T)1;
  } else {
    p = (T)(1.0 / 6227020800.0);
    p = p * r + (T)(1.0 / 479001600.0);
    p = p * r + (T)(1.0 / 39916800.0);
    p = p * r + (T)(1.0 / 3628800.0);
    p = p * r + (T)(1.0 / 362880.0);
    p = p * r + (T)(1.0 / 40320.0);
    p = p * r + (T)(1.0 / 5040.0);
    p = p * r + (T)(1.0 / 720.0);
    p = p * r + (T)(1.0 / 120.0);
    p = p * r + (T)(1.0 / 24.0);
    p = p * r + (T)(1.0 / 6.0);
    p = p * r + (T)0.5;
    p = p * r + (T)1;
    p = p * r + (T)1;
  }
  const I e = ((I)n + Bits<T>::bias) << Bits<T>::mant;
  T scale;
  std::memcpy(&scale, &e, sizeof(T));
  return p * scale;
}

template <typename T>
static inline T vsigmoid(T x) {
  return (T)1 / ((T)1 + vexp(-x));
}

template <typename T>
static inline T vtanh(T x) {
  const T a = x < 0 ? -x : x;
  const T big = (T)1 - (T)2 / (vexp(2 * a) + (T)1);
  const T x2 = a * a;
  const T small =
      a + a * x2 *
              ((T)(-1.0 / 3) +
               x2 * ((T)(2.0 / 15) + x2 * ((T)(-17.0 / 315) + x2 * ((T)(62.0 / 2835) + x2 * (T)(-1382.0 / 155925)))));
  const T y = a < (sizeof(T) == 4 ? (T)0.25 : (T)0.01) ? small : big;
  return x < 0 ? -y : y;
}

template <typename T>
static void sigmoid_block(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  for (int64_t e = 0; e < n; ++e) y[e] = vsigmoid(x[e]);
}

template <typename T>
static void tanh_block(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  for (int64_t e = 0; e < n; ++e) y[e] = vtanh(x[e]);
}

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

// ---- The interface: every tensor by name -------------------------------------------------------

// One norm position of the cell (norm_h and norm_x over G, norm_c over H): what it computes and
// its parameters. gamma, beta (S, D) for LAYER, RMS (gamma only) and BATCH; scale, shift (T, S, D)
// for AFFINE; absent (None) otherwise.
struct NormSlot {
  int64_t mode = NONE;
  double eps = 1e-5;
  OptT gamma, beta, scale, shift;
};

// The node's inputs: the cell (lstm, inner = the joint RNN, group = examples per BATCH statistic,
// count_saturated = the probes' count), the tensors (see the layout above) and the three slots.
// keep_x_hat: Saved keeps norm_x's and norm_c's x_hat too (to look at them); by default the forward
// writes them to one timestep's scratch and the backward recomputes them from their inputs, U_t and
// c_t, which it keeps anyway: 5H fewer floats per row and timestep for the LN-LSTM. norm_h's input,
// h_{t-1} W_h^T, would cost a matrix product to recompute: its x_hat is always kept.
struct Inputs {
  bool lstm = false, inner = false, count_saturated = false, keep_x_hat = false;
  int64_t group = 1;
  OptT U, W_h, bias, tap, h0;
  NormSlot norm_h, norm_x, norm_c;
};

// What a norm slot saves per timestep: x_hat (T, S*B*D; AFFINE: its input; norm_x's and norm_c's only
// with Inputs.keep_x_hat, else undefined and recomputed by the backward) and rstd (T, rows).
struct NormSaved {
  Tensor x_hat, rstd;
};

// What the backward reads. hidden (T, S, B, H): h_1 .. h_T; gates (T, S*B*G): the LSTM's gates
// after their nonlinearities, per timestep in two blocks, sigmoid of i f o of every row (S*B, 3H)
// then tanh of g (S*B, H), or the RNN's tanh(pre) (T, S, B, H); cell, tanh_cell (T, S, B, H): the
// LSTM's c_t and tanh(norm_c(c_t)). Undefined where absent.
struct Saved {
  Tensor hidden, gates, cell, tanh_cell;
  NormSaved norm_h, norm_x, norm_c;

  // The one order of the flat list autograd keeps (ctx.save_for_backward): tensors() writes it,
  // from_tensors() reads it.
  std::vector<Tensor*> fields() {
    return {&hidden,           &gates,         &cell,           &tanh_cell,     &norm_h.x_hat,
            &norm_h.rstd,      &norm_x.x_hat,  &norm_x.rstd,    &norm_c.x_hat,  &norm_c.rstd};
  }
  std::vector<Tensor> tensors() {
    std::vector<Tensor> out;
    for (Tensor* f : fields()) out.push_back(*f);
    return out;
  }
  static Saved from_tensors(const std::vector<OptT>& list) {
    Saved s;
    auto f = s.fields();
    TORCH_CHECK(list.size() == f.size(), "recurrence: Saved.from_tensors takes ", f.size(), " tensors, got ",
                list.size());
    for (size_t i = 0; i < f.size(); ++i) *f[i] = list[i].value_or(Tensor());
    return s;
  }
};

// BATCH's means and biased variances (T, S, B / group, D), for the running statistics.
struct BatchStats {
  Tensor mean, var;
};

// The forward's result. saturated (S, B): with count_saturated, each example's saturated units.
struct Forward {
  Tensor hidden, saturated;
  BatchStats norm_h, norm_x, norm_c;
  Saved saved;
};

// The gradients arriving at the node's outputs: of hidden (T, S, B, H) and of h_T (S, B, H).
struct OutputGrads {
  OptT hidden, last;
};

// Which gradients to compute (autograd's needs_input_grad, by name), per input of Inputs.
struct NormWants {
  bool gamma = false, beta = false, scale = false, shift = false;
};
struct Wants {
  bool U = false, W_h = false, bias = false, tap = false, h0 = false;
  NormWants norm_h, norm_x, norm_c;
};

// The backward's result, one per input of Inputs; undefined where not wanted.
struct NormGrads {
  Tensor gamma, beta, scale, shift;
};
struct Grads {
  Tensor U, W_h, bias, tap, h0;
  NormGrads norm_h, norm_x, norm_c;
};

// ---- The norms inside the loops -----------------------------------------------------------------

// One slot as the loops see it: raw pointers, each advanced by a timestep's length.
template <typename T>
struct SlotLoop {
  int64_t mode = NONE, D = 0;
  double eps = 0;
  const T *gamma = nullptr, *beta = nullptr, *scale = nullptr, *shift = nullptr;
  T *x_hat = nullptr, *rstd = nullptr, *mean = nullptr, *var = nullptr;
  int64_t rstd_len = 0;
};

template <typename T>
static const T* ptr(const OptT& t) { return has(t) ? t->data_ptr<T>() : nullptr; }
template <typename T>
static T* ptr(const Tensor& t) { return t.defined() && t.numel() > 0 ? t.data_ptr<T>() : nullptr; }

template <typename T>
static SlotLoop<T> loop_of(const NormSlot& slot, const NormSaved& saved, const BatchStats& stats, int64_t D) {
  SlotLoop<T> L;
  L.mode = slot.mode, L.D = D, L.eps = slot.eps;
  L.gamma = ptr<T>(slot.gamma), L.beta = ptr<T>(slot.beta), L.scale = ptr<T>(slot.scale), L.shift = ptr<T>(slot.shift);
  L.x_hat = ptr<T>(saved.x_hat), L.rstd = ptr<T>(saved.rstd), L.mean = ptr<T>(stats.mean), L.var = ptr<T>(stats.var);
  L.rstd_len = L.rstd ? saved.rstd.size(1) : 0;
  return L;
}

// The per-timestep length of a slot's rstd: a row's (LAYER, RMS), a group's per feature (BATCH).
static int64_t rstd_len(int64_t mode, int64_t S, int64_t B, int64_t D, int64_t group) {
  if (mode == LAYER || mode == RMS) return S * B;
  if (mode == BATCH) return S * (B / group) * D;
  return 0;
}

// BATCH's mean per feature of a group's rows x (group, D), summed row by row in T: the forward's,
// and the backward's when it recomputes x_hat (the same bits).
template <typename T>
static void group_mean(const T* __restrict__ x, T* __restrict__ mean, int64_t group, int64_t D) {
  std::fill(mean, mean + D, (T)0);
  for (int64_t q = 0; q < group; ++q)
    for (int64_t j = 0; j < D; ++j) mean[j] += x[q * D + j];
  for (int64_t j = 0; j < D; ++j) mean[j] /= (T)group;
}

// y = norm(x) at timestep t, x and y (S*B, D); writes x_hat to xh (S*B, D), saves rstd and BATCH's
// statistics.
template <typename T>
static void norm_fwd(const SlotLoop<T>& L, int64_t t, const T* x, T* y, T* xh, int64_t S, int64_t B, int64_t group) {
  const int64_t N = S * B, D = L.D;
  T* rs = L.rstd ? L.rstd + t * L.rstd_len : nullptr;
  if (L.mode == AFFINE) {
    const T* scale = L.scale + t * S * D;
    const T* shift = L.shift + t * S * D;
    for (int64_t r = 0; r < N; ++r) {
      const T* sc = scale + (r / B) * D;
      const T* sh = shift + (r / B) * D;
      const T* xi = x + r * D;
      for (int64_t j = 0; j < D; ++j) {
        xh[r * D + j] = xi[j];  // the input, for dscale
        y[r * D + j] = xi[j] * sc[j] + sh[j];
      }
    }
  } else if (L.mode == LAYER || L.mode == RMS) {
    for (int64_t s = 0; s < S; ++s)
      lnbench::RowNorm<T>{L.gamma + s * D, L.beta ? L.beta + s * D : nullptr, D, L.eps, L.mode == RMS}.forward(
          x + s * B * D, y + s * B * D, xh + s * B * D, rs + s * B, B);
  } else if (L.mode == BATCH) {
    const int64_t ng = B / group;
    T* bm = L.mean ? L.mean + t * S * ng * D : nullptr;
    T* bv = L.var ? L.var + t * S * ng * D : nullptr;
    std::vector<T> mean(D), var(D), mt(D), rt(D);  // per feature over the group's rows, in T
    for (int64_t s = 0; s < S; ++s) {
      const T* __restrict__ g = L.gamma + s * D;
      const T* __restrict__ b = L.beta ? L.beta + s * D : nullptr;
      for (int64_t k = 0; k < ng; ++k) {
        const int64_t r0 = s * B + k * group;
        T* __restrict__ mp = mean.data();
        T* __restrict__ vp = var.data();
        group_mean<T>(x + r0 * D, mp, group, D);
        std::fill(vp, vp + D, (T)0);
        for (int64_t q = 0; q < group; ++q) {
          const T* __restrict__ xr = x + (r0 + q) * D;
          for (int64_t j = 0; j < D; ++j) {
            const T c = xr[j] - mp[j];
            vp[j] += c * c;
          }
        }
        const int64_t idx = (s * ng + k) * D;
        for (int64_t j = 0; j < D; ++j) {
          vp[j] /= (T)group;
          rt[j] = (T)(1.0 / std::sqrt((double)vp[j] + L.eps));
          mt[j] = mp[j];
          rs[idx + j] = rt[j];
        }
        if (bm)
          for (int64_t j = 0; j < D; ++j) {
            bm[idx + j] = (T)mp[j];
            bv[idx + j] = (T)vp[j];
          }
        const T* __restrict__ m = mt.data();
        const T* __restrict__ r = rt.data();
        for (int64_t q = 0; q < group; ++q) {
          const T* __restrict__ xr = x + (r0 + q) * D;
          T* __restrict__ xhr = xh + (r0 + q) * D;
          T* __restrict__ yr = y + (r0 + q) * D;
          for (int64_t j = 0; j < D; ++j) xhr[j] = (xr[j] - m[j]) * r[j];
          if (b) {
            for (int64_t j = 0; j < D; ++j) yr[j] = xhr[j] * g[j] + b[j];
          } else {
            for (int64_t j = 0; j < D; ++j) yr[j] = xhr[j] * g[j];
          }
        }
      }
    }
  }
}

// x_hat at timestep t of rows x (S*B, D), the bits norm_fwd wrote, from the saved rstd (the means
// taken again the same way); AFFINE's "x_hat" is its input. For a backward that did not keep x_hat.
template <typename T>
static void recompute_x_hat(const SlotLoop<T>& L, int64_t t, const T* x, T* xh, int64_t S, int64_t B, int64_t group) {
  const int64_t N = S * B, D = L.D;
  const T* rs = L.rstd ? L.rstd + t * L.rstd_len : nullptr;
  if (L.mode == AFFINE) {
    std::copy(x, x + N * D, xh);
  } else if (L.mode == LAYER || L.mode == RMS) {
    lnbench::RowNorm<T>{nullptr, nullptr, D, L.eps, L.mode == RMS}.recompute_x_hat(x, rs, xh, N);
  } else if (L.mode == BATCH) {
    const int64_t ng = B / group;
    std::vector<T> mean(D);
    for (int64_t s = 0; s < S; ++s)
      for (int64_t k = 0; k < ng; ++k) {
        const int64_t r0 = s * B + k * group;
        T* __restrict__ mp = mean.data();
        group_mean<T>(x + r0 * D, mp, group, D);
        const T* __restrict__ r = rs + (s * ng + k) * D;
        for (int64_t q = 0; q < group; ++q) {
          const T* __restrict__ xr = x + (r0 + q) * D;
          T* __restrict__ xhr = xh + (r0 + q) * D;
          for (int64_t j = 0; j < D; ++j) xhr[j] = (xr[j] - mp[j]) * r[j];
        }
      }
  }
}

// A slot's parameter gradients, summed over the timesteps in double: gamma, beta (S, D), scale,
// shift (T, S, D); empty where not wanted.
struct NormSums {
  std::vector<double> gamma, beta, scale, shift;
  NormSums(const NormWants& w, int64_t T, int64_t S, int64_t D)
      : gamma(w.gamma ? S * D : 0), beta(w.beta ? S * D : 0), scale(w.scale ? T * S * D : 0),
        shift(w.shift ? T * S * D : 0) {}
};

static double* sums(std::vector<double>& v, int64_t offset = 0) { return v.empty() ? nullptr : v.data() + offset; }

// dx from dy at timestep t (NONE copies), and the slot's parameter gradients added to `acc`; xh:
// the slot's x_hat at t (S*B, D), kept or recomputed.
template <typename T>
static void norm_bwd(const SlotLoop<T>& L, int64_t t, const T* dy, const T* xh, T* dx, NormSums& acc, int64_t S,
                     int64_t B, int64_t group) {
  const int64_t N = S * B, D = L.D;
  if (L.mode == NONE) {
    std::copy(dy, dy + N * D, dx);
    return;
  }
  const T* rs = L.rstd ? L.rstd + t * L.rstd_len : nullptr;
  double* dgamma = sums(acc.gamma);
  double* dbeta = sums(acc.beta);
  if (L.mode == AFFINE) {
    const T* scale = L.scale + t * S * D;
    double* dscale = sums(acc.scale, t * S * D);
    double* dshift = sums(acc.shift, t * S * D);
    for (int64_t r = 0; r < N; ++r) {
      const int64_t p = (r / B) * D;
      for (int64_t j = 0; j < D; ++j) {
        const T d = dy[r * D + j];
        dx[r * D + j] = d * scale[p + j];
        if (dscale) dscale[p + j] += (double)d * xh[r * D + j];
        if (dshift) dshift[p + j] += d;
      }
    }
  } else if (L.mode == LAYER || L.mode == RMS) {
    // dgamma and dbeta summed over a member's B rows in T, then added to the double totals
    std::vector<T> sg(dgamma ? D : 0), sb(dbeta ? D : 0);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t p = s * D;
      std::fill(sg.begin(), sg.end(), (T)0);
      std::fill(sb.begin(), sb.end(), (T)0);
      lnbench::RowNorm<T>{L.gamma + p, nullptr, D, L.eps, L.mode == RMS}.backward(
          dy + s * B * D, xh + s * B * D, rs + s * B, dx + s * B * D, dgamma ? sg.data() : nullptr,
          dbeta ? sb.data() : nullptr, B);
      if (dgamma)
        for (int64_t j = 0; j < D; ++j) dgamma[p + j] += sg[j];
      if (dbeta)
        for (int64_t j = 0; j < D; ++j) dbeta[p + j] += sb[j];
    }
  } else if (L.mode == BATCH) {
    const int64_t ng = B / group;
    std::vector<T> mg(D), mgx(D), a(D), c(D), sg(D), sb(D);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t p = s * D;
      const T* __restrict__ g = L.gamma + p;
      for (int64_t k = 0; k < ng; ++k) {
        const int64_t r0 = s * B + k * group, idx = (s * ng + k) * D;
        T* __restrict__ m1 = mg.data();
        T* __restrict__ m2 = mgx.data();
        T* __restrict__ tg = sg.data();
        T* __restrict__ tb = sb.data();
        std::fill(m1, m1 + D, (T)0);
        std::fill(m2, m2 + D, (T)0);
        std::fill(tg, tg + D, (T)0);
        std::fill(tb, tb + D, (T)0);
        for (int64_t q = 0; q < group; ++q) {  // per feature over the group's rows, in T
          const T* __restrict__ dyr = dy + (r0 + q) * D;
          const T* __restrict__ xhr = xh + (r0 + q) * D;
          for (int64_t j = 0; j < D; ++j) {
            const T gj = dyr[j] * g[j];
            m1[j] += gj;
            m2[j] += gj * xhr[j];
          }
          if (dgamma)
            for (int64_t j = 0; j < D; ++j) tg[j] += dyr[j] * xhr[j];
          if (dbeta)
            for (int64_t j = 0; j < D; ++j) tb[j] += dyr[j];
        }
        if (dgamma)
          for (int64_t j = 0; j < D; ++j) dgamma[p + j] += tg[j];
        if (dbeta)
          for (int64_t j = 0; j < D; ++j) dbeta[p + j] += tb[j];
        for (int64_t j = 0; j < D; ++j) {
          a[j] = m1[j] / (T)group;
          c[j] = m2[j] / (T)group;
        }
        const T* __restrict__ rr = rs + idx;
        for (int64_t q = 0; q < group; ++q) {
          const T* __restrict__ dyr = dy + (r0 + q) * D;
          const T* __restrict__ xhr = xh + (r0 + q) * D;
          T* __restrict__ dxr = dx + (r0 + q) * D;
          for (int64_t j = 0; j < D; ++j) dxr[j] = rr[j] * ((dyr[j] * g[j] - a[j]) - xhr[j] * c[j]);
        }
      }
    }
  }
}

static Tensor maybe_empty(bool want, at::IntArrayRef sizes, const at::TensorOptions& o) {
  return want ? torch::empty(sizes, o) : Tensor();
}

// Inputs checked (a missing or misshapen tensor raises, naming it) and made contiguous.
static Inputs checked(const Inputs& given) {
  Inputs in = given;
  TORCH_CHECK(has(in.U) && has(in.W_h) && in.U->dim() == 4 && in.W_h->dim() == 3,
              "recurrence: Inputs needs U (S, T, B, G) and W_h (S, G, H)");
  const int64_t S = in.U->size(0), T = in.U->size(1), B = in.U->size(2), G = in.U->size(3), H = in.W_h->size(2);
  TORCH_CHECK(in.W_h->size(0) == S && in.W_h->size(1) == G && G == (in.lstm ? 4 * H : H),
              "recurrence: W_h must be (S, G, H)");
  TORCH_CHECK(!in.inner || !in.lstm, "recurrence: the LSTM has no joint placement");
  TORCH_CHECK(!in.inner || in.norm_x.mode == NONE, "recurrence: the joint placement has no norm_x");
  TORCH_CHECK(in.group >= 1 && B % in.group == 0, "recurrence: a batch of ", B, " is not a whole number of groups of ",
              in.group);
  auto contiguous = [](OptT& t) {
    if (has(t)) t = t->contiguous();
  };
  auto check_size = [](const OptT& t, int64_t numel, const char* slot, const char* name) {
    TORCH_CHECK(!has(t) || t->numel() == numel, "recurrence: ", slot, ".", name, " has ", has(t) ? t->numel() : 0,
                " values, not ", numel);
  };
  for (OptT* t : {&in.U, &in.W_h, &in.bias, &in.tap, &in.h0}) contiguous(*t);
  check_size(in.bias, S * G, "Inputs", "bias");
  check_size(in.tap, T * S * B * H, "Inputs", "tap");
  check_size(in.h0, S * B * H, "Inputs", "h0");
  const std::pair<NormSlot*, const char*> slots[] = {{&in.norm_h, "norm_h"}, {&in.norm_x, "norm_x"}, {&in.norm_c, "norm_c"}};
  for (auto [slot, name] : slots) {
    const int64_t D = slot == &in.norm_c ? H : G, m = slot->mode;
    TORCH_CHECK(m >= NONE && m <= AFFINE, "recurrence: ", name, ".mode ", m, " is not a mode (0-4)");
    for (OptT* t : {&slot->gamma, &slot->beta, &slot->scale, &slot->shift}) contiguous(*t);
    TORCH_CHECK(m == NONE || m == AFFINE || has(slot->gamma), "recurrence: ", name, " needs gamma");
    TORCH_CHECK(m != AFFINE || (has(slot->scale) && has(slot->shift)), "recurrence: ", name, " needs scale and shift");
    check_size(slot->gamma, S * D, name, "gamma");
    check_size(slot->beta, S * D, name, "beta");
    check_size(slot->scale, T * S * D, name, "scale");
    check_size(slot->shift, T * S * D, name, "shift");
  }
  return in;
}

Forward recurrence_forward(const Inputs& given) {
  const Inputs in = checked(given);
  const Tensor U = *in.U, W_h = *in.W_h;
  const bool lstm = in.lstm, inner = in.inner;
  const int64_t group = in.group, mode_h = in.norm_h.mode, mode_x = in.norm_x.mode;
  const int64_t mode_c = lstm ? in.norm_c.mode : NONE;
  const int64_t S = U.size(0), T = U.size(1), B = U.size(2), G = U.size(3), H = W_h.size(2);
  const int64_t ng = B / group;
  auto o = U.options();
  Forward out;
  Saved& sv = out.saved;
  sv.hidden = torch::empty({T, S, B, H}, o);
  sv.gates = (lstm || has(in.tap)) ? torch::empty({T, S, B, G}, o) : Tensor();
  sv.cell = maybe_empty(lstm, {T, S, B, H}, o), sv.tanh_cell = maybe_empty(lstm, {T, S, B, H}, o);
  auto allocate = [&](int64_t mode, int64_t D, bool keep_x_hat, NormSaved& saved, BatchStats& stats) {
    saved.x_hat = maybe_empty(keep_x_hat && mode != NONE, {T, S * B * D}, o);
    const int64_t len = rstd_len(mode, S, B, D, group);
    saved.rstd = maybe_empty(len > 0, {T, len}, o);
    stats.mean = maybe_empty(mode == BATCH, {T, S, ng, D}, o);
    stats.var = maybe_empty(mode == BATCH, {T, S, ng, D}, o);
  };
  allocate(mode_h, G, true, sv.norm_h, out.norm_h);
  allocate(mode_x, G, in.keep_x_hat, sv.norm_x, out.norm_x);
  allocate(mode_c, H, in.keep_x_hat, sv.norm_c, out.norm_c);
  // x_hat at timestep t: the kept (T, S*B*D) tensor's slab, or one timestep's scratch
  Tensor XHX = mode_x != NONE && !in.keep_x_hat ? torch::empty({S, B, G}, o) : Tensor();
  Tensor XHC = mode_c != NONE && !in.keep_x_hat ? torch::empty({S, B, H}, o) : Tensor();
  Tensor Hs = sv.hidden, ACT = sv.gates, C = sv.cell, TC = sv.tanh_cell;
  Tensor XU = torch::empty({S, B, G}, o), UX = torch::empty({S, B, G}, o);  // U[:, t] as rows, and norm_x of it
  Tensor R = torch::empty({S, B, G}, o), A = torch::empty({S, B, G}, o), P = torch::empty({S, B, G}, o);
  Tensor PRE = torch::empty({S, B, G}, o), NC = torch::empty({S, B, H}, o);
  // the probes' saturated units per example, over every timestep: |tanh| > 0.99, the LSTM's
  // sigmoids on tanh's scale |2 sigmoid - 1| > 0.99 (lnbench/training/probes.py)
  Tensor SAT = in.count_saturated ? torch::zeros({S, B}, o) : Tensor();
  const int64_t N = S * B;
  AT_DISPATCH_FLOATING_TYPES(U.scalar_type(), "recurrence_forward", [&] {
    using T_ = scalar_t;
    const Tensor W_hT = panels_of<T_>(W_h.transpose(1, 2));  // W_h^T (S, H, G) as panels
    const auto loop_h = loop_of<T_>(in.norm_h, sv.norm_h, out.norm_h, G);
    const auto loop_x = loop_of<T_>(in.norm_x, sv.norm_x, out.norm_x, G);
    const auto loop_c = loop_of<T_>(in.norm_c, sv.norm_c, out.norm_c, H);
    auto x_hat_slab = [&](const SlotLoop<T_>& L, int64_t t, const Tensor& scratch) -> T_* {
      return L.x_hat ? L.x_hat + t * N * L.D : scratch.defined() ? scratch.data_ptr<T_>() : nullptr;
    };
    const T_* bias_p = ptr<T_>(in.bias);
    const T_* tap_p = ptr<T_>(in.tap);
    for (int64_t t = 0; t < T; ++t) {
      const T_* U_p = U.data_ptr<T_>();
      auto urow_raw = [&](int64_t row) { return U_p + (((row / B) * T + t) * B + row % B) * G; };  // U[s, t, b]
      if (mode_x != NONE) {  // norm_x(U[:, t]): its rows gathered, then normalized like norm_h
        T_* xu = XU.data_ptr<T_>();
        for (int64_t m = 0; m < S; ++m) std::copy(urow_raw(m * B), urow_raw(m * B) + B * G, xu + m * B * G);
        norm_fwd<T_>(loop_x, t, xu, UX.data_ptr<T_>(), x_hat_slab(loop_x, t, XHX), S, B, group);
      }
      const T_* ux_p = UX.data_ptr<T_>();
      auto urow = [&](int64_t row) { return mode_x != NONE ? ux_p + row * G : urow_raw(row); };
      if (t == 0 && has(in.h0)) {
        member_products<T_>(in.h0->view({S, B, H}), W_hT, G, R);
      } else if (t == 0) {
        R.zero_();  // h_0 = 0
      } else {
        member_products<T_>(Hs[t - 1], W_hT, G, R);  // (S, B, H) x (S, H, G)
      }
      T_* r = R.data_ptr<T_>();
      const T_* x_in = r;
      if (inner) {
        T_* a = A.data_ptr<T_>();
        for (int64_t row = 0; row < N; ++row) {
          const T_* __restrict__ ur = urow(row);
          for (int64_t j = 0; j < G; ++j) a[row * G + j] = r[row * G + j] + ur[j];
        }
        x_in = a;
      }
      const T_* n = x_in;  // the norm's output (NONE: its input)
      if (mode_h != NONE) {
        norm_fwd<T_>(loop_h, t, x_in, P.data_ptr<T_>(), x_hat_slab(loop_h, t, Tensor()), S, B, group);
        n = P.data_ptr<T_>();
      }
      // pre = n (+ U_t) (+ bias); the LSTM's in two blocks, i f o of every row (N, 3H), then g (N, H)
      T_* __restrict__ pre = PRE.data_ptr<T_>();
      for (int64_t row = 0; row < N; ++row) {
        const T_* __restrict__ nr = n + row * G;
        const T_* __restrict__ ur = urow(row);
        const T_* __restrict__ bp = bias_p ? bias_p + (row / B) * G : nullptr;
        T_* __restrict__ p1 = lstm ? pre + row * 3 * H : pre + row * G;
        const int64_t n1 = lstm ? 3 * H : G;
        T_* __restrict__ p2 = pre + N * 3 * H + row * H;  // the LSTM's g
        if (inner) {
          for (int64_t j = 0; j < n1; ++j) p1[j] = nr[j];
        } else {
          for (int64_t j = 0; j < n1; ++j) p1[j] = nr[j] + ur[j];
        }
        if (bp)
          for (int64_t j = 0; j < n1; ++j) p1[j] += bp[j];
        if (lstm) {
          for (int64_t j = 0; j < H; ++j) p2[j] = nr[3 * H + j] + ur[3 * H + j];
          if (bp)
            for (int64_t j = 0; j < H; ++j) p2[j] += bp[3 * H + j];
        }
      }
      T_* h = Hs[t].data_ptr<T_>();
      if (!lstm) {
        if (tap_p) {
          T_* a = ACT.data_ptr<T_>() + t * N * H;
          tanh_block<T_>(pre, a, N * H);
          const T_* tp = tap_p + t * N * H;
          for (int64_t e = 0; e < N * H; ++e) h[e] = a[e] + tp[e];
        } else {
          tanh_block<T_>(pre, h, N * H);
        }
        if (in.count_saturated) {
          const T_* a = tap_p ? ACT.data_ptr<T_>() + t * N * H : h;
          T_* sat = SAT.data_ptr<T_>();
          for (int64_t row = 0; row < N; ++row) {
            int64_t n = 0;
            for (int64_t j = 0; j < H; ++j) n += std::abs(a[row * H + j]) > (T_)0.99;
            sat[row] += (T_)n;
          }
        }
        continue;
      }
      // ACT_t in PRE's two blocks: sigmoid of i f o (N, 3H), then tanh of g (N, H)
      T_* act = ACT.data_ptr<T_>() + t * N * G;
      sigmoid_block<T_>(pre, act, N * 3 * H);
      tanh_block<T_>(pre + N * 3 * H, act + N * 3 * H, N * H);
      const T_* ac = act;
      const T_* acg = ac + N * 3 * H;
      T_* c = C.data_ptr<T_>() + t * N * H;
      const T_* cp = t > 0 ? c - N * H : nullptr;
      for (int64_t row = 0; row < N; ++row) {
        const T_* __restrict__ ai = ac + row * 3 * H;
        const T_* __restrict__ ag = acg + row * H;
        T_* __restrict__ cr = c + row * H;
        if (cp) {
          const T_* __restrict__ pr = cp + row * H;
          for (int64_t j = 0; j < H; ++j) cr[j] = ai[H + j] * pr[j] + ai[j] * ag[j];
        } else {
          for (int64_t j = 0; j < H; ++j) cr[j] = ai[j] * ag[j];
        }
      }
      const T_* nc = c;
      if (mode_c != NONE) {
        norm_fwd<T_>(loop_c, t, c, NC.data_ptr<T_>(), x_hat_slab(loop_c, t, XHC), S, B, group);
        nc = NC.data_ptr<T_>();
      }
      T_* tc = TC.data_ptr<T_>() + t * N * H;
      tanh_block<T_>(nc, tc, N * H);  // (S, B, H)
      const T_* tp = tap_p ? tap_p + t * N * H : nullptr;
      for (int64_t row = 0; row < N; ++row) {
        const T_* __restrict__ og = ac + row * 3 * H + 2 * H;
        const T_* __restrict__ tcr = tc + row * H;
        T_* __restrict__ hr = h + row * H;
        for (int64_t j = 0; j < H; ++j) hr[j] = og[j] * tcr[j];
        if (tp)
          for (int64_t j = 0; j < H; ++j) hr[j] += tp[row * H + j];
      }
      if (in.count_saturated) {
        T_* sat = SAT.data_ptr<T_>();
        for (int64_t row = 0; row < N; ++row) {
          const T_* __restrict__ ai = ac + row * 3 * H;
          const T_* __restrict__ ag = acg + row * H;
          const T_* __restrict__ tcr = tc + row * H;
          int64_t n = 0;
          for (int64_t j = 0; j < 3 * H; ++j) n += std::abs(2 * ai[j] - 1) > (T_)0.99;
          for (int64_t j = 0; j < H; ++j) n += (std::abs(ag[j]) > (T_)0.99) + (std::abs(tcr[j]) > (T_)0.99);
          sat[row] += (T_)n;
        }
      }
    }
  });
  if (!lstm && !sv.gates.defined()) sv.gates = Hs;  // the RNN without a tap: h_t is tanh(pre)
  out.hidden = Hs;
  out.saturated = SAT;
  return out;
}

static Tensor to_tensor(const std::vector<double>& v, at::IntArrayRef sizes, const at::TensorOptions& o) {
  auto out = torch::empty(sizes, o);
  AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), "to_tensor", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = (scalar_t)v[i];
  });
  return out;
}

// The gradients of the wanted inputs (`want`, without those that are absent) from the gradients
// of the outputs, through time.
Grads recurrence_backward(const Inputs& given, const Saved& saved, const OutputGrads& grad, const Wants& given_want) {
  const Inputs in = checked(given);
  TORCH_CHECK(saved.hidden.defined() && saved.gates.defined(), "recurrence: Saved needs hidden and gates");
  Wants want = given_want;  // nothing for an absent input
  want.bias = want.bias && has(in.bias), want.tap = want.tap && has(in.tap), want.h0 = want.h0 && has(in.h0);
  for (auto [w, s] : {std::pair<NormWants*, const NormSlot*>{&want.norm_h, &in.norm_h}, {&want.norm_x, &in.norm_x},
                      {&want.norm_c, &in.norm_c}}) {
    w->gamma = w->gamma && has(s->gamma), w->beta = w->beta && has(s->beta);
    w->scale = w->scale && has(s->scale), w->shift = w->shift && has(s->shift);
  }
  const bool lstm = in.lstm, inner = in.inner;
  const int64_t group = in.group, mode_x = in.norm_x.mode;
  const int64_t mode_c = lstm ? in.norm_c.mode : NONE;
  const Tensor W_h = *in.W_h, Hs = saved.hidden, ACT = saved.gates, C = saved.cell, TC = saved.tanh_cell;
  const int64_t T = Hs.size(0), S = Hs.size(1), B = Hs.size(2), H = Hs.size(3), G = W_h.size(1);
  const int64_t N = S * B;
  auto o = Hs.options();
  Tensor gHc = has(grad.hidden) ? grad.hidden->contiguous() : Tensor();
  Tensor gLc = has(grad.last) ? grad.last->contiguous() : Tensor();  // the gradient of h_T, given on its own
  const NormWants& wx = want.norm_x;
  const bool want_dU = want.U || wx.gamma || wx.beta || wx.scale || wx.shift;  // norm_x's come through dU
  Tensor dU = want_dU ? torch::empty({S, T, B, G}, o) : Tensor();
  Tensor dR_all = want.W_h ? torch::empty({S, T, B, G}, o) : Tensor(), dR_t = torch::empty({S, B, G}, o);  // member-major, for dW
  Tensor dh = torch::zeros({S, B, H}, o), dh_rec = torch::zeros({S, B, H}, o);
  Tensor dc = torch::zeros({S, B, H}, o), dNC = torch::empty({S, B, H}, o), dCn = torch::empty({S, B, H}, o);
  Tensor dPRE = torch::empty({S, B, G}, o), dA = torch::empty({S, B, G}, o);
  Tensor dtap = want.tap ? torch::empty({T, S, B, H}, o) : Tensor();
  std::vector<double> dbias(S * G, 0.0);
  NormSums sum_h(want.norm_h, T, S, G), sum_x(want.norm_x, T, S, G), sum_c(want.norm_c, T, S, H);
  Tensor dUX = torch::empty({S, B, G}, o);
  // scratch for the x_hat the backward recomputes (Saved::for_backward), and norm_x's input rows
  const bool recompute_x = mode_x != NONE && !saved.norm_x.x_hat.defined();
  const bool recompute_c = mode_c != NONE && !saved.norm_c.x_hat.defined();
  Tensor XHX = recompute_x ? torch::empty({S, B, G}, o) : Tensor();
  Tensor XU = recompute_x ? torch::empty({S, B, G}, o) : Tensor();
  Tensor XHC = recompute_c ? torch::empty({S, B, H}, o) : Tensor();
  const Tensor U = *in.U;
  const bool has_h0 = has(in.h0);
  const BatchStats no_stats;
  AT_DISPATCH_FLOATING_TYPES(Hs.scalar_type(), "recurrence_backward", [&] {
    using T_ = scalar_t;
    const Tensor W_h_panels = panels_of<T_>(W_h);  // W_h (S, G, H) as panels
    const auto loop_h = loop_of<T_>(in.norm_h, saved.norm_h, no_stats, G);
    const auto loop_x = loop_of<T_>(in.norm_x, saved.norm_x, no_stats, G);
    const auto loop_c = loop_of<T_>(in.norm_c, saved.norm_c, no_stats, H);
    std::vector<T_> sbias(G);
    // a slot's x_hat at t: the kept one, or recomputed from its input x into the scratch `into`
    auto x_hat_at = [&](const SlotLoop<T_>& L, int64_t t, const T_* x, const Tensor& into) -> const T_* {
      if (L.mode == NONE) return nullptr;
      if (L.x_hat) return L.x_hat + t * N * L.D;
      TORCH_CHECK(x && into.defined(), "recurrence: Saved lacks a slot's x_hat that cannot be recomputed");
      recompute_x_hat<T_>(L, t, x, into.data_ptr<T_>(), S, B, group);
      return into.data_ptr<T_>();
    };
    for (int64_t t = T - 1; t >= 0; --t) {
      T_* d = dh.data_ptr<T_>();
      const T_* rec = dh_rec.data_ptr<T_>();
      const T_* g_out = gHc.defined() ? gHc.data_ptr<T_>() + t * N * H : nullptr;
      if (g_out && t < T - 1) {
        for (int64_t e = 0; e < N * H; ++e) d[e] = g_out[e] + rec[e];
      } else if (g_out) {
        std::copy(g_out, g_out + N * H, d);
      } else if (t < T - 1) {
        std::copy(rec, rec + N * H, d);
      } else {
        std::fill(d, d + N * H, (T_)0);
      }
      if (t == T - 1 && gLc.defined()) {
        const T_* gl = gLc.data_ptr<T_>();
        for (int64_t e = 0; e < N * H; ++e) d[e] += gl[e];
      }
      if (want.tap) std::copy(d, d + N * H, dtap.data_ptr<T_>() + t * N * H);
      T_* dp = dPRE.data_ptr<T_>();
      const T_* ac = ACT.data_ptr<T_>() + t * N * G;
      if (!lstm) {
        for (int64_t e = 0; e < N * H; ++e) dp[e] = d[e] * (1 - ac[e] * ac[e]);
      } else {
        const T_* acg = ac + N * 3 * H;
        const T_* tc = TC.data_ptr<T_>() + t * N * H;
        T_* dnc = dNC.data_ptr<T_>();
        for (int64_t row = 0; row < N; ++row) {
          const T_* __restrict__ og = ac + row * 3 * H + 2 * H;
          const T_* __restrict__ dr = d + row * H;
          const T_* __restrict__ tcr = tc + row * H;
          T_* __restrict__ dncr = dnc + row * H;
          T_* __restrict__ dpo = dp + row * G + 2 * H;
          for (int64_t j = 0; j < H; ++j) {
            dncr[j] = dr[j] * og[j] * (1 - tcr[j] * tcr[j]);
            dpo[j] = dr[j] * tcr[j] * og[j] * (1 - og[j]);
          }
        }
        const T_* dcn = dnc;
        if (mode_c != NONE) {
          const T_* c_t = C.data_ptr<T_>() + t * N * H;
          norm_bwd<T_>(loop_c, t, dnc, x_hat_at(loop_c, t, c_t, XHC), dCn.data_ptr<T_>(), sum_c, S, B, group);
          dcn = dCn.data_ptr<T_>();
        }
        T_* dcc = dc.data_ptr<T_>();
        const T_* cp = t > 0 ? C.data_ptr<T_>() + (t - 1) * N * H : nullptr;
        for (int64_t row = 0; row < N; ++row) {
          const T_* __restrict__ ai = ac + row * 3 * H;
          const T_* __restrict__ af = ai + H;
          const T_* __restrict__ ag = acg + row * H;
          T_* __restrict__ di = dp + row * G;
          T_* __restrict__ df = di + H;
          T_* __restrict__ dg = di + 3 * H;
          T_* __restrict__ dcr = dcc + row * H;
          const T_* __restrict__ dcnr = dcn + row * H;
          for (int64_t j = 0; j < H; ++j) {
            const T_ dct = dcr[j] + dcnr[j];
            di[j] = dct * ag[j] * ai[j] * (1 - ai[j]);
            dg[j] = dct * ai[j] * (1 - ag[j] * ag[j]);
            dcr[j] = dct;  // for df below
          }
          if (cp) {
            const T_* __restrict__ pr = cp + row * H;
            for (int64_t j = 0; j < H; ++j) df[j] = dcr[j] * pr[j] * af[j] * (1 - af[j]);
          } else {
            for (int64_t j = 0; j < H; ++j) df[j] = 0;
          }
          for (int64_t j = 0; j < H; ++j) dcr[j] *= af[j];
        }
      }
      if (want.bias)  // summed over a member's rows in T, then added to the double total
        for (int64_t m = 0; m < S; ++m) {
          T_* __restrict__ sb = sbias.data();
          std::fill(sb, sb + G, (T_)0);
          for (int64_t row = m * B; row < (m + 1) * B; ++row) {
            const T_* __restrict__ dpr = dp + row * G;
            for (int64_t j = 0; j < G; ++j) sb[j] += dpr[j];
          }
          double* __restrict__ db = dbias.data() + m * G;
          for (int64_t j = 0; j < G; ++j) db[j] += sb[j];
        }
      T_* dr = dR_t.data_ptr<T_>();
      auto to_dU = [&](const T_* src) {  // (S*B, G) rows -> dU[:, t]
        for (int64_t m = 0; m < S; ++m)
          std::copy(src + m * B * G, src + (m + 1) * B * G, dU.data_ptr<T_>() + (m * T + t) * B * G);
      };
      if (!want_dU || inner) {
        // no input-side gradient wanted (the probes: only dL/dh_t), or it is dR below (joint)
      } else if (mode_x == NONE) {
        to_dU(dp);
      } else {  // through norm_x
        T_* xu = recompute_x ? XU.data_ptr<T_>() : nullptr;  // U[:, t] as rows, norm_x's input, as gathered
        for (int64_t m = 0; xu && m < S; ++m) {
          const T_* u = U.data_ptr<T_>() + (m * T + t) * B * G;
          std::copy(u, u + B * G, xu + m * B * G);
        }
        norm_bwd<T_>(loop_x, t, dp, x_hat_at(loop_x, t, xu, XHX), dUX.data_ptr<T_>(), sum_x, S, B, group);
        to_dU(dUX.data_ptr<T_>());
      }
      norm_bwd<T_>(loop_h, t, dp, x_hat_at(loop_h, t, nullptr, Tensor()), dr, sum_h, S, B, group);
      if (inner && want.U) to_dU(dr);
      if (t > 0 || want.h0) member_products<T_>(dR_t, W_h_panels, H, dh_rec);  // (S, B, G) x (S, G, H)
      if (want.W_h && (t > 0 || has_h0))
        for (int64_t m = 0; m < S; ++m)
          std::copy(dr + m * B * G, dr + (m + 1) * B * G, dR_all.data_ptr<T_>() + (m * T + t) * B * G);
    }
  });
  // dW_h = sum_{t >= 1} dR_t^T h_{t-1}: one matrix product over the (T - 1) B rows of each member
  // (with h_0 given, over all T B rows: h_0 then h_1 .. h_{T-1}); dh_0 = dR_0 W_h, left in dh_rec
  Grads out;
  out.U = dU, out.tap = dtap;
  if (want.h0) out.h0 = dh_rec.clone();
  if (want.W_h && has_h0) {
    const Tensor prev = at::cat({in.h0->view({1, S, B, H}), Hs.narrow(0, 0, T - 1)}, 0);  // h_0 .. h_{T-1}
    out.W_h = at::bmm(dR_all.reshape({S, T * B, G}).transpose(1, 2), prev.transpose(0, 1).reshape({S, T * B, H}));
  } else {
    out.W_h = !want.W_h ? Tensor()
              : T > 1   ? at::bmm(dR_all.narrow(1, 1, T - 1).reshape({S, (T - 1) * B, G}).transpose(1, 2),
                                  Hs.narrow(0, 0, T - 1).transpose(0, 1).reshape({S, (T - 1) * B, H}))
                        : torch::zeros({S, G, H}, o);
  }
  if (want.bias) out.bias = to_tensor(dbias, {S, G}, o);
  auto put = [&](NormGrads& g, const NormSums& s, int64_t D) {
    if (!s.gamma.empty()) g.gamma = to_tensor(s.gamma, {S, D}, o);
    if (!s.beta.empty()) g.beta = to_tensor(s.beta, {S, D}, o);
    if (!s.scale.empty()) g.scale = to_tensor(s.scale, {T, S, D}, o);
    if (!s.shift.empty()) g.shift = to_tensor(s.shift, {T, S, D}, o);
  };
  put(out.norm_h, sum_h, G);
  put(out.norm_x, sum_x, G);
  put(out.norm_c, sum_c, H);
  if (!want.U) out.U = Tensor();  // computed for norm_x's parameters only
  return out;
}

// A struct as a Python class: each field readable and writable by name, and a constructor that
// takes fields by keyword only, each set by the same name in C++ (no Python attribute machinery per
// field: ~1 us a struct); an unknown name raises AttributeError, at construction or later.
template <typename S>
class Binder {
 public:
  Binder(py::module_& m, const char* name, const char* doc)
      : cls_(m, name, doc), setters_(std::make_shared<Setters>()) {
    auto setters = setters_;
    std::string type = name;
    cls_.def(py::init([setters, type](const py::kwargs& fields) {
      S s;
      for (auto item : fields) {
        const auto key = item.first.cast<std::string>();
        const auto it = setters->find(key);
        if (it == setters->end()) throw py::attribute_error("'" + type + "' has no field '" + key + "'");
        it->second(s, item.second);
      }
      return s;
    }));
  }
  template <typename D>
  Binder& field(const char* name, D S::*member) {
    cls_.def_readwrite(name, member);
    (*setters_)[name] = [member](S& s, py::handle value) { s.*member = value.cast<D>(); };
    return *this;
  }
  template <typename... Extra>
  Binder& def(Extra&&... extra) {
    cls_.def(std::forward<Extra>(extra)...);
    return *this;
  }
  template <typename... Extra>
  Binder& def_static(Extra&&... extra) {
    cls_.def_static(std::forward<Extra>(extra)...);
    return *this;
  }

 private:
  using Setters = std::unordered_map<std::string, std::function<void(S&, py::handle)>>;
  py::class_<S> cls_;
  std::shared_ptr<Setters> setters_;
};

#define FIELD(S, f) field(#f, &S::f)

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  Binder<NormSlot>(m, "NormSlot", "one norm position: mode, eps, gamma, beta, scale, shift")
      .FIELD(NormSlot, mode).FIELD(NormSlot, eps).FIELD(NormSlot, gamma).FIELD(NormSlot, beta)
      .FIELD(NormSlot, scale).FIELD(NormSlot, shift);
  Binder<Inputs>(m, "Inputs", "the node's inputs: the cell, U, W_h, bias, tap, h0, norm_h, norm_x, norm_c")
      .FIELD(Inputs, lstm).FIELD(Inputs, inner).FIELD(Inputs, count_saturated).FIELD(Inputs, keep_x_hat)
      .FIELD(Inputs, group)
      .FIELD(Inputs, U).FIELD(Inputs, W_h).FIELD(Inputs, bias).FIELD(Inputs, tap).FIELD(Inputs, h0)
      .FIELD(Inputs, norm_h).FIELD(Inputs, norm_x).FIELD(Inputs, norm_c);
  Binder<NormSaved>(m, "NormSaved", "what a norm slot saves: x_hat, rstd").FIELD(NormSaved, x_hat).FIELD(NormSaved, rstd);
  Binder<Saved>(m, "Saved", "what the backward reads")
      .FIELD(Saved, hidden).FIELD(Saved, gates).FIELD(Saved, cell).FIELD(Saved, tanh_cell)
      .FIELD(Saved, norm_h).FIELD(Saved, norm_x).FIELD(Saved, norm_c)
      .def("tensors", &Saved::tensors, "the flat list, in the one order from_tensors reads")
      .def_static("from_tensors", &Saved::from_tensors, "Saved from tensors() (a wrong count raises)");
  Binder<BatchStats>(m, "BatchStats", "over_batch's means and biased variances")
      .FIELD(BatchStats, mean).FIELD(BatchStats, var);
  Binder<Forward>(m, "Forward", "the forward's result")
      .FIELD(Forward, hidden).FIELD(Forward, saturated).FIELD(Forward, norm_h).FIELD(Forward, norm_x)
      .FIELD(Forward, norm_c).FIELD(Forward, saved);
  Binder<OutputGrads>(m, "OutputGrads", "the gradients of the outputs hidden and last (h_T)")
      .FIELD(OutputGrads, hidden).FIELD(OutputGrads, last);
  Binder<NormWants>(m, "NormWants", "which of a slot's parameter gradients to compute")
      .FIELD(NormWants, gamma).FIELD(NormWants, beta).FIELD(NormWants, scale).FIELD(NormWants, shift);
  Binder<Wants>(m, "Wants", "which gradients to compute, per input")
      .FIELD(Wants, U).FIELD(Wants, W_h).FIELD(Wants, bias).FIELD(Wants, tap).FIELD(Wants, h0)
      .FIELD(Wants, norm_h).FIELD(Wants, norm_x).FIELD(Wants, norm_c);
  Binder<NormGrads>(m, "NormGrads", "a slot's parameter gradients")
      .FIELD(NormGrads, gamma).FIELD(NormGrads, beta).FIELD(NormGrads, scale).FIELD(NormGrads, shift);
  Binder<Grads>(m, "Grads", "the gradients, per input")
      .FIELD(Grads, U).FIELD(Grads, W_h).FIELD(Grads, bias).FIELD(Grads, tap).FIELD(Grads, h0)
      .FIELD(Grads, norm_h).FIELD(Grads, norm_x).FIELD(Grads, norm_c);
  m.def("recurrence_forward", &recurrence_forward, py::arg("inputs"),
        "a whole RNN/LSTM recurrence with its norm, forward: Inputs -> Forward");
  m.def("recurrence_backward", &recurrence_backward, py::arg("inputs"), py::arg("saved"), py::arg("grad"),
        py::arg("want"), "its backward through time: (Inputs, Saved, OutputGrads, Wants) -> Grads");
}
