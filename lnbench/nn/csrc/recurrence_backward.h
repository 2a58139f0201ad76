// lnbench's recurrence kernel (recurrence.cpp, which includes every part once, in order): the backward through time: recurrence_backward.
#pragma once

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
