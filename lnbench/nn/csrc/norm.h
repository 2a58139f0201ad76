// lnbench: the one LayerNorm (and RMSNorm) over a row in C++, shared by layernorm.cpp (the
// module's kernel, lnbench.nn.layernorm.LayerNorm) and recurrence.cpp (the fused recurrence's
// norm_h, norm_x and norm_c): one formula and one rounding for every C++ path.
//
// Forward over a row x of D values (Ba et al. 2016, eq. 4; RMSNorm: Zhang & Sennrich 2019, eq. 4,
// the mean taken as 0):
//   mean = sum_j x_j / D,  var = sum_j (x_j - mean)^2 / D   (two-pass, the biased variance)
//   rstd = 1 / sqrt(var + eps),  x_hat = (x - mean) * rstd,  y = gamma * x_hat + beta
// Summation (measured against float64 on rows of 20, 64 and 256 floats: within 5e-7 of it for
// N(0, 1) rows, rows at a mean of 1e4, and rows of entries ~1e20; sums in double lanes 3e-7, at
// 1.3x the forward's time): both sums run in fixed lanes of the scalar type (16
// floats or 8 doubles: one 64-byte vector of GCC's vector extension, which AVX2 runs as two halves
// and SSE as four quarters with the same lanes; no -ffast-math, no contraction), folded in double
// in a fixed order, so one row gives the same bits on every CPU and in both kernels:
//   - the mean sums x_j - x_0 (x_0 the row's first entry), so that the lanes sum the deviations,
//     not a common offset (a row at 1e4 loses no digits);
//   - the variance sums c_j^2 with c_j = (x_j - m) - dm, m the mean rounded to the scalar type
//     and dm the rest: the centred values are those x_hat is made of. A float square overflows
//     once an entry is ~1.8e19 from the mean: a sum that is not finite is summed again in double
//     (squares to ~1e308), so such rows get the variance they have, not infinity;
//   - x_hat = c * rstd, y = gamma * x_hat + beta in the scalar type.
// Backward, with g = gamma * dy (lnbench/nn/layernorm.py, NormalizeAffine, and numpy_layernorm.py):
//   dx = rstd * (g - mean_j(g) - x_hat * mean_j(g * x_hat)),  dgamma = sum(dy * x_hat),  dbeta = sum(dy)
// The two row means are dot products of bounded factors (|x_hat| <= sqrt(D)), summed in the same
// lanes of the scalar type and folded in double; dx in the scalar type.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace lnbench {

template <typename T> struct Lanes;
template <> struct Lanes<float> { static constexpr int n = 16; typedef float V __attribute__((vector_size(64))); };
template <> struct Lanes<double> { static constexpr int n = 8; typedef double V __attribute__((vector_size(64))); };
template <typename T> using Vec = typename Lanes<T>::V;

