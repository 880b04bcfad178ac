// Fused element-wise work of one ON-LSTM step on the CPU: everything between the hidden-projection matrix
// product and the next one, forward and backward, in one pass over the batch. The Python functions
// `onlstm_step` and `onlstm_step_backward` in onlstm.py are the specification (and the path used on other
// devices); tests check that both agree.
//
// Layouts: pre/d_pre [B, 2*nc + 4*H] = [i~ logits | f~ logits | o | c^ | i | f]; master/probs [B, 2, nc]
// (row 0: master input gate, row 1: master forget gate); gates [B, 4, H] = o, c^, i, f after activation.
#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "common.h"
#include "recurrent_product.h"

using namespace treenets;

namespace {

template <typename T>
void forward_rows(const T* pre, const T* c_prev, T* h, T* c, T* master, T* probs, T* gates,
                  int64_t b0, int64_t b1, int64_t nc, int64_t cs) {
  const int64_t H = nc * cs, G = 2 * nc + 4 * H;
  std::vector<T> p(2 * nc), wi(H), wf(H);
  for (int64_t b = b0; b < b1; ++b) {
    const T* row = pre + b * G;
    T* m = master + b * 2 * nc;
    for (int64_t k = 0; k < 2; ++k) {  // cumax = cumsum(softmax(.)), eqs. 9-10
      const T* logits = row + k * nc;
      T top = logits[0];
      for (int64_t j = 1; j < nc; ++j) top = std::max(top, logits[j]);
      T total = 0;
      for (int64_t j = 0; j < nc; ++j) total += (p[k * nc + j] = std::exp(logits[j] - top));
      T cum = 0;
      for (int64_t j = 0; j < nc; ++j) {
        p[k * nc + j] /= total;
        cum += p[k * nc + j];
        m[k * nc + j] = k == 0 ? T(1) - cum : cum;
      }
    }
    if (probs) std::copy(p.begin(), p.end(), probs + b * 2 * nc);
    for (int64_t j = 0; j < nc; ++j)
      for (int64_t e = 0; e < cs; ++e) wi[j * cs + e] = m[j], wf[j * cs + e] = m[nc + j];
    const T *po = row + 2 * nc, *pz = po + H, *pi = pz + H, *pf = pi + H;
    const T* cp = c_prev + b * H;
    T *hb = h + b * H, *cb = c + b * H;
    T* g = gates ? gates + b * 4 * H : nullptr;
#pragma omp simd
    for (int64_t x = 0; x < H; ++x) {
      const T o = sigmoid(po[x]), z = std::tanh(pz[x]), i = sigmoid(pi[x]), f = sigmoid(pf[x]);
      const T w = wi[x] * wf[x];                  // overlap
      const T f_hat = wf[x] + (f - T(1)) * w;    // eq. 11
      const T i_hat = wi[x] + (i - T(1)) * w;    // eq. 12
      const T cx = f_hat * cp[x] + i_hat * z;    // eq. 13
      cb[x] = cx;
      hb[x] = o * std::tanh(cx);
      if (g) g[x] = o, g[H + x] = z, g[2 * H + x] = i, g[3 * H + x] = f;
    }
  }
}

template <typename T>
void backward_rows(const T* dh, const T* dc, const T* c_prev, const T* c, const T* master, const T* probs,
                   const T* gates, const T* d_master, T* d_pre, T* dc_prev, int64_t b0, int64_t b1, int64_t nc,
                   int64_t cs) {
  const int64_t H = nc * cs, G = 2 * nc + 4 * H;
  std::vector<T> wi(H), wf(H), dmi(H), dmf(H), grad(2 * nc);
  for (int64_t b = b0; b < b1; ++b) {
    const T* m = master + b * 2 * nc;
    for (int64_t j = 0; j < nc; ++j)
      for (int64_t e = 0; e < cs; ++e) wi[j * cs + e] = m[j], wf[j * cs + e] = m[nc + j];
    const T *go = gates + b * 4 * H, *gz = go + H, *gi = gz + H, *gf = gi + H;
    const T *dhb = dh + b * H, *dcb = dc + b * H, *cp = c_prev + b * H, *cc = c + b * H;
    T* dp = d_pre + b * G + 2 * nc;
    T* dcp = dc_prev + b * H;
#pragma omp simd
    for (int64_t x = 0; x < H; ++x) {
      const T o = go[x], z = gz[x], i = gi[x], f = gf[x];
      const T tc = std::tanh(cc[x]);
      const T dcx = dcb[x] + dhb[x] * o * (T(1) - tc * tc);  // h = o tanh(c)
      const T w = wi[x] * wf[x];
      const T f_hat = wf[x] + (f - T(1)) * w, i_hat = wi[x] + (i - T(1)) * w;
      const T d_fhat = dcx * cp[x], d_ihat = dcx * z;          // eq. 13
      const T d_w = d_fhat * (f - T(1)) + d_ihat * (i - T(1));  // eqs. 11-12 through the overlap
      dmi[x] = d_ihat + d_w * wf[x];
      dmf[x] = d_fhat + d_w * wi[x];
      dp[x] = dhb[x] * tc * o * (T(1) - o);
      dp[H + x] = dcx * i_hat * (T(1) - z * z);
      dp[2 * H + x] = d_ihat * w * i * (T(1) - i);
      dp[3 * H + x] = d_fhat * w * f * (T(1) - f);
      dcp[x] = dcx * f_hat;
    }
    // Master gates are shared by the neurons of a chunk: sum their gradients; i~ = 1 - cumax, f~ = cumax.
    for (int64_t j = 0; j < nc; ++j) {
      T si = 0, sf = 0;
      for (int64_t e = 0; e < cs; ++e) si += dmi[j * cs + e], sf += dmf[j * cs + e];
      if (d_master) si += d_master[b * 2 * nc + j], sf += d_master[b * 2 * nc + nc + j];
      grad[j] = -si;
      grad[nc + j] = sf;
    }
    // cumax backward: d(probs)_j = sum_{l >= j} grad_l, then the softmax Jacobian p * (dp - <p, dp>).
    for (int64_t k = 0; k < 2; ++k) {
      const T* p = probs + b * 2 * nc + k * nc;
      T* out = d_pre + b * G + k * nc;
      T suffix = 0, dot = 0;
      for (int64_t j = nc - 1; j >= 0; --j) {
        suffix += grad[k * nc + j];
        out[j] = suffix;
        dot += p[j] * suffix;
      }
      for (int64_t j = 0; j < nc; ++j) out[j] = p[j] * (out[j] - dot);
    }
  }
}

// The sizes every ON-LSTM kernel works with, from h [B, H] (or [B, 2, nc] for master) and n_chunks.
struct Sizes {
  int64_t B, H, nc, G;
};

Sizes sizes_of(const at::Tensor& h, int64_t n_chunks, const char* fn, const char* name) {
  check_float(h, 2, fn, name);
  TORCH_CHECK(n_chunks > 0 && h.size(1) % n_chunks == 0, fn, ": the size of ", name, " (", h.size(1),
              ") must be a multiple of n_chunks = ", n_chunks);
  return {h.size(0), h.size(1), n_chunks, 2 * n_chunks + 4 * h.size(1)};
}

}  // namespace

