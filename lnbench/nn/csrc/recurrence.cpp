// lnbench: a whole recurrence (the tanh RNN or the LSTM, with its norm) as one autograd node:
// the forward over T timesteps and the backward through time, written by hand. Python calls
// recurrence_forward once per sequence and recurrence_backward once per backward
// (lnbench/nn/fused.py, the autograd Function); the equations are those of lnbench/nn/rnn.py and
// lnbench/nn/lstm.py, whose step-by-step Python code is the reference the tests compare with.
//
// Layout: time-major, the member axis S of a seed ensemble next (S = 1 for one model), then the
// batch B: every per-step slab is S*B contiguous rows; row r belongs to member r / B.
//   U     (T, S, B, G)  the input terms, computed for every timestep before the recurrence:
//                       joint RNN: W_xh x_t (added inside the norm); separate RNN and LSTM:
//                       norm_x(W_x x_t) (added after the norm)
//   W_h   (S, G, H)     the (effective) recurrent weights; G = H (RNN) or 4H (LSTM, gates i f o g)
//   bias  (S, G)        added after the norm (absent: a norm with a beta is the joint RNN's bias)
//   tap   (T, S, B, H)  optional, added to h_t: its gradient is the total dL/dh_t (the probes)
// One step (inner = the joint RNN, eq. 4 of Ba et al. 2016):
//   R = h_{t-1} W_h^T;  pre = norm_h(R + U_t) + bias          (inner)
//                       pre = norm_h(R) + U_t + bias          (otherwise)
//   RNN:  h_t = tanh(pre)
//   LSTM: i, f, o = sigmoid(pre_i, pre_f, pre_o), g = tanh(pre_g)
//         c_t = f c_{t-1} + i g,  h_t = o tanh(norm_c(c_t))
// A norm (norm_h over G, norm_c over H) is one of
//   NONE    the identity
//   LAYER   y = gamma (x - mean) rstd + beta over the row (Ba et al. 2016, eq. 4)
//   RMS     y = gamma x / sqrt(mean(x^2) + eps) over the row (Zhang & Sennrich 2019, eq. 4)
//   BATCH   y = gamma (x - mean) rstd + beta per feature over each group of `group` consecutive
//           rows of a member (group = B: the batch's statistics at this timestep, Cooijmans et
//           al. 2016; the biased variance; the means and variances are returned for the running
//           statistics, updated in Python)
//   AFFINE  y = scale_t x + shift_t per feature (BatchNorm in eval: its running statistics folded
//           into scale and shift by the caller), scale and shift (T, S, D)
// Statistics are accumulated in double and the variance is two-pass, as the LayerNorm kernel's.
// The backward is the x-hat form of lnbench/nn/layernorm.py (NormalizeAffine) per norm, the
// derivatives of tanh and sigmoid from the saved activations, and dW_h = sum_t dR_t^T h_{t-1}
// after the loop. Parameter gradients are accumulated in double.
#include <torch/extension.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

using torch::Tensor;
using OptT = std::optional<Tensor>;

enum Mode : int64_t { NONE = 0, LAYER = 1, RMS = 2, BATCH = 3, AFFINE = 4 };

static bool has(const OptT& t) { return t.has_value() && t->defined() && t->numel() > 0; }

