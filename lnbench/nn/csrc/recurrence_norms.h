// lnbench's recurrence kernel (recurrence.cpp, which includes every part once, in order): the norms inside the loops: each slot's forward, x-hat and backward per timestep.
#pragma once

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