// The forward over a whole sequence. x_proj [T, B, G] holds the input projection plus both biases of every
// step; only the hidden projection runs here, followed by the fused element-wise step. With `w_low` (w_hh in
// bfloat16: mixed precision) the hidden product runs in bfloat16 (accumulated in float32 by the GEMM) and is
// added to x_proj in float32; the element-wise step stays in x_proj's dtype.
// Returns hs [T, B, H], c_last [B, H], master [T, B, 2, nc], and with `keep` also what the backward needs:
// cs [T + 1, B, H] (from c0), probs [T, B, 2, nc], gates [T, B, 4, H]; otherwise those are undefined.
std::vector<at::Tensor> forward(const at::Tensor& x_proj, const at::Tensor& w_hh, const at::Tensor& h0,
                                   const at::Tensor& c0, int64_t n_chunks, bool keep,
                                   const c10::optional<at::Tensor>& w_low) {
  const char* fn = "onlstm forward";
  const auto z = sizes_of(h0, n_chunks, fn, "h0");
  check_float(x_proj, 3, fn, "x_proj");
  check_tensor(x_proj, h0, {x_proj.size(0), z.B, z.G}, false, fn, "x_proj");
  check_tensor(w_hh, h0, {z.G, z.H}, false, fn, "w_hh");
  check_tensor(c0, h0, {z.B, z.H}, false, fn, "c0");
  check_low_weight(w_low, w_hh, fn);
  const int64_t T = x_proj.size(0), B = z.B, H = z.H, cs_size = H / n_chunks;
  auto opts = x_proj.options();
  auto hs = at::empty({T, B, H}, opts);
  auto master = at::empty({T, B, 2, n_chunks}, opts);
  auto cs = at::empty({keep ? T + 1 : 2, B, H}, opts);
  at::Tensor probs, gates;
  if (keep) {
    probs = at::empty({T, B, 2, n_chunks}, opts);
    gates = at::empty({T, B, 4, H}, opts);
  }
  cs[0].copy_(c0);
  RecurrentProduct hidden(w_hh, w_low, /*transposed=*/true, T, B);  // h U^T
  const auto x_steps = x_proj.contiguous();  // the packed product reads each step's rows with unit column stride
  at::Tensor h = h0.contiguous(), pre = at::empty({B, x_proj.size(2)}, opts);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t prev = keep ? t : t % 2, cur = keep ? t + 1 : (t + 1) % 2;
    hidden.multiply(h, x_steps[t], pre);
    AT_DISPATCH_FLOATING_TYPES(x_proj.scalar_type(), "onlstm_forward", [&] {
      at::parallel_for(0, B, grain_for(H), [&](int64_t b0, int64_t b1) {
        forward_rows<scalar_t>(pre.data_ptr<scalar_t>(), cs[prev].data_ptr<scalar_t>(), hs[t].data_ptr<scalar_t>(),
                               cs[cur].data_ptr<scalar_t>(), master[t].data_ptr<scalar_t>(),
                               keep ? probs[t].data_ptr<scalar_t>() : nullptr,
                               keep ? gates[t].data_ptr<scalar_t>() : nullptr, b0, b1, n_chunks, cs_size);
      });
    });
    h = hs[t];
  }
  auto c_last = cs[keep ? T : T % 2].clone();
  return {hs, c_last, master, keep ? cs : at::Tensor(), probs, gates};
}

