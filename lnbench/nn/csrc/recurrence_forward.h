// lnbench's recurrence kernel (recurrence.cpp, which includes every part once, in order): the forward over T timesteps: recurrence_forward.
#pragma once

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
