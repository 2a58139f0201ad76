// lnbench: a whole recurrence (the tanh RNN or the LSTM, with its norm) as one autograd node:
// the forward over T timesteps and the backward through time, written by hand. Python calls
// recurrence_forward once per sequence and recurrence_backward once per backward
// (lnbench/nn/fused.py, the autograd Function); the equations are those of lnbench/nn/rnn.py and
// lnbench/nn/lstm.py, whose step-by-step Python code is the reference the tests compare with.
//
// Layout: time-major, the member axis S of a seed ensemble next (S = 1 for one model), then the
// batch B: every per-step slab is S*B contiguous rows; row r belongs to member r / B.
//   U     (S, T, B, G)  the input terms (member-major, as one matrix product per member gives them), computed for every timestep before the recurrence:
//                       W_x x_t; the joint RNN adds it inside norm_h, the separate RNN and the LSTM
//                       add norm_x of it after
//   W_h   (S, G, H)     the (effective) recurrent weights; G = H (RNN) or 4H (LSTM, gates i f o g)
//   bias  (S, G)        added after the norm (absent: a norm with a beta is the joint RNN's bias)
//   tap   (T, S, B, H)  optional, added to h_t: its gradient is the total dL/dh_t (the probes)
// One step (inner = the joint RNN, eq. 4 of Ba et al. 2016):
//   R = h_{t-1} W_h^T;  pre = norm_h(R + U_t) + bias          (inner)
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
// Row statistics are summed in fixed vector lanes of the scalar type and the lanes folded in
// double (row_sum below); the variance is two-pass, as the LayerNorm kernel's. The backward is
// the x-hat form of lnbench/nn/layernorm.py (NormalizeAffine) per norm, the derivatives of tanh
// and sigmoid from the saved activations, and dW_h = sum_t dR_t^T h_{t-1} after the loop.
// Parameter gradients are summed over a timestep's rows in the scalar type and over the
// timesteps in double.
#include <torch/extension.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

using torch::Tensor;
using OptT = std::optional<Tensor>;

enum Mode : int64_t { NONE = 0, LAYER = 1, RMS = 2, BATCH = 3, AFFINE = 4 };

static bool has(const OptT& t) { return t.has_value() && t->defined() && t->numel() > 0; }

template <typename T>
static const T* cptr(const OptT& t) { return has(t) ? t->data_ptr<T>() : nullptr; }

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

// Sums over a row in fixed lanes of the scalar type (16 floats or 8 doubles: one 64-byte vector,
// GCC's vector extension, which AVX2 runs as two halves and SSE as four quarters with the same
// lanes), folded in double in a fixed order: the same sum whatever the vector width (no
// -ffast-math, no contraction: -ffp-contract=off). A float row of 256 sums 16 values per lane in
// float (~1e-7 relative), then the lanes in double; in double it is double throughout.
template <typename T> struct Lanes;
template <> struct Lanes<float> { static constexpr int n = 16; typedef float V __attribute__((vector_size(64))); };
template <> struct Lanes<double> { static constexpr int n = 8; typedef double V __attribute__((vector_size(64))); };
template <typename T> using Vec = typename Lanes<T>::V;

