// lnbench: a Linear layer on a few rows, y = x W^T + b (torch.nn.functional.linear), as one C++
// autograd node whose products stream W once.
//
// At a small batch (R rows, R <= 8) each product reads all of W for a few multiply-adds per
// weight, so it is bound by W's memory traffic. A library GEMM (MKL, behind torch.mm) first packs W
// into its own blocked layout, a read and a write of W before the read that computes; here each
// product reads W once, in its row-major order, and the backward forms dx and dW in one pass. At
// Ba et al.'s Figure 6 (784-1000-1000-10, batch size 4) the MLP's training step took ~35% less
// time (docs/speed.md, "A Linear on a few rows"). Here:
//   forward    y[r, j]  = sum_k x[r, k] W[j, k] + b[j]      one pass over W's rows
//   backward   dW[j, k] = sum_r dy[r, j] x[r, k]             one pass over W's rows, which
//              dx[r, k] = sum_j dy[r, j] W[j, k]             reads W once for dx and writes dW
//              db[j]    = sum_r dy[r, j]
// Summation: y's dot products in fixed lanes of the scalar type (16 floats, 8 doubles), folded
// in double in a fixed order (norm.h's fold), the tail in double; dW over r in order; dx over j in
// order, in the scalar type; mul then add (no contraction). The sums are ordered differently from
// MKL's, so results move in the last bits against F.linear (tested against it in float64).
// A second derivative (create_graph: grad mode is on in backward) gets the same products as
// differentiable ATen ops.
#include <torch/extension.h>

#include <algorithm>
#include <utility>

#include "norm.h"

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// y (RB, N) = x (RB, K) W^T + b for RB rows known at compile time (their accumulators in
// registers): each row of W read once
template <typename T, int RB>
static void forward_block(const T* __restrict__ x, const T* __restrict__ W, const T* __restrict__ b, T* __restrict__ y,
                          int64_t K, int64_t N) {
  constexpr int L = lnbench::Lanes<T>::n;
  using V = lnbench::Vec<T>;
  for (int64_t j = 0; j < N; ++j) {
    const T* __restrict__ w = W + j * K;
    V acc[RB] = {};
    int64_t k = 0;
    for (; k + L <= K; k += L) {
      const V wv = lnbench::load_lanes(w + k);
      for (int r = 0; r < RB; ++r) acc[r] += lnbench::load_lanes(x + r * K + k) * wv;
    }
    for (int r = 0; r < RB; ++r) {
      double s = lnbench::fold<T>(acc[r]);
      for (int64_t kk = k; kk < K; ++kk) s += (double)(x[r * K + kk] * w[kk]);
      y[r * N + j] = (T)s + (b ? b[j] : (T)0);
    }
  }
}

// dW (N, K) (null: not wanted), dx (R, K) (null: not wanted), db (N) (null: not wanted), for R rows
// known at compile time: per vector of K columns, dx's R vectors stay in registers while JB rows of
// W stream past (the same sums over j in order as one row at a time, with 1/JB of dx's traffic)
constexpr int64_t JB = 4;

template <typename T, int R>
static void backward_block(const T* __restrict__ gy, const T* __restrict__ x, const T* __restrict__ W, T* __restrict__ dW,
                           T* __restrict__ dx, T* __restrict__ db, int64_t K, int64_t N) {
  constexpr int L = lnbench::Lanes<T>::n;
  using V = lnbench::Vec<T>;
  if (dx) std::memset(dx, 0, sizeof(T) * R * K);
  for (int64_t j0 = 0; j0 < N; j0 += JB) {
    const int64_t j1 = std::min<int64_t>(j0 + JB, N);
    int64_t k = 0;
    for (; k + L <= K; k += L) {
      V d[R];
      if (dx)
        for (int r = 0; r < R; ++r) d[r] = lnbench::load_lanes(dx + r * K + k);
      for (int64_t j = j0; j < j1; ++j) {
        if (dW) {
          V g = lnbench::load_lanes(x + k) * gy[j];
          for (int r = 1; r < R; ++r) g += lnbench::load_lanes(x + r * K + k) * gy[r * N + j];
          std::memcpy(dW + j * K + k, &g, sizeof(V));
        }
        if (dx) {
          const V wv = lnbench::load_lanes(W + j * K + k);
          for (int r = 0; r < R; ++r) d[r] += gy[r * N + j] * wv;
        }
      }
      if (dx)
        for (int r = 0; r < R; ++r) std::memcpy(dx + r * K + k, &d[r], sizeof(V));
    }
    for (; k < K; ++k)
      for (int64_t j = j0; j < j1; ++j) {
        if (dW) {
          T g = x[k] * gy[j];
          for (int r = 1; r < R; ++r) g += x[r * K + k] * gy[r * N + j];
          dW[j * K + k] = g;
        }
        if (dx)
          for (int r = 0; r < R; ++r) dx[r * K + k] += gy[r * N + j] * W[j * K + k];
      }
  }
  if (db)
    for (int64_t j = 0; j < N; ++j) {
      T s = gy[j];
      for (int r = 1; r < R; ++r) s += gy[r * N + j];
      db[j] = s;
    }
}

