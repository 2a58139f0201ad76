// lnbench's recurrence kernel (recurrence.cpp, which includes every part once, in order): the recurrence's named interface: Inputs, NormSlot, Saved, Forward, Wants, Grads.
#pragma once

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