template <typename T>
static inline Vec<T> vload(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <typename T>
static inline double fold(const Vec<T>& a) {  // pairwise, in a fixed order
  constexpr int n = Lanes<T>::n;
  double s[n];
  for (int l = 0; l < n; ++l) s[l] = (double)a[l];
  for (int w = n / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) s[l] = s[l] + s[l + w];
  return s[0];
}

template <typename T>
static inline double row_sum(const T* __restrict__ x, int64_t D) {
  constexpr int L = Lanes<T>::n;
  Vec<T> a = {};
  int64_t j = 0;
  for (; j + L <= D; j += L) a += vload(x + j);
  double s = fold<T>(a);
  for (; j < D; ++j) s += x[j];
  return s;
}

template <typename T>
static inline double row_sumsq(const T* __restrict__ x, double mean, int64_t D) {
  constexpr int L = Lanes<T>::n;
  const T m = (T)mean;
  Vec<T> a = {};
  int64_t j = 0;
  for (; j + L <= D; j += L) {
    const Vec<T> c = vload(x + j) - m;
    a += c * c;
  }
  double s = fold<T>(a);
  for (; j < D; ++j) {
    const double c = (double)x[j] - mean;
    s += c * c;
  }
  return s;
}

// sum_j dy_j gamma_j and sum_j dy_j gamma_j xh_j
template <typename T>
static inline void row_dots(const T* __restrict__ dy, const T* __restrict__ g, const T* __restrict__ xh, int64_t D,
                            double& mg, double& mgx) {
  constexpr int L = Lanes<T>::n;
  Vec<T> a = {}, b = {};
  int64_t j = 0;
  for (; j + L <= D; j += L) {
    const Vec<T> gj = vload(dy + j) * vload(g + j);
    a += gj;
    b += gj * vload(xh + j);
  }
  mg = fold<T>(a);
  mgx = fold<T>(b);
  for (; j < D; ++j) {
    const double gj = (double)dy[j] * g[j];
    mg += gj;
    mgx += gj * xh[j];
  }
}

// The per-row statistics' size of a norm per timestep (rstd, or for BATCH rstd per group and feature).
static int64_t rs_size(int64_t mode, int64_t S, int64_t B, int64_t D, int64_t group) {
  if (mode == LAYER || mode == RMS) return S * B;
  if (mode == BATCH) return S * (B / group) * D;
  return 0;
}

template <typename T>
static void norm_fwd(int64_t mode, const T* x, T* y, T* xh, T* rs, T* bm, T* bv, const T* gamma, const T* beta,
                     const T* scale, const T* shift, int64_t S, int64_t B, int64_t D, int64_t group, double eps) {
  const int64_t N = S * B;
  if (mode == AFFINE) {
    for (int64_t r = 0; r < N; ++r) {
      const T* sc = scale + (r / B) * D;
      const T* sh = shift + (r / B) * D;
      const T* xi = x + r * D;
      for (int64_t j = 0; j < D; ++j) {
        xh[r * D + j] = xi[j];  // the input, for dscale
        y[r * D + j] = xi[j] * sc[j] + sh[j];
      }
    }
  } else if (mode == LAYER || mode == RMS) {
    for (int64_t r = 0; r < N; ++r) {
      const T* __restrict__ xi = x + r * D;
      const T* __restrict__ g = gamma + (r / B) * D;
      const T* __restrict__ b = beta ? beta + (r / B) * D : nullptr;
      const double mean = mode == LAYER ? row_sum(xi, D) / D : 0.0;
      const double var = row_sumsq(xi, mean, D) / D;  // two-pass (LAYER); the mean square (RMS)
      const T rr = (T)(1.0 / std::sqrt(var + eps));
      const T m = (T)mean;
      rs[r] = rr;
      T* __restrict__ xhr = xh + r * D;
      T* __restrict__ yr = y + r * D;
      for (int64_t j = 0; j < D; ++j) xhr[j] = (xi[j] - m) * rr;
      if (b) {
        for (int64_t j = 0; j < D; ++j) yr[j] = xhr[j] * g[j] + b[j];
      } else {
        for (int64_t j = 0; j < D; ++j) yr[j] = xhr[j] * g[j];
      }
    }
  } else if (mode == BATCH) {
    const int64_t ng = B / group;
    std::vector<T> mean(D), var(D), mt(D), rt(D);  // per feature over the group's rows, in T
    for (int64_t s = 0; s < S; ++s) {
      const T* __restrict__ g = gamma + s * D;
      const T* __restrict__ b = beta ? beta + s * D : nullptr;
      for (int64_t k = 0; k < ng; ++k) {
        const int64_t r0 = s * B + k * group;
        T* __restrict__ mp = mean.data();
        T* __restrict__ vp = var.data();
        std::fill(mp, mp + D, (T)0);
        std::fill(vp, vp + D, (T)0);
        for (int64_t q = 0; q < group; ++q) {
          const T* __restrict__ xr = x + (r0 + q) * D;
          for (int64_t j = 0; j < D; ++j) mp[j] += xr[j];
        }
        for (int64_t j = 0; j < D; ++j) mp[j] /= (T)group;
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
          rt[j] = (T)(1.0 / std::sqrt((double)vp[j] + eps));
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

// dx from dy (dx may alias nothing; NONE copies), and the parameters' gradients accumulated.
template <typename T>
static void norm_bwd(int64_t mode, const T* dy, const T* xh, const T* rs, T* dx, const T* gamma, const T* scale,
                     double* dgamma, double* dbeta, double* dscale, double* dshift, int64_t S, int64_t B, int64_t D,
                     int64_t group) {
  const int64_t N = S * B;
  if (mode == NONE) {
    std::copy(dy, dy + N * D, dx);
  } else if (mode == AFFINE) {
    for (int64_t r = 0; r < N; ++r) {
      const int64_t p = (r / B) * D;
      for (int64_t j = 0; j < D; ++j) {
        const T d = dy[r * D + j];
        dx[r * D + j] = d * scale[p + j];
        if (dscale) dscale[p + j] += (double)d * xh[r * D + j];
        if (dshift) dshift[p + j] += d;
      }
    }
  } else if (mode == LAYER || mode == RMS) {
    // dgamma and dbeta summed over a member's B rows in T, then added to the double totals
    std::vector<T> sg(dgamma ? D : 0), sb(dbeta ? D : 0);
    T* __restrict__ tg = sg.data();
    T* __restrict__ tb = sb.data();
    for (int64_t s = 0; s < S; ++s) {
      const int64_t p = s * D;
      const T* __restrict__ g = gamma + p;
      std::fill(sg.begin(), sg.end(), (T)0);
      std::fill(sb.begin(), sb.end(), (T)0);
      for (int64_t r = s * B; r < (s + 1) * B; ++r) {
        const T* __restrict__ dyi = dy + r * D;
        const T* __restrict__ xhi = xh + r * D;
        double mg, mgx;
        row_dots(dyi, g, xhi, D, mg, mgx);
        const T a = (T)(mode == LAYER ? mg / D : 0.0), c = (T)(mgx / D), rr = rs[r];
        T* __restrict__ dxi = dx + r * D;
        for (int64_t j = 0; j < D; ++j) dxi[j] = rr * ((dyi[j] * g[j] - a) - xhi[j] * c);
        if (dgamma)
          for (int64_t j = 0; j < D; ++j) tg[j] += dyi[j] * xhi[j];
        if (dbeta)
          for (int64_t j = 0; j < D; ++j) tb[j] += dyi[j];
      }
      if (dgamma)
        for (int64_t j = 0; j < D; ++j) dgamma[p + j] += tg[j];
      if (dbeta)
        for (int64_t j = 0; j < D; ++j) dbeta[p + j] += tb[j];
    }
  } else if (mode == BATCH) {
    const int64_t ng = B / group;
    std::vector<T> mg(D), mgx(D), a(D), c(D), sg(D), sb(D);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t p = s * D;
      const T* __restrict__ g = gamma + p;
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

// Returns {H, ACT, C, TC, XH_h, RS_h, XH_c, RS_c, BM_h, BV_h, BM_c, BV_c, XH_x, RS_x, BM_x, BV_x, SAT};
// undefined where absent. SAT (S, B): with count_saturated, the saturated units of each example.
//   H (T,S,B,H): h_1 .. h_T;  ACT (T, S*B*G): the LSTM's gates after their nonlinearities, per
//   timestep in two blocks: sigmoid of i f o of every row (S*B, 3H), then tanh of g (S*B, H); the
//   RNN's tanh(pre) (T,S,B,H);  C, TC (T,S,B,H): the LSTM's c_t and tanh(norm_c(c_t));  XH_*, RS_*: the
//   norms' x-hat and rstd;  BM_*, BV_* (T,S,B/group,D): BATCH's means and biased variances.
std::vector<Tensor> recurrence_forward(bool lstm, bool inner, int64_t mode_h, int64_t mode_c, int64_t mode_x,
                                       int64_t group, double eps_h, double eps_c, double eps_x, Tensor U, Tensor W_h,
                                       OptT bias, OptT gamma_h, OptT beta_h, OptT scale_h, OptT shift_h, OptT gamma_c,
                                       OptT beta_c, OptT scale_c, OptT shift_c, OptT tap, OptT gamma_x, OptT beta_x,
                                       OptT scale_x, OptT shift_x, bool count_saturated) {
  TORCH_CHECK(U.dim() == 4 && W_h.dim() == 3, "recurrence: U (S, T, B, G) and W_h (S, G, H)");
  U = U.contiguous();
  W_h = W_h.contiguous();
  const int64_t S = U.size(0), T = U.size(1), B = U.size(2), G = U.size(3), H = W_h.size(2);
  TORCH_CHECK(W_h.size(0) == S && W_h.size(1) == G && G == (lstm ? 4 * H : H), "recurrence: W_h must be (S, G, H)");
  TORCH_CHECK(!inner || !lstm, "recurrence: the LSTM has no joint placement");
  TORCH_CHECK(!inner || mode_x == NONE, "recurrence: the joint placement has no norm_x");
  TORCH_CHECK(group >= 1 && B % group == 0, "recurrence: a batch of ", B, " is not a whole number of groups of ", group);
  const int64_t ng = B / group;
  auto o = U.options();
  Tensor Hs = torch::empty({T, S, B, H}, o);
  Tensor ACT = (lstm || has(tap)) ? torch::empty({T, S, B, G}, o) : Tensor();
  Tensor C = maybe_empty(lstm, {T, S, B, H}, o), TC = maybe_empty(lstm, {T, S, B, H}, o);
  Tensor XH_h = maybe_empty(mode_h != NONE, {T, S, B, G}, o);
  Tensor RS_h = maybe_empty(rs_size(mode_h, S, B, G, group) > 0, {T, rs_size(mode_h, S, B, G, group)}, o);
  Tensor XH_c = maybe_empty(lstm && mode_c != NONE, {T, S, B, H}, o);
  Tensor RS_c = maybe_empty(lstm && rs_size(mode_c, S, B, H, group) > 0, {T, rs_size(mode_c, S, B, H, group)}, o);
  Tensor BM_h = maybe_empty(mode_h == BATCH, {T, S, ng, G}, o), BV_h = maybe_empty(mode_h == BATCH, {T, S, ng, G}, o);
  Tensor BM_c = maybe_empty(lstm && mode_c == BATCH, {T, S, ng, H}, o);
  Tensor BV_c = maybe_empty(lstm && mode_c == BATCH, {T, S, ng, H}, o);
  Tensor XH_x = maybe_empty(mode_x != NONE, {T, S, B, G}, o);
  Tensor RS_x = maybe_empty(rs_size(mode_x, S, B, G, group) > 0, {T, rs_size(mode_x, S, B, G, group)}, o);
  Tensor BM_x = maybe_empty(mode_x == BATCH, {T, S, ng, G}, o), BV_x = maybe_empty(mode_x == BATCH, {T, S, ng, G}, o);
  Tensor XU = torch::empty({S, B, G}, o), UX = torch::empty({S, B, G}, o);  // U[:, t] as rows, and norm_x of it
  Tensor R = torch::empty({S, B, G}, o), A = torch::empty({S, B, G}, o), P = torch::empty({S, B, G}, o);
  Tensor PRE = torch::empty({S, B, G}, o), NC = torch::empty({S, B, H}, o);
  Tensor W_hT = W_h.transpose(1, 2);
  // the probes' saturated units per example, over every timestep: |tanh| > 0.99, the LSTM's
  // sigmoids on tanh's scale |2 sigmoid - 1| > 0.99 (lnbench/training/probes.py)
  Tensor SAT = count_saturated ? torch::zeros({S, B}, o) : Tensor();
  Tensor tapc = has(tap) ? tap->contiguous() : Tensor();
  const int64_t N = S * B;
  AT_DISPATCH_FLOATING_TYPES(U.scalar_type(), "recurrence_forward", [&] {
    using T_ = scalar_t;
    const T_* bias_p = cptr<T_>(bias);
    const T_* gh = cptr<T_>(gamma_h);
    const T_* bh = cptr<T_>(beta_h);
    const T_* gc = cptr<T_>(gamma_c);
    const T_* bc = cptr<T_>(beta_c);
    const T_* tap_p = tapc.defined() ? tapc.data_ptr<T_>() : nullptr;
    const T_* gx = cptr<T_>(gamma_x);
    const T_* bx = cptr<T_>(beta_x);
    for (int64_t t = 0; t < T; ++t) {
      const T_* U_p = U.data_ptr<T_>();
      auto urow_raw = [&](int64_t row) { return U_p + (((row / B) * T + t) * B + row % B) * G; };  // U[s, t, b]
      if (mode_x != NONE) {  // norm_x(U[:, t]): its rows gathered, then normalized like norm_h
        T_* xu = XU.data_ptr<T_>();
        for (int64_t m = 0; m < S; ++m) std::copy(urow_raw(m * B), urow_raw(m * B) + B * G, xu + m * B * G);
        norm_fwd<T_>(mode_x, xu, UX.data_ptr<T_>(), XH_x.data_ptr<T_>() + t * N * G,
                     RS_x.numel() ? RS_x.data_ptr<T_>() + t * RS_x.size(1) : nullptr,
                     BM_x.defined() ? BM_x.data_ptr<T_>() + t * S * ng * G : nullptr,
                     BV_x.defined() ? BV_x.data_ptr<T_>() + t * S * ng * G : nullptr, gx, bx,
                     has(scale_x) ? scale_x->data_ptr<T_>() + t * S * G : nullptr,
                     has(shift_x) ? shift_x->data_ptr<T_>() + t * S * G : nullptr, S, B, G, group, eps_x);
      }
      const T_* ux_p = UX.data_ptr<T_>();
      auto urow = [&](int64_t row) { return mode_x != NONE ? ux_p + row * G : urow_raw(row); };
      if (t == 0) {
        R.zero_();  // h_0 = 0
      } else {
        at::bmm_out(R, Hs[t - 1], W_hT);  // (S, B, H) x (S, H, G)
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
        norm_fwd<T_>(mode_h, x_in, P.data_ptr<T_>(), XH_h.data_ptr<T_>() + t * N * G,
                     RS_h.numel() ? RS_h.data_ptr<T_>() + t * RS_h.size(1) : nullptr,
                     BM_h.defined() ? BM_h.data_ptr<T_>() + t * S * ng * G : nullptr,
                     BV_h.defined() ? BV_h.data_ptr<T_>() + t * S * ng * G : nullptr, gh, bh,
                     has(scale_h) ? scale_h->data_ptr<T_>() + t * S * G : nullptr,
                     has(shift_h) ? shift_h->data_ptr<T_>() + t * S * G : nullptr, S, B, G, group, eps_h);
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
        if (count_saturated) {
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
        norm_fwd<T_>(mode_c, c, NC.data_ptr<T_>(), XH_c.data_ptr<T_>() + t * N * H,
                     RS_c.numel() ? RS_c.data_ptr<T_>() + t * RS_c.size(1) : nullptr,
                     BM_c.defined() ? BM_c.data_ptr<T_>() + t * S * ng * H : nullptr,
                     BV_c.defined() ? BV_c.data_ptr<T_>() + t * S * ng * H : nullptr, gc, bc,
                     has(scale_c) ? scale_c->data_ptr<T_>() + t * S * H : nullptr,
                     has(shift_c) ? shift_c->data_ptr<T_>() + t * S * H : nullptr, S, B, H, group, eps_c);
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
      if (count_saturated) {
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
  if (!lstm && !ACT.defined()) ACT = Hs;  // the RNN without a tap: h_t is tanh(pre)
  return {Hs, ACT, C, TC, XH_h, RS_h, XH_c, RS_c, BM_h, BV_h, BM_c, BV_c, XH_x, RS_x, BM_x, BV_x, SAT};
}

static Tensor to_tensor(const std::vector<double>& v, at::IntArrayRef sizes, const at::TensorOptions& o) {
  auto out = torch::empty(sizes, o);
  AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), "to_tensor", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = (scalar_t)v[i];
  });
  return out;
}

// Returns {dU (S, T, B, G), dW_h, dbias, dgamma_h, dbeta_h, dscale_h, dshift_h, dgamma_c, dbeta_c, dscale_c,
// dshift_c, dtap, dgamma_x, dbeta_x, dscale_x, dshift_x}: undefined where the input is absent or
// wants no gradient (`want`, 16 flags in that order, from the autograd Function's needs_input_grad).
std::vector<Tensor> recurrence_backward(bool lstm, bool inner, int64_t mode_h, int64_t mode_c, int64_t mode_x,
                                        int64_t group, OptT gH, OptT g_last, Tensor W_h, OptT gamma_h, OptT scale_h,
                                        OptT gamma_c, OptT scale_c, OptT gamma_x, OptT scale_x,
                                        std::vector<Tensor> saved, std::vector<bool> want) {
  TORCH_CHECK(saved.size() == 16 && want.size() == 16, "recurrence_backward: 16 saved tensors and 16 flags");
  Tensor XH_x = saved[12], RS_x = saved[13];
  Tensor Hs = saved[0], ACT = saved[1], C = saved[2], TC = saved[3], XH_h = saved[4], RS_h = saved[5];
  Tensor XH_c = saved[6], RS_c = saved[7];
  W_h = W_h.contiguous();
  const int64_t T = Hs.size(0), S = Hs.size(1), B = Hs.size(2), H = Hs.size(3), G = W_h.size(1);
  const int64_t N = S * B;
  auto o = Hs.options();
  Tensor gHc = has(gH) ? gH->contiguous() : Tensor();
  Tensor gLc = has(g_last) ? g_last->contiguous() : Tensor();  // the gradient of h_T, given on its own
  Tensor dU = (want[0] || want[12] || want[13] || want[14] || want[15]) ? torch::empty({S, T, B, G}, o) : Tensor();
  Tensor dR_all = want[1] ? torch::empty({S, T, B, G}, o) : Tensor(), dR_t = torch::empty({S, B, G}, o);  // member-major, for dW
  Tensor dh = torch::zeros({S, B, H}, o), dh_rec = torch::zeros({S, B, H}, o);
  Tensor dc = torch::zeros({S, B, H}, o), dNC = torch::empty({S, B, H}, o), dCn = torch::empty({S, B, H}, o);
  Tensor dPRE = torch::empty({S, B, G}, o), dA = torch::empty({S, B, G}, o);
  Tensor dtap = want[11] ? torch::empty({T, S, B, H}, o) : Tensor();
  std::vector<double> dbias(S * G, 0.0), dgh(S * G, 0.0), dbh(S * G, 0.0), dgc(S * H, 0.0), dbc(S * H, 0.0);
  std::vector<double> dsch(T * S * G, 0.0), dshh(T * S * G, 0.0), dscc(T * S * H, 0.0), dshc(T * S * H, 0.0);
  std::vector<double> dgx(S * G, 0.0), dbx(S * G, 0.0), dscx(T * S * G, 0.0), dshx(T * S * G, 0.0);
  Tensor dUX = torch::empty({S, B, G}, o);
  const bool has_tap = want[11];
  AT_DISPATCH_FLOATING_TYPES(Hs.scalar_type(), "recurrence_backward", [&] {
    using T_ = scalar_t;
    const T_* gh = cptr<T_>(gamma_h);
    const T_* gc = cptr<T_>(gamma_c);
    const T_* gx = cptr<T_>(gamma_x);
    std::vector<T_> sbias(G);
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
      if (has_tap) std::copy(d, d + N * H, dtap.data_ptr<T_>() + t * N * H);
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
          norm_bwd<T_>(mode_c, dnc, XH_c.data_ptr<T_>() + t * N * H,
                       RS_c.numel() ? RS_c.data_ptr<T_>() + t * RS_c.size(1) : nullptr, dCn.data_ptr<T_>(), gc,
                       has(scale_c) ? scale_c->data_ptr<T_>() + t * S * H : nullptr, want[7] ? dgc.data() : nullptr,
                       want[8] ? dbc.data() : nullptr, want[9] ? dscc.data() + t * S * H : nullptr,
                       want[10] ? dshc.data() + t * S * H : nullptr, S, B, H, group);
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
      if (want[2])  // summed over a member's rows in T, then added to the double total
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
      const bool want_dU = want[0] || want[12] || want[13] || want[14] || want[15];
      if (!want_dU || inner) {
        // no input-side gradient wanted (the probes: only dL/dh_t), or it is dR below (joint)
      } else if (mode_x == NONE) {
        to_dU(dp);
      } else {  // through norm_x
        norm_bwd<T_>(mode_x, dp, XH_x.data_ptr<T_>() + t * N * G,
                     RS_x.numel() ? RS_x.data_ptr<T_>() + t * RS_x.size(1) : nullptr, dUX.data_ptr<T_>(), gx,
                     has(scale_x) ? scale_x->data_ptr<T_>() + t * S * G : nullptr, want[12] ? dgx.data() : nullptr,
                     want[13] ? dbx.data() : nullptr, want[14] ? dscx.data() + t * S * G : nullptr,
                     want[15] ? dshx.data() + t * S * G : nullptr, S, B, G, group);
        to_dU(dUX.data_ptr<T_>());
      }
      norm_bwd<T_>(mode_h, dp, mode_h != NONE ? XH_h.data_ptr<T_>() + t * N * G : nullptr,
                   RS_h.numel() ? RS_h.data_ptr<T_>() + t * RS_h.size(1) : nullptr, dr, gh,
                   has(scale_h) ? scale_h->data_ptr<T_>() + t * S * G : nullptr, want[3] ? dgh.data() : nullptr,
                   want[4] ? dbh.data() : nullptr, want[5] ? dsch.data() + t * S * G : nullptr,
                   want[6] ? dshh.data() + t * S * G : nullptr, S, B, G, group);
      if (inner && want[0]) to_dU(dr);
      if (t > 0) {
        at::bmm_out(dh_rec, dR_t, W_h);  // (S, B, G) x (S, G, H)
        if (want[1])
          for (int64_t m = 0; m < S; ++m)
          std::copy(dr + m * B * G, dr + (m + 1) * B * G, dR_all.data_ptr<T_>() + (m * T + t) * B * G);
      }
    }
  });
  // dW_h = sum_{t >= 1} dR_t^T h_{t-1}: one matrix product over the (T - 1) B rows of each member
  Tensor dW = !want[1] ? Tensor()
              : T > 1 ? at::bmm(dR_all.narrow(1, 1, T - 1).reshape({S, (T - 1) * B, G}).transpose(1, 2),
                              Hs.narrow(0, 0, T - 1).transpose(0, 1).reshape({S, (T - 1) * B, H}))
                    : torch::zeros({S, G, H}, o);
  auto opt = [&](bool w, const std::vector<double>& v, at::IntArrayRef sizes) {
    return w ? to_tensor(v, sizes, o) : Tensor();
  };
  return {dU,
          dW,
          opt(want[2], dbias, {S, G}),
          opt(want[3], dgh, {S, G}),
          opt(want[4], dbh, {S, G}),
          opt(want[5], dsch, {T, S, G}),
          opt(want[6], dshh, {T, S, G}),
          opt(want[7], dgc, {S, H}),
          opt(want[8], dbc, {S, H}),
          opt(want[9], dscc, {T, S, H}),
          opt(want[10], dshc, {T, S, H}),
          dtap,
          opt(want[12], dgx, {S, G}),
          opt(want[13], dbx, {S, G}),
          opt(want[14], dscx, {T, S, G}),
          opt(want[15], dshx, {T, S, G})};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("recurrence_forward", &recurrence_forward, "a whole RNN/LSTM recurrence with its norm, forward");
  m.def("recurrence_backward", &recurrence_backward, "its backward through time");
}
