// lnbench's recurrence kernel (recurrence.cpp, which includes every part once, in order): exp, sigmoid and tanh, vectorized (the recurrence's activations).
#pragma once

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
