// lnbench: a whole recurrence (the tanh RNN or the LSTM, with its norm) as one autograd node:
// the forward over T timesteps and the backward through time, written by hand. Python calls
// recurrence_forward once per sequence and recurrence_backward once per backward
// (lnbench/nn/fused.py, the autograd Function); the equations are those of lnbench/nn/rnn.py and
// lnbench/nn/lstm.py, whose step-by-step Python code is the reference the tests compare with.
//
// The interface is named (the structs below, bound to Python as classes whose constructors take
// keywords only; an unknown name raises): Inputs (the cell, U, W_h, bias, tap, h0 and one NormSlot
// per norm position, norm_h, norm_x, norm_c) -> Forward (hidden, saturated, the over-batch
// statistics per slot, and Saved: what the backward reads); recurrence_backward(Inputs, Saved,
// OutputGrads, Wants) -> Grads, one field per input, undefined where not wanted. Saved is kept by
// autograd as a flat list in the one order of Saved::fields (from_tensors checks the count).
//
// Layout: time-major, the member axis S of a seed ensemble next (S = 1 for one model), then the
// batch B: every per-step slab is S*B contiguous rows; row r belongs to member r / B.
//   U     (S, T, B, G)  the input terms (member-major, as one matrix product per member gives them), computed for every timestep before the recurrence:
//                       W_x x_t; the joint RNN adds it inside norm_h, the separate RNN and the LSTM
//                       add norm_x of it after
//   W_h   (S, G, H)     the (effective) recurrent weights; G = H (RNN) or 4H (LSTM, gates i f o g)
//   bias  (S, G)        added after the norm (absent: a norm with a beta is the joint RNN's bias)
//   tap   (T, S, B, H)  optional, added to h_t: its gradient is the total dL/dh_t (the probes)
//   h0    (S, B, H)     optional, the initial state h_0 (absent: h_0 = 0; c_0 is always 0)
// One step (inner = the joint RNN, eq. 4 of Ba et al. 2016):
//   R = h_{t-1} W_h^T (R = 0 at t = 1 without h0);  pre = norm_h(R + U_t) + bias  (inner)
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
// LAYER and RMS are lnbench::RowNorm of norm.h, the module's LayerNorm kernel's too (layernorm.cpp):
// one C++ LayerNorm (norm.h says how it sums a row). BATCH's statistics are per feature
// over the group's rows, in the scalar type. The backward is the x-hat form of
// lnbench/nn/layernorm.py (NormalizeAffine) per norm, the derivatives of tanh and sigmoid from the
// saved activations, and dW_h = sum_t dR_t^T h_{t-1} after the loop. Parameter gradients are
// summed over a timestep's rows in the scalar type and over the timesteps in double.
#include <torch/extension.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "norm.h"

namespace py = pybind11;
using torch::Tensor;
using OptT = std::optional<Tensor>;

enum Mode : int64_t { NONE = 0, LAYER = 1, RMS = 2, BATCH = 3, AFFINE = 4 };

static bool has(const OptT& t) { return t.has_value() && t->defined() && t->numel() > 0; }

// The parts, one concern each, included in this order into this one translation unit (the code
// compiled is the one file's it was):
#include "fast_math.h"
#include "panels.h"
#include "recurrence_interface.h"
#include "recurrence_norms.h"
#include "recurrence_forward.h"
#include "recurrence_backward.h"

// A struct as a Python class: each field readable and writable by name, and a constructor that
// takes fields by keyword only, each set by the same name in C++ (no Python attribute machinery per
// field: ~1 us a struct); an unknown name raises AttributeError, at construction or later.
template <typename S>
class Binder {
 public:
  Binder(py::module_& m, const char* name, const char* doc)
      : cls_(m, name, doc), setters_(std::make_shared<Setters>()) {
    auto setters = setters_;
    std::string type = name;
    cls_.def(py::init([setters, type](const py::kwargs& fields) {
      S s;
      for (auto item : fields) {
        const auto key = item.first.cast<std::string>();
        const auto it = setters->find(key);
        if (it == setters->end()) throw py::attribute_error("'" + type + "' has no field '" + key + "'");
        it->second(s, item.second);
      }
      return s;
    }));
  }
  template <typename D>
  Binder& field(const char* name, D S::*member) {
    cls_.def_readwrite(name, member);
    (*setters_)[name] = [member](S& s, py::handle value) { s.*member = value.cast<D>(); };
    return *this;
  }
  template <typename... Extra>
  Binder& def(Extra&&... extra) {
    cls_.def(std::forward<Extra>(extra)...);
    return *this;
  }
  template <typename... Extra>
  Binder& def_static(Extra&&... extra) {
    cls_.def_static(std::forward<Extra>(extra)...);
    return *this;
  }