template <typename T>
inline Vec<T> load_lanes(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <typename T>
inline double fold(const Vec<T>& a) {  // pairwise, in a fixed order, in double
  constexpr int n = Lanes<T>::n;
  double s[n];
  for (int l = 0; l < n; ++l) s[l] = (double)a[l];
  for (int w = n / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) s[l] = s[l] + s[l + w];
  return s[0];
}

// sum_j (x_j - x0)
template <typename T>
inline double row_shifted_sum(const T* __restrict__ x, T x0, int64_t D) {
  constexpr int L = Lanes<T>::n;
  Vec<T> a = {};
  int64_t j = 0;
  for (; j + L <= D; j += L) a += load_lanes(x + j) - x0;
  double s = fold<T>(a);
  for (; j < D; ++j) s += (double)(x[j] - x0);
  return s;
}

// sum_j ((x_j - m) - dm)^2; in double where the lanes' sum overflows the scalar type
template <typename T>
inline double row_centred_sumsq(const T* __restrict__ x, T m, T dm, double mean, int64_t D) {
  constexpr int L = Lanes<T>::n;
  Vec<T> a = {};
  int64_t j = 0;
  for (; j + L <= D; j += L) {
    const Vec<T> c = (load_lanes(x + j) - m) - dm;
    a += c * c;
  }
  double s = fold<T>(a);
  for (; j < D; ++j) {
    const double c = (x[j] - m) - dm;
    s += c * c;
  }
  if (!std::isfinite(s)) {  // an entry ~1.8e19 from the mean in float: its square overflowed
    s = 0;
    for (j = 0; j < D; ++j) {
      const double c = (double)x[j] - mean;
      s += c * c;
    }
  }
  return s;
}

// sum_j dy_j gamma_j and sum_j dy_j gamma_j x_hat_j
template <typename T>
inline void row_dots(const T* __restrict__ dy, const T* __restrict__ gamma, const T* __restrict__ xh, int64_t D,
                     double& sum_g, double& sum_gx) {
  constexpr int L = Lanes<T>::n;
  Vec<T> a = {}, b = {};
  int64_t j = 0;
  for (; j + L <= D; j += L) {
    const Vec<T> g = load_lanes(dy + j) * load_lanes(gamma + j);
    a += g;
    b += g * load_lanes(xh + j);
  }
  sum_g = fold<T>(a);
  sum_gx = fold<T>(b);
  for (; j < D; ++j) {
    const double g = (double)dy[j] * gamma[j];
    sum_g += g;
    sum_gx += g * xh[j];
  }
}

// LayerNorm (rms = false) or RMSNorm (rms = true) of rows of D features that share one gamma and
// beta (beta may be null: no shift), as haste's LayerNorm is one class for every cell.
template <typename T>
struct RowNorm {
  const T* gamma;
  const T* beta;
  int64_t D;
  double eps;
  bool rms;

  // a row's mean (RMSNorm: 0), and it split into the scalar type m and the rest dm
  void mean_of(const T* __restrict__ xi, double& mean, T& m, T& dm) const {
    mean = rms || D == 0 ? 0.0 : xi[0] + row_shifted_sum(xi, xi[0], D) / D;
    m = (T)mean, dm = (T)(mean - m);
  }

  // rows x (n, D) -> y, x_hat (n, D) and rstd (n)
  void forward(const T* x, T* y, T* x_hat, T* rstd, int64_t n) const {
    for (int64_t r = 0; r < n; ++r) {
      const T* __restrict__ xi = x + r * D;
      double mean;
      T m, dm;
      mean_of(xi, mean, m, dm);
      const double var = row_centred_sumsq(xi, m, dm, mean, D) / D;  // RMSNorm: the mean square
      const T rr = (T)(1.0 / std::sqrt(var + eps));
      rstd[r] = rr;
      T* __restrict__ xh = x_hat + r * D;
      T* __restrict__ yr = y + r * D;
      const T* __restrict__ g = gamma;
      for (int64_t j = 0; j < D; ++j) xh[j] = ((xi[j] - m) - dm) * rr;
      if (beta) {
        const T* __restrict__ b = beta;
        for (int64_t j = 0; j < D; ++j) yr[j] = xh[j] * g[j] + b[j];
      } else {
        for (int64_t j = 0; j < D; ++j) yr[j] = xh[j] * g[j];
      }
    }
  }

  // x_hat (n, D) of rows x (n, D) from their rstd (n), the bits forward wrote: the mean taken again
  // the same way (a backward that did not keep x_hat recomputes it from the norm's input)
  void recompute_x_hat(const T* x, const T* rstd, T* x_hat, int64_t n) const {
    for (int64_t r = 0; r < n; ++r) {
      const T* __restrict__ xi = x + r * D;
      double mean;
      T m, dm;
      mean_of(xi, mean, m, dm);
      const T rr = rstd[r];
      T* __restrict__ xh = x_hat + r * D;
      for (int64_t j = 0; j < D; ++j) xh[j] = ((xi[j] - m) - dm) * rr;
    }
  }

  // dy (n, D) -> dx; dgamma and dbeta (either may be null) accumulated over the rows in T
  void backward(const T* dy, const T* x_hat, const T* rstd, T* dx, T* dgamma, T* dbeta, int64_t n) const {
    const T* __restrict__ g = gamma;
    for (int64_t r = 0; r < n; ++r) {
      const T* __restrict__ dyr = dy + r * D;
      const T* __restrict__ xh = x_hat + r * D;
      double sum_g, sum_gx;
      row_dots(dyr, g, xh, D, sum_g, sum_gx);
      const T a = (T)(rms ? 0.0 : sum_g / D), c = (T)(sum_gx / D), rr = rstd[r];
      T* __restrict__ dxr = dx + r * D;
      for (int64_t j = 0; j < D; ++j) dxr[j] = rr * ((dyr[j] * g[j] - a) - xh[j] * c);
      if (dgamma) {
        T* __restrict__ dg = dgamma;
        for (int64_t j = 0; j < D; ++j) dg[j] += dyr[j] * xh[j];
      }
      if (dbeta) {
        T* __restrict__ db = dbeta;
        for (int64_t j = 0; j < D; ++j) db[j] += dyr[j];
      }
    }
  }
};

}  // namespace lnbench