// the most rows a compiled block exists for (lnbench.nn.few_row_linear.MAX_ROWS says why 8)
constexpr int MAX_ROWS = 8;

// f.template operator()<R>() for the rows' count R, 1 <= R <= MAX_ROWS
template <int R = 1, typename F>
static void with_rows(int64_t rows, F&& f) {
  if constexpr (R < MAX_ROWS) {
    if (rows != R) return with_rows<R + 1>(rows, std::forward<F>(f));
  }
  TORCH_CHECK(rows == R, "few_row_linear: 1 to ", MAX_ROWS, " rows, got ", rows);
  f.template operator()<R>();
}

struct FewRowLinearFn : public torch::autograd::Function<FewRowLinearFn> {
  // x (*, K) contiguous or not, W (N, K), b (N) or (0) for none
  static Tensor forward(AutogradContext* ctx, Tensor x, Tensor W, Tensor b) {
    auto xc = x.contiguous(), Wc = W.contiguous();
    const int64_t K = Wc.size(1), N = Wc.size(0), R = xc.numel() / std::max<int64_t>(K, 1);
    TORCH_CHECK(xc.size(-1) == K, "few_row_linear: x's last axis must be W's columns");
    auto sizes = xc.sizes().vec();
    sizes.back() = N;
    auto y = torch::empty(sizes, xc.options());
    const bool has_b = b.numel() > 0;
    auto bc = has_b ? b.contiguous() : b;
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "few_row_linear_forward", [&] {
      with_rows(R, [&]<int RB>() {
        forward_block<scalar_t, RB>(xc.data_ptr<scalar_t>(), Wc.data_ptr<scalar_t>(),
                                    has_b ? bc.data_ptr<scalar_t>() : nullptr, y.data_ptr<scalar_t>(), K, N);
      });
    });
    ctx->save_for_backward({x, W});
    ctx->saved_data["has_b"] = has_b;
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &W = saved[1];
    const bool has_b = ctx->saved_data["has_b"].toBool();
    const bool want_x = ctx->needs_input_grad(0), want_W = ctx->needs_input_grad(1), want_b = has_b && ctx->needs_input_grad(2);
    const int64_t K = W.size(1), N = W.size(0);
    if (torch::GradMode::is_enabled()) {  // create_graph: the gradient as differentiable ops
      auto gy2 = grads[0].reshape({-1, N}), x2 = x.reshape({-1, K});
      return {want_x ? grads[0].matmul(W) : Tensor(), want_W ? gy2.t().mm(x2) : Tensor(),
              want_b ? gy2.sum(0) : Tensor()};
    }
    auto gy = grads[0].contiguous(), xc = x.contiguous(), Wc = W.contiguous();
    const int64_t R = xc.numel() / std::max<int64_t>(K, 1);
    Tensor dx = want_x ? torch::empty_like(xc) : Tensor();
    Tensor dW = want_W ? torch::empty_like(Wc) : Tensor();
    Tensor db = want_b ? torch::empty({N}, Wc.options()) : Tensor();
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "few_row_linear_backward", [&] {
      with_rows(R, [&]<int RB>() {
        backward_block<scalar_t, RB>(gy.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(), Wc.data_ptr<scalar_t>(),
                                     want_W ? dW.data_ptr<scalar_t>() : nullptr, want_x ? dx.data_ptr<scalar_t>() : nullptr,
                                     want_b ? db.data_ptr<scalar_t>() : nullptr, K, N);
      });
    });
    return {dx, dW, db};
  }
};

Tensor few_row_linear(Tensor x, Tensor W, std::optional<Tensor> b) {
  return FewRowLinearFn::apply(x, W, b.has_value() ? *b : torch::empty({0}, W.options()));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("few_row_linear", &few_row_linear, py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(),
        "y = x W^T + b on a few rows, W streamed once per product (forward and backward)");
}