template <typename T>
static const T* cptr(const OptT& t) { return has(t) ? t->data_ptr<T>() : nullptr; }

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
      const T* xi = x + r * D;
      const T* g = gamma + (r / B) * D;
      const T* b = beta ? beta + (r / B) * D : nullptr;
      double mean = 0;
      if (mode == LAYER) {
        for (int64_t j = 0; j < D; ++j) mean += xi[j];
        mean /= D;
      }
      double var = 0;  // two-pass (LAYER); the mean square (RMS)
      for (int64_t j = 0; j < D; ++j) {
        double c = xi[j] - mean;
        var += c * c;
      }
      var /= D;
      T rr = (T)(1.0 / std::sqrt(var + eps));
      rs[r] = rr;
      for (int64_t j = 0; j < D; ++j) {
        T h = (T)((xi[j] - mean) * rr);
        xh[r * D + j] = h;
        y[r * D + j] = b ? h * g[j] + b[j] : h * g[j];
      }
    }
  } else if (mode == BATCH) {
    const int64_t ng = B / group;
    std::vector<double> mean(D), var(D);
    for (int64_t s = 0; s < S; ++s) {
      const T* g = gamma + s * D;
      const T* b = beta ? beta + s * D : nullptr;
      for (int64_t k = 0; k < ng; ++k) {
        const int64_t r0 = s * B + k * group;
        std::fill(mean.begin(), mean.end(), 0.0);
        std::fill(var.begin(), var.end(), 0.0);
        for (int64_t q = 0; q < group; ++q)
          for (int64_t j = 0; j < D; ++j) mean[j] += x[(r0 + q) * D + j];
        for (int64_t j = 0; j < D; ++j) mean[j] /= group;
        for (int64_t q = 0; q < group; ++q)
          for (int64_t j = 0; j < D; ++j) {
            double c = x[(r0 + q) * D + j] - mean[j];
            var[j] += c * c;
          }
        const int64_t idx = (s * ng + k) * D;
        for (int64_t j = 0; j < D; ++j) {
          var[j] /= group;
          rs[idx + j] = (T)(1.0 / std::sqrt(var[j] + eps));
          if (bm) {
            bm[idx + j] = (T)mean[j];
            bv[idx + j] = (T)var[j];
          }
        }
        for (int64_t q = 0; q < group; ++q)
          for (int64_t j = 0; j < D; ++j) {
            const int64_t e = (r0 + q) * D + j;
            T h = (T)((x[e] - mean[j]) * rs[idx + j]);
            xh[e] = h;
            y[e] = b ? h * g[j] + b[j] : h * g[j];
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
    for (int64_t r = 0; r < N; ++r) {
      const int64_t p = (r / B) * D;
      const T* dyi = dy + r * D;
      const T* xhi = xh + r * D;
      double mg = 0, mgx = 0;
      for (int64_t j = 0; j < D; ++j) {
        double gj = (double)dyi[j] * gamma[p + j];
        mg += gj;
        mgx += gj * xhi[j];
      }
      mg = mode == LAYER ? mg / D : 0.0;
      mgx /= D;
      for (int64_t j = 0; j < D; ++j) {
        double gj = (double)dyi[j] * gamma[p + j];
        dx[r * D + j] = (T)(rs[r] * (gj - mg - xhi[j] * mgx));
        if (dgamma) dgamma[p + j] += (double)dyi[j] * xhi[j];
        if (dbeta) dbeta[p + j] += dyi[j];
      }
    }
  } else if (mode == BATCH) {
    const int64_t ng = B / group;
    std::vector<double> mg(D), mgx(D);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t p = s * D;
      for (int64_t k = 0; k < ng; ++k) {
        const int64_t r0 = s * B + k * group, idx = (s * ng + k) * D;
        std::fill(mg.begin(), mg.end(), 0.0);
        std::fill(mgx.begin(), mgx.end(), 0.0);
        for (int64_t q = 0; q < group; ++q)
          for (int64_t j = 0; j < D; ++j) {
            const int64_t e = (r0 + q) * D + j;
            double gj = (double)dy[e] * gamma[p + j];
            mg[j] += gj;
            mgx[j] += gj * xh[e];
            if (dgamma) dgamma[p + j] += (double)dy[e] * xh[e];
            if (dbeta) dbeta[p + j] += dy[e];
          }
        for (int64_t j = 0; j < D; ++j) {
          mg[j] /= group;
          mgx[j] /= group;
        }
        for (int64_t q = 0; q < group; ++q)
          for (int64_t j = 0; j < D; ++j) {
            const int64_t e = (r0 + q) * D + j;
            double gj = (double)dy[e] * gamma[p + j];
            dx[e] = (T)(rs[idx + j] * (gj - mg[j] - xh[e] * mgx[j]));
          }
      }
    }
  }
}

struct Config {
  bool lstm, inner;
  int64_t mode_h, mode_c, group;
  double eps_h, eps_c;
};

static Tensor maybe_empty(bool want, at::IntArrayRef sizes, const at::TensorOptions& o) {
  return want ? torch::empty(sizes, o) : Tensor();
}

// Returns {H, ACT, C, TC, XH_h, RS_h, XH_c, RS_c, BM_h, BV_h, BM_c, BV_c}; undefined where absent.
//   H (T,S,B,H): h_1 .. h_T;  ACT (T,S,B,G): the LSTM's i f o g after their nonlinearities, the
//   RNN's tanh(pre);  C, TC (T,S,B,H): the LSTM's c_t and tanh(norm_c(c_t));  XH_*, RS_*: the
//   norms' x-hat and rstd;  BM_*, BV_* (T,S,B/group,D): BATCH's means and biased variances.
std::vector<Tensor> recurrence_forward(bool lstm, bool inner, int64_t mode_h, int64_t mode_c, int64_t group,
                                       double eps_h, double eps_c, Tensor U, Tensor W_h, OptT bias, OptT gamma_h,
                                       OptT beta_h, OptT scale_h, OptT shift_h, OptT gamma_c, OptT beta_c,
                                       OptT scale_c, OptT shift_c, OptT tap) {
  TORCH_CHECK(U.dim() == 4 && W_h.dim() == 3, "recurrence: U (T, S, B, G) and W_h (S, G, H)");
  U = U.contiguous();
  W_h = W_h.contiguous();
  const int64_t T = U.size(0), S = U.size(1), B = U.size(2), G = U.size(3), H = W_h.size(2);
  TORCH_CHECK(W_h.size(0) == S && W_h.size(1) == G && G == (lstm ? 4 * H : H), "recurrence: W_h must be (S, G, H)");
  TORCH_CHECK(!inner || !lstm, "recurrence: the LSTM has no joint placement");
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
  Tensor R = torch::empty({S, B, G}, o), A = torch::empty({S, B, G}, o), P = torch::empty({S, B, G}, o);
  Tensor PRE = torch::empty({S, B, G}, o), NC = torch::empty({S, B, H}, o);
  Tensor W_hT = W_h.transpose(1, 2);
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
    for (int64_t t = 0; t < T; ++t) {
      const T_* u = U.data_ptr<T_>() + t * N * G;
      if (t == 0) {
        R.zero_();  // h_0 = 0
      } else {
        at::bmm_out(R, Hs[t - 1], W_hT);  // (S, B, H) x (S, H, G)
      }
      T_* r = R.data_ptr<T_>();
      const T_* x_in = r;
      if (inner) {
        T_* a = A.data_ptr<T_>();
        for (int64_t e = 0; e < N * G; ++e) a[e] = r[e] + u[e];
        x_in = a;
      }
      const T_* n = x_in;  // the norm's output (NONE: its input)
      if (mode_h != NONE) {
        norm_fwd<T_>(mode_h, x_in, P.data_ptr<T_>(), XH_h[t].data_ptr<T_>(),
                     RS_h.numel() ? RS_h[t].data_ptr<T_>() : nullptr,
                     BM_h.defined() ? BM_h[t].data_ptr<T_>() : nullptr,
                     BV_h.defined() ? BV_h[t].data_ptr<T_>() : nullptr, gh, bh,
                     has(scale_h) ? scale_h->data_ptr<T_>() + t * S * G : nullptr,
                     has(shift_h) ? shift_h->data_ptr<T_>() + t * S * G : nullptr, S, B, G, group, eps_h);
        n = P.data_ptr<T_>();
      }
      T_* pre = PRE.data_ptr<T_>();
      for (int64_t row = 0; row < N; ++row) {
        const T_* bp = bias_p ? bias_p + (row / B) * G : nullptr;
        for (int64_t j = 0; j < G; ++j) {
          const int64_t e = row * G + j;
          T_ v = inner ? n[e] : n[e] + u[e];
          pre[e] = bp ? v + bp[j] : v;
        }
      }
      T_* h = Hs[t].data_ptr<T_>();
      if (!lstm) {
        if (tap_p) {
          Tensor act_t = ACT[t];
          at::tanh_out(act_t, PRE);
          const T_* a = act_t.data_ptr<T_>();
          const T_* tp = tap_p + t * N * H;
          for (int64_t e = 0; e < N * H; ++e) h[e] = a[e] + tp[e];
        } else {
          Tensor h_t = Hs[t];
          at::tanh_out(h_t, PRE);
        }
        continue;
      }
      Tensor act = ACT[t];  // (S, B, 4H): i f o | g
      Tensor act_ifo = act.narrow(-1, 0, 3 * H), act_g = act.narrow(-1, 3 * H, H);
      at::sigmoid_out(act_ifo, PRE.narrow(-1, 0, 3 * H));
      at::tanh_out(act_g, PRE.narrow(-1, 3 * H, H));
      const T_* ac = act.data_ptr<T_>();
      T_* c = C[t].data_ptr<T_>();
      const T_* cp = t > 0 ? C[t - 1].data_ptr<T_>() : nullptr;
      for (int64_t row = 0; row < N; ++row) {
        const T_* ar = ac + row * G;
        for (int64_t j = 0; j < H; ++j) {
          const T_ prev = cp ? cp[row * H + j] : (T_)0;
          c[row * H + j] = ar[H + j] * prev + ar[j] * ar[3 * H + j];
        }
      }
      const T_* nc = c;
      if (mode_c != NONE) {
        norm_fwd<T_>(mode_c, c, NC.data_ptr<T_>(), XH_c[t].data_ptr<T_>(),
                     RS_c.numel() ? RS_c[t].data_ptr<T_>() : nullptr,
                     BM_c.defined() ? BM_c[t].data_ptr<T_>() : nullptr,
                     BV_c.defined() ? BV_c[t].data_ptr<T_>() : nullptr, gc, bc,
                     has(scale_c) ? scale_c->data_ptr<T_>() + t * S * H : nullptr,
                     has(shift_c) ? shift_c->data_ptr<T_>() + t * S * H : nullptr, S, B, H, group, eps_c);
        nc = NC.data_ptr<T_>();
      }
      Tensor tc_t = TC[t];
      at::tanh_out(tc_t, mode_c != NONE ? NC : C[t]);
      (void)nc;
      const T_* tc = tc_t.data_ptr<T_>();
      const T_* tp = tap_p ? tap_p + t * N * H : nullptr;
      for (int64_t row = 0; row < N; ++row) {
        const T_* ar = ac + row * G;
        for (int64_t j = 0; j < H; ++j) {
          const int64_t e = row * H + j;
          T_ v = ar[2 * H + j] * tc[e];
          h[e] = tp ? v + tp[e] : v;
        }
      }
    }
  });
  if (!lstm && !ACT.defined()) ACT = Hs;  // the RNN without a tap: h_t is tanh(pre)
  return {Hs, ACT, C, TC, XH_h, RS_h, XH_c, RS_c, BM_h, BV_h, BM_c, BV_c};
}