 private:
  using Setters = std::unordered_map<std::string, std::function<void(S&, py::handle)>>;
  py::class_<S> cls_;
  std::shared_ptr<Setters> setters_;
};

#define FIELD(S, f) field(#f, &S::f)

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  Binder<NormSlot>(m, "NormSlot", "one norm position: mode, eps, gamma, beta, scale, shift")
      .FIELD(NormSlot, mode).FIELD(NormSlot, eps).FIELD(NormSlot, gamma).FIELD(NormSlot, beta)
      .FIELD(NormSlot, scale).FIELD(NormSlot, shift);
  Binder<Inputs>(m, "Inputs", "the node's inputs: the cell, U, W_h, bias, tap, h0, norm_h, norm_x, norm_c")
      .FIELD(Inputs, lstm).FIELD(Inputs, inner).FIELD(Inputs, count_saturated).FIELD(Inputs, keep_x_hat)
      .FIELD(Inputs, group)
      .FIELD(Inputs, U).FIELD(Inputs, W_h).FIELD(Inputs, bias).FIELD(Inputs, tap).FIELD(Inputs, h0)
      .FIELD(Inputs, norm_h).FIELD(Inputs, norm_x).FIELD(Inputs, norm_c);
  Binder<NormSaved>(m, "NormSaved", "what a norm slot saves: x_hat, rstd").FIELD(NormSaved, x_hat).FIELD(NormSaved, rstd);
  Binder<Saved>(m, "Saved", "what the backward reads")
      .FIELD(Saved, hidden).FIELD(Saved, gates).FIELD(Saved, cell).FIELD(Saved, tanh_cell)
      .FIELD(Saved, norm_h).FIELD(Saved, norm_x).FIELD(Saved, norm_c)
      .def("tensors", &Saved::tensors, "the flat list, in the one order from_tensors reads")
      .def_static("from_tensors", &Saved::from_tensors, "Saved from tensors() (a wrong count raises)");
  Binder<BatchStats>(m, "BatchStats", "over_batch's means and biased variances")
      .FIELD(BatchStats, mean).FIELD(BatchStats, var);
  Binder<Forward>(m, "Forward", "the forward's result")
      .FIELD(Forward, hidden).FIELD(Forward, saturated).FIELD(Forward, norm_h).FIELD(Forward, norm_x)
      .FIELD(Forward, norm_c).FIELD(Forward, saved);
  Binder<OutputGrads>(m, "OutputGrads", "the gradients of the outputs hidden and last (h_T)")
      .FIELD(OutputGrads, hidden).FIELD(OutputGrads, last);
  Binder<NormWants>(m, "NormWants", "which of a slot's parameter gradients to compute")
      .FIELD(NormWants, gamma).FIELD(NormWants, beta).FIELD(NormWants, scale).FIELD(NormWants, shift);
  Binder<Wants>(m, "Wants", "which gradients to compute, per input")
      .FIELD(Wants, U).FIELD(Wants, W_h).FIELD(Wants, bias).FIELD(Wants, tap).FIELD(Wants, h0)
      .FIELD(Wants, norm_h).FIELD(Wants, norm_x).FIELD(Wants, norm_c);
  Binder<NormGrads>(m, "NormGrads", "a slot's parameter gradients")
      .FIELD(NormGrads, gamma).FIELD(NormGrads, beta).FIELD(NormGrads, scale).FIELD(NormGrads, shift);
  Binder<Grads>(m, "Grads", "the gradients, per input")
      .FIELD(Grads, U).FIELD(Grads, W_h).FIELD(Grads, bias).FIELD(Grads, tap).FIELD(Grads, h0)
      .FIELD(Grads, norm_h).FIELD(Grads, norm_x).FIELD(Grads, norm_c);
  m.def("recurrence_forward", &recurrence_forward, py::arg("inputs"),
        "a whole RNN/LSTM recurrence with its norm, forward: Inputs -> Forward");
  m.def("recurrence_backward", &recurrence_backward, py::arg("inputs"), py::arg("saved"), py::arg("grad"),
        py::arg("want"), "its backward through time: (Inputs, Saved, OutputGrads, Wants) -> Grads");
}