// The backward of `forward` (run with keep) given the gradients of its outputs (each may be None).
// Returns d_x_proj [T, B, G], d_w_hh [G, H], d_h0 [B, H], d_c0 [B, H]. With `w_low` the two products (the
// gradient w.r.t. h_{t-1}, the weight gradient) run in bfloat16 as the forward's did.
std::vector<at::Tensor> backward(const c10::optional<at::Tensor>& d_hs,
                                    const c10::optional<at::Tensor>& d_c_last,
                                    const c10::optional<at::Tensor>& d_master, const at::Tensor& w_hh,
                                    const at::Tensor& h0,
                                    const at::Tensor& hs, const at::Tensor& cs, const at::Tensor& master,
                                    const at::Tensor& probs, const at::Tensor& gates, int64_t n_chunks,
                                    const c10::optional<at::Tensor>& w_low) {
  const char* fn = "onlstm backward";
  const auto z = sizes_of(h0, n_chunks, fn, "h0");
  check_float(hs, 3, fn, "hs");
  const int64_t T = hs.size(0), B = z.B, H = z.H, G = z.G, cs_size = H / n_chunks;
  check_tensor(hs, h0, {T, B, H}, true, fn, "hs");
  check_tensor(cs, h0, {T + 1, B, H}, true, fn, "cs");
  check_tensor(master, h0, {T, B, 2, n_chunks}, true, fn, "master");
  check_tensor(probs, h0, {T, B, 2, n_chunks}, true, fn, "probs");
  check_tensor(gates, h0, {T, B, 4, H}, true, fn, "gates");
  check_tensor(w_hh, h0, {G, H}, false, fn, "w_hh");
  check_low_weight(w_low, w_hh, fn);
  check_optional(d_hs, h0, {T, B, H}, fn, "d_hs");
  check_optional(d_c_last, h0, {B, H}, fn, "d_c_last");
  check_optional(d_master, h0, {T, B, 2, n_chunks}, fn, "d_master");
  auto opts = hs.options();
  auto d_pre = at::empty({T, B, G}, opts);
  auto dh = at::zeros({B, H}, opts);
  auto dc = d_c_last.has_value() ? d_c_last->contiguous().clone() : at::zeros({B, H}, opts);
  auto dc_prev = at::empty({B, H}, opts);
  const auto d_hs_c = d_hs.has_value() ? d_hs->contiguous() : at::Tensor();
  const auto d_master_c = d_master.has_value() ? d_master->contiguous() : at::Tensor();
  RecurrentProduct gradient(w_hh, w_low, /*transposed=*/false, T, B);  // d U
  for (int64_t t = T - 1; t >= 0; --t) {
    if (d_hs_c.defined()) dh.add_(d_hs_c[t]);
    AT_DISPATCH_FLOATING_TYPES(hs.scalar_type(), "onlstm_backward", [&] {
      const scalar_t* dm = d_master_c.defined() ? d_master_c[t].data_ptr<scalar_t>() : nullptr;
      at::parallel_for(0, B, grain_for(H), [&](int64_t b0, int64_t b1) {
        backward_rows<scalar_t>(dh.data_ptr<scalar_t>(), dc.data_ptr<scalar_t>(), cs[t].data_ptr<scalar_t>(),
                                cs[t + 1].data_ptr<scalar_t>(), master[t].data_ptr<scalar_t>(),
                                probs[t].data_ptr<scalar_t>(), gates[t].data_ptr<scalar_t>(), dm,
                                d_pre[t].data_ptr<scalar_t>(), dc_prev.data_ptr<scalar_t>(), b0, b1, n_chunks,
                                cs_size);
      });
    });
    std::swap(dc, dc_prev);
    gradient.multiply(d_pre[t], at::Tensor(), dh);  // the gradient w.r.t. h_{t-1}
  }
  // One [G, T*B] x [T*B, H] product instead of T small ones accumulated into the weight gradient.
  auto h_prev = at::cat({h0.unsqueeze(0), hs.narrow(0, 0, T - 1)}).view({T * B, H});
  auto d_w = weight_gradient(d_pre.view({T * B, G}), h_prev, w_low.has_value());
  return {d_pre, d_w, dh, dc};
}

