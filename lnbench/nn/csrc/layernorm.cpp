// lnbench: LayerNorm over the last axis (Ba et al. 2016, eq. 4) with the hand-written x-hat
// backward, as one C++ autograd node: no Python runs per call, which at the RNN's sizes
// ((64, 64) per timestep) is most of the cost of a Python autograd.Function.
//
// x: (N, D) rows (any leading shape, contiguous), gamma/beta: (G, D) with G dividing N: row i
// uses gamma row i / (N / G) (G = 1: one LayerNorm; G = S: an ensemble of S members, x (S, B, D)).
// The arithmetic is lnbench::RowNorm of norm.h (the fused recurrence's LayerNorm too): two-pass
// mean and biased variance (see norm.h for the summation), y = gamma * x_hat + beta; backward, with
// g = gamma * grad_y (the same formula as lnbench/nn/numpy_layernorm.py):
//   dx = rstd * (g - mean_j(g) - x_hat * mean_j(g * x_hat)),  dgamma = sum(grad_y * x_hat),  dbeta = sum(grad_y)
// A second derivative (create_graph: grad mode is on in backward) gets the same formula in
// differentiable ATen ops, with x_hat and rstd recomputed from the saved input; a plain backward
// runs the loops below and builds no graph.
#include <torch/extension.h>

#include "norm.h"

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// rows x (N, D) in G groups of per_group consecutive rows, group g with gamma and beta row g
template <typename T>
static void forward_rows(const T* x, const T* gamma, const T* beta, T* y, T* xh, T* rs, int64_t N, int64_t D,
                         int64_t per_group, double eps) {
  for (int64_t r0 = 0, g = 0; r0 < N; r0 += per_group, ++g)
    lnbench::RowNorm<T>{gamma + g * D, beta + g * D, D, eps, false}.forward(x + r0 * D, y + r0 * D, xh + r0 * D,
                                                                            rs + r0, per_group);
}

template <typename T>
static void backward_rows(const T* gy, const T* xh, const T* rs, const T* gamma, T* dx, T* dgamma, T* dbeta, int64_t N,
                          int64_t D, int64_t per_group) {
  for (int64_t r0 = 0, g = 0; r0 < N; r0 += per_group, ++g)
    lnbench::RowNorm<T>{gamma + g * D, nullptr, D, 0.0, false}.backward(gy + r0 * D, xh + r0 * D, rs + r0, dx + r0 * D,
                                                                         dgamma + g * D, dbeta + g * D, per_group);
}

struct LayerNormFn : public torch::autograd::Function<LayerNormFn> {
  static Tensor forward(AutogradContext* ctx, Tensor x, Tensor gamma, Tensor beta, double eps) {
    auto xc = x.contiguous();
    int64_t D = xc.size(-1), N = xc.numel() / std::max<int64_t>(D, 1);
    int64_t G = gamma.numel() / std::max<int64_t>(D, 1);
    TORCH_CHECK(G >= 1 && N % G == 0 && gamma.numel() == G * D && beta.numel() == G * D, "layer_norm: gamma rows must divide the rows of x");
    int64_t per_group = std::max<int64_t>(N / G, 1);
    auto y = torch::empty_like(xc), xh = torch::empty_like(xc);
    auto rs = torch::empty({N}, xc.options());
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "layernorm_forward", [&] {
      forward_rows<scalar_t>(xc.data_ptr<scalar_t>(), gamma.contiguous().data_ptr<scalar_t>(), beta.contiguous().data_ptr<scalar_t>(),
                             y.data_ptr<scalar_t>(), xh.data_ptr<scalar_t>(), rs.data_ptr<scalar_t>(), N, D, per_group, eps);
    });
    ctx->save_for_backward({xh, rs, gamma, x});
    ctx->saved_data["eps"] = eps;
    return y;
  }
  // The backward in differentiable ops, rows grouped as in the forward: x (G, N/G, D), gamma (G, 1, D).
  static tensor_list differentiable_backward(const Tensor& x, const Tensor& gamma, const Tensor& grad_y, double eps) {
    int64_t D = x.size(-1), G = gamma.numel() / std::max<int64_t>(D, 1);
    auto xg = x.reshape({G, -1, D}), gy = grad_y.reshape({G, -1, D}), gm = gamma.reshape({G, 1, D});
    auto centered = xg - xg.mean(-1, true);
    auto rstd = ((centered * centered).mean(-1, true) + eps).rsqrt();
    auto xh = centered * rstd, g = gy * gm;
    auto dx = rstd * (g - g.mean(-1, true) - xh * (g * xh).mean(-1, true));
    return {dx.reshape(x.sizes()), (gy * xh).sum(1).reshape(gamma.sizes()), gy.sum(1).reshape(gamma.sizes()), Tensor()};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    auto xh = saved[0], rs = saved[1], gamma = saved[2];
    if (torch::GradMode::is_enabled())  // create_graph: the gradient must be a differentiable function of x
      return differentiable_backward(saved[3], gamma, grads[0], ctx->saved_data["eps"].toDouble());
    auto gy = grads[0].contiguous();
    int64_t D = xh.size(-1), N = xh.numel() / std::max<int64_t>(D, 1);
    int64_t per_group = std::max<int64_t>(N / (gamma.numel() / D), 1);
    auto dx = torch::empty_like(xh), dg = torch::zeros_like(gamma), db = torch::zeros_like(gamma);
    AT_DISPATCH_FLOATING_TYPES(xh.scalar_type(), "layernorm_backward", [&] {
      backward_rows<scalar_t>(gy.data_ptr<scalar_t>(), xh.data_ptr<scalar_t>(), rs.data_ptr<scalar_t>(), gamma.contiguous().data_ptr<scalar_t>(),
                              dx.data_ptr<scalar_t>(), dg.data_ptr<scalar_t>(), db.data_ptr<scalar_t>(), N, D, per_group);
    });
    return {dx, dg, db, Tensor()};
  }
};

Tensor layer_norm(Tensor x, Tensor gamma, Tensor beta, double eps) { return LayerNormFn::apply(x, gamma, beta, eps); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("layer_norm", &layer_norm, "LayerNorm over the last axis, x-hat backward"); }