static Tensor to_tensor(const std::vector<double>& v, at::IntArrayRef sizes, const at::TensorOptions& o) {
  auto out = torch::empty(sizes, o);
  AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), "to_tensor", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = (scalar_t)v[i];
  });
  return out;
}

// Returns {dU, dW_h, dbias, dgamma_h, dbeta_h, dscale_h, dshift_h, dgamma_c, dbeta_c, dscale_c,
// dshift_c, dtap}: undefined where the input is absent or wants no gradient (`want`, 12 flags in
// that order, from the autograd Function's needs_input_grad).
std::vector<Tensor> recurrence_backward(bool lstm, bool inner, int64_t mode_h, int64_t mode_c, int64_t group,
                                        OptT gH, Tensor W_h, OptT gamma_h, OptT scale_h, OptT gamma_c, OptT scale_c,
                                        std::vector<Tensor> saved, std::vector<bool> want) {
  TORCH_CHECK(saved.size() == 12 && want.size() == 12, "recurrence_backward: 12 saved tensors and 12 flags");
  Tensor Hs = saved[0], ACT = saved[1], C = saved[2], TC = saved[3], XH_h = saved[4], RS_h = saved[5];
  Tensor XH_c = saved[6], RS_c = saved[7];
  W_h = W_h.contiguous();
  const int64_t T = Hs.size(0), S = Hs.size(1), B = Hs.size(2), H = Hs.size(3), G = W_h.size(1);
  const int64_t N = S * B;
  auto o = Hs.options();
  Tensor gHc = has(gH) ? gH->contiguous() : Tensor();
  Tensor dU = torch::empty({T, S, B, G}, o);
  Tensor dR_all = torch::empty({T, S, B, G}, o);
  Tensor dh = torch::zeros({S, B, H}, o), dh_rec = torch::zeros({S, B, H}, o);
  Tensor dc = torch::zeros({S, B, H}, o), dNC = torch::empty({S, B, H}, o), dCn = torch::empty({S, B, H}, o);
  Tensor dPRE = torch::empty({S, B, G}, o), dA = torch::empty({S, B, G}, o);
  Tensor dtap = want[11] ? torch::empty({T, S, B, H}, o) : Tensor();
  std::vector<double> dbias(S * G, 0.0), dgh(S * G, 0.0), dbh(S * G, 0.0), dgc(S * H, 0.0), dbc(S * H, 0.0);
  std::vector<double> dsch(T * S * G, 0.0), dshh(T * S * G, 0.0), dscc(T * S * H, 0.0), dshc(T * S * H, 0.0);
  const bool has_tap = want[11];
  AT_DISPATCH_FLOATING_TYPES(Hs.scalar_type(), "recurrence_backward", [&] {
    using T_ = scalar_t;
    const T_* gh = cptr<T_>(gamma_h);
    const T_* gc = cptr<T_>(gamma_c);
    for (int64_t t = T - 1; t >= 0; --t) {
      T_* d = dh.data_ptr<T_>();
      const T_* rec = dh_rec.data_ptr<T_>();
      const T_* g_out = gHc.defined() ? gHc.data_ptr<T_>() + t * N * H : nullptr;
      for (int64_t e = 0; e < N * H; ++e) d[e] = (g_out ? g_out[e] : (T_)0) + (t < T - 1 ? rec[e] : (T_)0);
      if (has_tap) std::copy(d, d + N * H, dtap.data_ptr<T_>() + t * N * H);
      T_* dp = dPRE.data_ptr<T_>();
      const T_* ac = ACT[t].data_ptr<T_>();
      if (!lstm) {
        for (int64_t e = 0; e < N * H; ++e) dp[e] = d[e] * (1 - ac[e] * ac[e]);
      } else {
        const T_* tc = TC[t].data_ptr<T_>();
        T_* dnc = dNC.data_ptr<T_>();
        for (int64_t row = 0; row < N; ++row) {
          const T_* ar = ac + row * G;
          for (int64_t j = 0; j < H; ++j) {
            const int64_t e = row * H + j;
            const T_ og = ar[2 * H + j];
            dnc[e] = d[e] * og * (1 - tc[e] * tc[e]);
            dp[row * G + 2 * H + j] = d[e] * tc[e] * og * (1 - og);
          }
        }
        const T_* dcn = dnc;
        if (mode_c != NONE) {
          norm_bwd<T_>(mode_c, dnc, XH_c[t].data_ptr<T_>(), RS_c.numel() ? RS_c[t].data_ptr<T_>() : nullptr,
                       dCn.data_ptr<T_>(), gc, has(scale_c) ? scale_c->data_ptr<T_>() + t * S * H : nullptr,
                       want[7] ? dgc.data() : nullptr, want[8] ? dbc.data() : nullptr,
                       want[9] ? dscc.data() + t * S * H : nullptr, want[10] ? dshc.data() + t * S * H : nullptr, S,
                       B, H, group);
          dcn = dCn.data_ptr<T_>();
        }
        T_* dcc = dc.data_ptr<T_>();
        const T_* cp = t > 0 ? C[t - 1].data_ptr<T_>() : nullptr;
        for (int64_t row = 0; row < N; ++row) {
          const T_* ar = ac + row * G;
          T_* dr = dp + row * G;
          for (int64_t j = 0; j < H; ++j) {
            const int64_t e = row * H + j;
            const T_ i = ar[j], f = ar[H + j], g = ar[3 * H + j];
            const T_ dct = dcc[e] + dcn[e];
            const T_ prev = cp ? cp[e] : (T_)0;
            dr[j] = dct * g * i * (1 - i);
            dr[H + j] = dct * prev * f * (1 - f);
            dr[3 * H + j] = dct * i * (1 - g * g);
            dcc[e] = dct * f;
          }
        }
      }
      if (want[2])
        for (int64_t row = 0; row < N; ++row) {
          double* db = dbias.data() + (row / B) * G;
          for (int64_t j = 0; j < G; ++j) db[j] += dp[row * G + j];
        }
      T_* dr = dR_all[t].data_ptr<T_>();
      T_* du = dU.data_ptr<T_>() + t * N * G;
      if (!inner) std::copy(dp, dp + N * G, du);
      norm_bwd<T_>(mode_h, dp, mode_h != NONE ? XH_h[t].data_ptr<T_>() : nullptr,
                   RS_h.numel() ? RS_h[t].data_ptr<T_>() : nullptr, dr, gh,
                   has(scale_h) ? scale_h->data_ptr<T_>() + t * S * G : nullptr, want[3] ? dgh.data() : nullptr,
                   want[4] ? dbh.data() : nullptr, want[5] ? dsch.data() + t * S * G : nullptr,
                   want[6] ? dshh.data() + t * S * G : nullptr, S, B, G, group);
      if (inner) std::copy(dr, dr + N * G, du);
      if (t > 0) at::bmm_out(dh_rec, dR_all[t], W_h);  // (S, B, G) x (S, G, H)
    }
  });
  Tensor dW = torch::zeros({S, G, H}, o);
  for (int64_t t = 1; t < T; ++t) dW.baddbmm_(dR_all[t].transpose(1, 2), Hs[t - 1]);  // dR_t^T h_{t-1}
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
          dtap};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("recurrence_forward", &recurrence_forward, "a whole RNN/LSTM recurrence with its norm, forward");
  m.def("recurrence_backward", &recurrence_backward, "its backward through time");
}