// Single steps, for tests against the PyTorch specification.
void forward_step(const at::Tensor& pre, const at::Tensor& c_prev, at::Tensor h, at::Tensor c,
                  at::Tensor master, at::Tensor probs, at::Tensor gates, int64_t n_chunks) {
  const char* fn = "onlstm forward_step";
  const auto z = sizes_of(c_prev, n_chunks, fn, "c_prev");
  const int64_t B = z.B, H = z.H;
  TORCH_CHECK(c_prev.is_contiguous(), fn, ": c_prev must be contiguous");
  check_tensor(pre, c_prev, {B, z.G}, true, fn, "pre");
  check_tensor(h, c_prev, {B, H}, true, fn, "h");
  check_tensor(c, c_prev, {B, H}, true, fn, "c");
  check_tensor(master, c_prev, {B, 2, n_chunks}, true, fn, "master");
  check_tensor(probs, c_prev, {B, 2, n_chunks}, true, fn, "probs");
  check_tensor(gates, c_prev, gates.sizes(), true, fn, "gates");
  TORCH_CHECK(gates.numel() == B * 4 * H, fn, ": gates must hold B * 4 * H = ", B * 4 * H, " values, got shape ",
              shape_text(gates.sizes()));
  AT_DISPATCH_FLOATING_TYPES(pre.scalar_type(), "onlstm_forward_step", [&] {
    forward_rows<scalar_t>(pre.data_ptr<scalar_t>(), c_prev.data_ptr<scalar_t>(), h.data_ptr<scalar_t>(),
                           c.data_ptr<scalar_t>(), master.data_ptr<scalar_t>(), probs.data_ptr<scalar_t>(),
                           gates.data_ptr<scalar_t>(), 0, B, n_chunks, H / n_chunks);
  });
}

void backward_step(const at::Tensor& dh, const at::Tensor& dc, const at::Tensor& c_prev,
                   const at::Tensor& c, const at::Tensor& master, const at::Tensor& probs,
                   const at::Tensor& gates, const at::Tensor& d_master, at::Tensor d_pre,
                   at::Tensor dc_prev, int64_t n_chunks) {
  const char* fn = "onlstm backward_step";
  const auto z = sizes_of(dh, n_chunks, fn, "dh");
  const int64_t B = z.B, H = z.H;
  TORCH_CHECK(dh.is_contiguous(), fn, ": dh must be contiguous");
  check_tensor(dc, dh, {B, H}, true, fn, "dc");
  check_tensor(c_prev, dh, {B, H}, true, fn, "c_prev");
  check_tensor(c, dh, {B, H}, true, fn, "c");
  check_tensor(dc_prev, dh, {B, H}, true, fn, "dc_prev");
  check_tensor(master, dh, {B, 2, n_chunks}, true, fn, "master");
  check_tensor(probs, dh, {B, 2, n_chunks}, true, fn, "probs");
  check_tensor(gates, dh, gates.sizes(), true, fn, "gates");
  TORCH_CHECK(gates.numel() == B * 4 * H, fn, ": gates must hold B * 4 * H = ", B * 4 * H, " values, got shape ",
              shape_text(gates.sizes()));
  if (d_master.defined()) check_tensor(d_master, dh, {B, 2, n_chunks}, true, fn, "d_master");
  check_tensor(d_pre, dh, {B, z.G}, true, fn, "d_pre");
  AT_DISPATCH_FLOATING_TYPES(dh.scalar_type(), "onlstm_backward_step", [&] {
    backward_rows<scalar_t>(dh.data_ptr<scalar_t>(), dc.data_ptr<scalar_t>(), c_prev.data_ptr<scalar_t>(),
                            c.data_ptr<scalar_t>(), master.data_ptr<scalar_t>(), probs.data_ptr<scalar_t>(),
                            gates.data_ptr<scalar_t>(), data_or_null<scalar_t>(d_master),
                            d_pre.data_ptr<scalar_t>(), dc_prev.data_ptr<scalar_t>(), 0, B, n_chunks, H / n_chunks);
  });
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "ON-LSTM recurrence over a sequence");
  m.def("backward", &backward, "backward of the ON-LSTM recurrence over a sequence");
  m.def("forward_step", &forward_step, "one step: element-wise part of the forward");
  m.def("backward_step", &backward_step, "one step: element-wise part of the backward");
}
