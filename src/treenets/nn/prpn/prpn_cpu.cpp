// PRPN on the CPU. The reading layer over a whole segment: per step the two matrix products (query,
// hidden-to-gates) and everything element-wise between them (attention over the slots, masked softmax, both
// layer norms, the LSTM cell) in fused loops over the batch rows; and its hand-derived backward, which runs
// the steps in reverse and forms the weight gradients once per segment ([out, T*B] x [T*B, in] products)
// instead of once per step. The hidden-to-gates products skip the features the recurrent dropout drops (one
// mask for the whole segment: `kept_features`). Also the predict network's attention (all steps at once), PRPN's
// layer norm and dropout masks. In prpn.py, `ReadingLayer.forward`, `attend` and `LayerNorm.forward` are the
// specification and the path for other devices; tests check that both agree, values and gradients.
//
// States are kept by absolute time: hs/cs [S + T, B, H], indices 0..S-1 the carried memory (oldest first),
// index S + t the state of step t; so slot k of step t (the state of step t-1-k) is index S + t - 1 - k.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common.h"
#include "recurrent_product.h"

using at::Tensor;
using Named = std::map<std::string, Tensor>;
using namespace treenets;

// `#pragma omp simd` cannot stand inside a macro's argument (the AT_DISPATCH bodies below); _Pragma can.
#define SIMD _Pragma("omp simd")

namespace {

// PRPN's layer norm without its affine part, in place: x <- (x - mean) / (std + eps), std unbiased.
// Returns 1 / (std + eps) and std, what the backward needs.
template <typename T>
std::pair<T, T> normalise(T* x, int64_t n, T eps) {
  T mean = 0;
  for (int64_t j = 0; j < n; ++j) mean += x[j];
  mean /= n;
  T var = 0;
  for (int64_t j = 0; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
  const T std = std::sqrt(var / (n - 1)), inv = T(1) / (std + eps);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) x[j] = (x[j] - mean) * inv;
  return {inv, std};
}

// Backward of `normalise` given g = d(output) (gamma already applied) and its output xhat:
// with s = std + eps, dx = (g - mean(g) - xhat * sum(g * xhat) * s / ((n - 1) std)) / s.
template <typename T>
void normalise_backward(const T* g, const T* xhat, T inv, T std, int64_t n, T* dx) {
  T mean = 0, dot = 0;
  for (int64_t j = 0; j < n; ++j) mean += g[j], dot += g[j] * xhat[j];
  mean /= n;
  const T coef = dot / (inv * (n - 1) * std);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dx[j] = inv * (g[j] - mean - xhat[j] * coef);
}

template <typename T>
inline T dot(const T* a, const T* b, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t x = 0; x < n; ++x) s += a[x] * b[x];
  return s;
}

// Attention of batch row b at step t over the S states before it, in the absolute layout (j = S + t; slot k
// is index j - 1 - k of hs [S + T, B, H]): logits l_k = <h_k, q> / sqrt(H), the official masked softmax
// p_k = exp(l_k - max l) a_k / (sum_k exp(l_k - max l) a_k + 1e-8), and the reads sum_k p_k h_k, and
// sum_k p_k c_k when cs is given. Keeps e_k = exp(l_k - max l), the denominator and the argmax.
template <typename T>
void attend_row(const T* hs, const T* cs, int64_t j, int64_t b, int64_t B, int64_t H, int64_t S, const T* q,
                const T* gate, T* e, T* z, int64_t* top, T* read_h, T* read_c) {
  const T scale = T(1) / std::sqrt(T(H));
  for (int64_t k = 0; k < S; ++k) e[k] = dot(hs + ((j - 1 - k) * B + b) * H, q, H) * scale;
  *top = std::max_element(e, e + S) - e;
  const T largest = e[*top];
  T total = 0;
  for (int64_t k = 0; k < S; ++k) total += (e[k] = std::exp(e[k] - largest)) * gate[k];
  *z = total += T(1e-8);
  std::fill(read_h, read_h + H, T(0));
  if (cs) std::fill(read_c, read_c + H, T(0));
  for (int64_t k = 0; k < S; ++k) {
    const T p = e[k] * gate[k] / total;
    const int64_t row = (j - 1 - k) * B + b;
    const T* hk = hs + row * H;
#pragma omp simd
    for (int64_t x = 0; x < H; ++x) read_h[x] += p * hk[x];
    if (!cs) continue;
    const T* ck = cs + row * H;
#pragma omp simd
    for (int64_t x = 0; x < H; ++x) read_c[x] += p * ck[x];
  }
}

// The backward of `attend_row` given the gradients of its reads (d_read_c only when cs is given): adds to the
// gradients of the states d_hs (and d_cs), writes d_q [H] and d_gate [S]. `work` holds 3 S values.
template <typename T>
void attend_row_backward(const T* hs, const T* cs, T* d_hs, T* d_cs, int64_t j, int64_t b, int64_t B, int64_t H,
                         int64_t S, const T* q, const T* gate, const T* e, T z, int64_t top, const T* d_read_h,
                         const T* d_read_c, T* d_q, T* d_gate, T* work) {
  const T scale = T(1) / std::sqrt(T(H));
  T *p = work, *dp = work + S, *dl = work + 2 * S;
  // reads sum_k p_k (h_k, c_k): dp_k = <d read_h, h_k> + <d read_c, c_k>
  T dp_dot_p = 0;
  for (int64_t k = 0; k < S; ++k) {
    const int64_t row = (j - 1 - k) * B + b;
    p[k] = e[k] * gate[k] / z;
    dp[k] = dot(d_read_h, hs + row * H, H) + (cs ? dot(d_read_c, cs + row * H, H) : T(0));
    dp_dot_p += dp[k] * p[k];
  }
  // p_k = e_k a_k / z: d(e_k a_k) = (dp_k - <dp, p>) / z; then through a_k and exp(l_k - max l), where the
  // max is a function of the logits too (its gradient goes to the argmax, as autograd's max does).
  T dl_sum = 0;
  for (int64_t k = 0; k < S; ++k) {
    const T de = (dp[k] - dp_dot_p) / z;
    d_gate[k] = de * e[k];
    dl_sum += (dl[k] = de * e[k] * gate[k]);
  }
  dl[top] -= dl_sum;
  std::fill(d_q, d_q + H, T(0));
  for (int64_t k = 0; k < S; ++k) {  // l_k = <h_k, q> / sqrt(H)
    const int64_t row = (j - 1 - k) * B + b;
    const T *hk = hs + row * H, wl = dl[k] * scale, pk = p[k];
    T* dhk = d_hs + row * H;
#pragma omp simd
    for (int64_t x = 0; x < H; ++x) {
      d_q[x] += wl * hk[x];
      dhk[x] += pk * d_read_h[x] + wl * q[x];
    }
    if (!cs) continue;
    T* dck = d_cs + row * H;
#pragma omp simd
    for (int64_t x = 0; x < H; ++x) dck[x] += pk * d_read_c[x];
  }
}

// The reading layer's weights and layer-norm parameters, shared by forward and backward: H from w_query_h.
int64_t check_reading_weights(const Tensor& w_query_h, const Tensor& w_hh, const Tensor& hh_gamma,
                              const Tensor& c_gamma, const Tensor& c_beta, const Tensor& rmask, const char* fn) {
  check_float(w_query_h, 2, fn, "w_query_h");
  const int64_t H = w_query_h.size(0);
  check_tensor(w_query_h, w_query_h, {H, H}, false, fn, "w_query_h");
  check_tensor(w_hh, w_query_h, {4 * H, H}, false, fn, "w_hh");
  check_tensor(hh_gamma, w_query_h, {4 * H}, true, fn, "hh_gamma");
  check_tensor(c_gamma, w_query_h, {H}, true, fn, "c_gamma");
  check_tensor(c_beta, w_query_h, {H}, true, fn, "c_beta");
  check_tensor(rmask, w_query_h, {H}, true, fn, "rmask");
  return H;
}

// Mixed precision: the two weights in bfloat16, given together or not at all.
void check_low_weights(const c10::optional<Tensor>& w_query_low, const Tensor& w_query_h,
                       const c10::optional<Tensor>& w_hh_low, const Tensor& w_hh, const char* fn) {
  TORCH_CHECK(w_query_low.has_value() == w_hh_low.has_value(), fn,
              ": w_query_low and w_hh_low must be given together (mixed precision) or not at all");
  check_low_weight(w_query_low, w_query_h, fn, "w_query_low", "w_query_h");
  check_low_weight(w_hh_low, w_hh, fn, "w_hh_low", "w_hh");
}

// The features the recurrent dropout keeps: rmask [H] is one mask for the whole batch and every step, so a
// dropped feature of h~ * rmask is zero in every row and its column of U multiplies nothing. The hidden product
// runs over the kept columns alone (U [4H, K], K about H (1 - rdropout)): fewer FLOPs than the official code, the
// same values up to rounding (for finite weights: the PyTorch code's 0 * inf would be NaN). All features (no
// compaction) when none is dropped, or all are.
struct KeptFeatures {
  Tensor index;  // [K] int64, ascending
  bool compact;  // K < H: U and h~ * rmask are taken at `index` only
};

KeptFeatures kept_features(const Tensor& rmask) {
  const int64_t H = rmask.size(0);
  auto index = rmask.nonzero().flatten();
  const bool compact = index.size(0) > 0 && index.size(0) < H;
  return {compact ? index : at::arange(H, rmask.options().dtype(at::kLong)), compact};
}

// U, or its kept columns [4H, K] (also for its bfloat16 copy under mixed precision).
Tensor kept_columns(const Tensor& w, const KeptFeatures& kept) {
  return kept.compact ? w.index_select(1, kept.index) : w;
}

c10::optional<Tensor> kept_columns(const c10::optional<Tensor>& w, const KeptFeatures& kept) {
  return w.has_value() ? c10::optional<Tensor>(kept_columns(*w, kept)) : w;
}

}  // namespace

// gates_x [T, B, 4H] (the input projection, already layer-normalised), query_x [T, B, H] (its part of the
// query, with the bias), memory_gate [T, B, S], mem_h/mem_c [B, S, H] (slot 0 the most recent), w_query_h
// [H, H] (the query's hidden part), w_hh [4H, H], b_hh [4H], the two layer norms' gamma/beta, rmask [H]
// (on the hidden state read for the cell), h_masks/q_masks [T, B, H] (dropout on the query's input and
// output; None: no dropout), the layer norms' eps. With `keep`, also returns what `backward` needs. With
// `w_query_low` and `w_hh_low` (the two weights in bfloat16: mixed precision) the two per-step products run in
// bfloat16 (accumulated in float32 by the GEMM) and everything else in the weights' dtype.
// Returns the named tensors {hs, cs} and with keep also {hq, q, ex, z, amax, rhm, rc, hh_xhat, hh_stats, act,
// c_xhat, c_stats}, which `backward` reads by name.
Named forward(const Tensor& gates_x, const Tensor& query_x, const Tensor& memory_gate,
              const Tensor& mem_h, const Tensor& mem_c, const Tensor& w_query_h, const Tensor& w_hh,
              const Tensor& b_hh, const Tensor& hh_gamma, const Tensor& hh_beta,
              const Tensor& c_gamma, const Tensor& c_beta, const Tensor& rmask,
              const c10::optional<Tensor>& h_masks, const c10::optional<Tensor>& q_masks,
              double hh_eps, double c_eps, bool keep, const c10::optional<Tensor>& w_query_low,
              const c10::optional<Tensor>& w_hh_low) {
  const char* fn = "prpn forward";
  const int64_t H = check_reading_weights(w_query_h, w_hh, hh_gamma, c_gamma, c_beta, rmask, fn);
  check_low_weights(w_query_low, w_query_h, w_hh_low, w_hh, fn);
  check_float(memory_gate, 3, fn, "memory_gate");
  const int64_t steps = memory_gate.size(0), B = memory_gate.size(1), S = memory_gate.size(2);
  check_tensor(memory_gate, w_query_h, {steps, B, S}, true, fn, "memory_gate");
  check_tensor(gates_x, w_query_h, {steps, B, 4 * H}, true, fn, "gates_x");
  check_tensor(query_x, w_query_h, {steps, B, H}, true, fn, "query_x");
  check_tensor(mem_h, w_query_h, {B, S, H}, false, fn, "mem_h");
  check_tensor(mem_c, w_query_h, {B, S, H}, false, fn, "mem_c");
  check_tensor(b_hh, w_query_h, {4 * H}, true, fn, "b_hh");
  check_tensor(hh_beta, w_query_h, {4 * H}, true, fn, "hh_beta");
  check_optional(h_masks, w_query_h, {steps, B, H}, fn, "h_masks");
  check_optional(q_masks, w_query_h, {steps, B, H}, fn, "q_masks");
  const auto opts = gates_x.options();
  const int64_t kept = keep ? steps : 1;  // without keep, per-step buffers are reused
  auto hs = at::empty({S + steps, B, H}, opts), cs = at::empty({S + steps, B, H}, opts);
  hs.narrow(0, 0, S).copy_(mem_h.flip(1).transpose(0, 1));
  cs.narrow(0, 0, S).copy_(mem_c.flip(1).transpose(0, 1));
  auto hq = at::empty({kept, B, H}, opts), q = at::empty({kept, B, H}, opts);
  auto ex = at::empty({kept, B, S}, opts), z = at::empty({kept, B}, opts);
  auto amax = at::empty({kept, B}, opts.dtype(at::kLong));
  const auto features = kept_features(rmask);
  const int64_t K = features.index.size(0);
  // rhm: h~ * rmask at the K kept features
  auto rhm = at::empty({kept, B, K}, opts), rc = at::empty({kept, B, H}, opts);
  auto hh_xhat = at::empty({kept, B, 4 * H}, opts), act = at::empty({kept, B, 4 * H}, opts);
  auto c_xhat = at::empty({kept, B, H}, opts);
  auto hh_stats = at::empty({kept, B, 2}, opts), c_stats = at::empty({kept, B, 2}, opts);
  const auto hm = h_masks.has_value() ? h_masks->contiguous() : Tensor();
  const auto qm = q_masks.has_value() ? q_masks->contiguous() : Tensor();
  RecurrentProduct query_product(w_query_h, w_query_low, /*transposed=*/true, steps, B);  // h W_qh^T
  RecurrentProduct hidden_product(kept_columns(w_hh, features), kept_columns(w_hh_low, features),
                                  /*transposed=*/true, steps, B);  // (h~ * rmask) U^T over the kept features
  auto query = at::empty({B, H}, opts), hidden = at::empty({B, 4 * H}, opts);
  AT_DISPATCH_FLOATING_TYPES(gates_x.scalar_type(), "prpn_reading_forward", [&] {
    using T = scalar_t;
    const T *GX = gates_x.data_ptr<T>(), *QX = query_x.data_ptr<T>(), *MG = memory_gate.data_ptr<T>();
    const T *hg = hh_gamma.data_ptr<T>(), *hb = hh_beta.data_ptr<T>(), *BH = b_hh.data_ptr<T>();
    const T *cg = c_gamma.data_ptr<T>(), *cb = c_beta.data_ptr<T>(), *RM = rmask.data_ptr<T>();
    const T *HM = data_or_null<T>(hm), *QM = data_or_null<T>(qm);
    const int64_t* KEPT = features.index.data_ptr<int64_t>();
    T *HS = hs.data_ptr<T>(), *CS = cs.data_ptr<T>();
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t j = S + t, u = keep ? t : 0;  // u: this step's row in the kept buffers
      // q_t = W_q [x_t ; h_{t-1}]: the hidden part here, its input part in query_x.
      Tensor h_in = hs[j - 1];
      if (HM || keep) {
        h_in = hq[u];
        if (HM) at::mul_out(h_in, hs[j - 1], hm[t]);
        else h_in.copy_(hs[j - 1]);
      }
      query_product.multiply(h_in, Tensor(), query);
      const T* QW = query.data_ptr<T>();
      T *Q = q[u].data_ptr<T>(), *EX = ex[u].data_ptr<T>(), *Z = z[u].data_ptr<T>();
      int64_t* AM = amax[u].data_ptr<int64_t>();
      T *RHM = rhm[u].data_ptr<T>(), *RC = rc[u].data_ptr<T>();
      at::parallel_for(0, B, grain_for(H), [&](int64_t b0, int64_t b1) {
        std::vector<T> read_h(H);
        for (int64_t b = b0; b < b1; ++b) {
          const T *qx = QX + (t * B + b) * H, *qmask = QM ? QM + (t * B + b) * H : nullptr;
          T *qb = Q + b * H, *rh = RHM + b * K;
          for (int64_t x = 0; x < H; ++x) qb[x] = (QW[b * H + x] + qx[x]) * (qmask ? qmask[x] : T(1));
          attend_row(HS, CS, j, b, B, H, S, qb, MG + (t * B + b) * S, EX + b * S, Z + b, AM + b, read_h.data(),
                     RC + b * H);
          for (int64_t k = 0; k < K; ++k) rh[k] = read_h[KEPT[k]] * RM[KEPT[k]];  // the cell reads h~ * rmask
        }
      });
      hidden_product.multiply(rhm[u], Tensor(), hidden);  // U h~, [B, 4H]
      const T* PRE = hidden.data_ptr<T>();
      T *XH = hh_xhat[u].data_ptr<T>(), *ACT = act[u].data_ptr<T>(), *XC = c_xhat[u].data_ptr<T>();
      T *HST = hh_stats[u].data_ptr<T>(), *CST = c_stats[u].data_ptr<T>();
      at::parallel_for(0, B, grain_for(H), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          T* xh = XH + b * 4 * H;
          for (int64_t y = 0; y < 4 * H; ++y) xh[y] = PRE[b * 4 * H + y] + BH[y];
          const auto hh = normalise(xh, 4 * H, T(hh_eps));
          HST[2 * b] = hh.first, HST[2 * b + 1] = hh.second;
          const T *gx = GX + (t * B + b) * 4 * H, *crd = RC + b * H;
          T *a = ACT + b * 4 * H, *c = CS + (j * B + b) * H, *xc = XC + b * H, *h = HS + (j * B + b) * H;
SIMD
          for (int64_t x = 0; x < H; ++x) {
            // [i f g o] = LN(W x_t) + LN(U h~); c_t = s(f) c~ + s(i) tanh(g)
            const T i = sigmoid(gx[x] + hg[x] * xh[x] + hb[x]);
            const T f = sigmoid(gx[H + x] + hg[H + x] * xh[H + x] + hb[H + x]);
            const T g = std::tanh(gx[2 * H + x] + hg[2 * H + x] * xh[2 * H + x] + hb[2 * H + x]);
            const T o = sigmoid(gx[3 * H + x] + hg[3 * H + x] * xh[3 * H + x] + hb[3 * H + x]);
            a[x] = i, a[H + x] = f, a[2 * H + x] = g, a[3 * H + x] = o;
            xc[x] = c[x] = f * crd[x] + i * g;
          }
          const auto cn = normalise(xc, H, T(c_eps));
          CST[2 * b] = cn.first, CST[2 * b + 1] = cn.second;
SIMD
          for (int64_t x = 0; x < H; ++x) h[x] = a[3 * H + x] * std::tanh(cg[x] * xc[x] + cb[x]);  // h_t
        }
      });
    }
  });
  if (!keep) return {{"hs", hs}, {"cs", cs}};
  return {{"hs", hs},   {"cs", cs},   {"hq", hq},           {"q", q},        {"ex", ex},
          {"z", z},     {"amax", amax}, {"rhm", rhm},       {"rc", rc},      {"hh_xhat", hh_xhat},
          {"hh_stats", hh_stats}, {"act", act}, {"c_xhat", c_xhat}, {"c_stats", c_stats}};
}

// The backward of `forward` (run with keep), given the gradients of its hs and cs (each may be None) and the
// named tensors forward returned.
// Returns d_gates_x, d_query_x, d_memory_gate, d_mem_h, d_mem_c, d_w_query_h, d_w_hh, d_b_hh,
// d_hh_gamma, d_hh_beta, d_c_gamma, d_c_beta.
std::vector<Tensor> backward(const c10::optional<Tensor>& d_hs_in, const c10::optional<Tensor>& d_cs_in,
                             const Tensor& memory_gate, const Tensor& w_query_h, const Tensor& w_hh,
                             const Tensor& hh_gamma, const Tensor& c_gamma, const Tensor& c_beta,
                             const Tensor& rmask, const c10::optional<Tensor>& h_masks,
                             const c10::optional<Tensor>& q_masks, const Named& saved,
                             const c10::optional<Tensor>& w_query_low, const c10::optional<Tensor>& w_hh_low) {
  const char* fn = "prpn backward";
  const int64_t H = check_reading_weights(w_query_h, w_hh, hh_gamma, c_gamma, c_beta, rmask, fn);
  check_low_weights(w_query_low, w_query_h, w_hh_low, w_hh, fn);
  check_float(memory_gate, 3, fn, "memory_gate");
  const int64_t steps = memory_gate.size(0), B = memory_gate.size(1), S = memory_gate.size(2);
  check_tensor(memory_gate, w_query_h, {steps, B, S}, true, fn, "memory_gate");
  check_optional(h_masks, w_query_h, {steps, B, H}, fn, "h_masks");
  check_optional(q_masks, w_query_h, {steps, B, H}, fn, "q_masks");
  check_optional(d_hs_in, w_query_h, {S + steps, B, H}, fn, "d_hs");
  check_optional(d_cs_in, w_query_h, {S + steps, B, H}, fn, "d_cs");
  // What forward kept, by name, each checked against its shape.
  // (amax, the attention's argmax, is the one int64 tensor; the others have the dtype of the weights.)
  const auto get = [&](const char* name, at::IntArrayRef sizes, bool index = false) -> const Tensor& {
    const auto found = saved.find(name);
    TORCH_CHECK(found != saved.end(), fn, ": the saved tensors have no ", name, " (run forward with keep)");
    if (index) check_long(found->second, sizes, fn, name);
    else check_tensor(found->second, w_query_h, sizes, true, fn, name);
    return found->second;
  };
  const auto &hs = get("hs", {S + steps, B, H}), &cs = get("cs", {S + steps, B, H});
  const auto &hq = get("hq", {steps, B, H}), &q = get("q", {steps, B, H}), &ex = get("ex", {steps, B, S});
  const auto features = kept_features(rmask);
  const int64_t K = features.index.size(0);
  const auto &z = get("z", {steps, B}), &amax = get("amax", {steps, B}, true), &rhm = get("rhm", {steps, B, K});
  const auto &rc = get("rc", {steps, B, H}), &hh_xhat = get("hh_xhat", {steps, B, 4 * H});
  const auto &hh_stats = get("hh_stats", {steps, B, 2}), &act = get("act", {steps, B, 4 * H});
  const auto &c_xhat = get("c_xhat", {steps, B, H}), &c_stats = get("c_stats", {steps, B, 2});
  const auto opts = q.options();
  // The gradients of the states, completed step by step in reverse (every use of a state is a later step).
  auto d_hs = d_hs_in.has_value() ? d_hs_in->contiguous().clone() : at::zeros({S + steps, B, H}, opts);
  auto d_cs = d_cs_in.has_value() ? d_cs_in->contiguous().clone() : at::zeros({S + steps, B, H}, opts);
  auto d_gates_x = at::empty({steps, B, 4 * H}, opts), d_u = at::empty({steps, B, 4 * H}, opts);
  auto d_query_x = at::empty({steps, B, H}, opts);
  // the sums over steps and rows of d_b_hh, d_hh_gamma, d_hh_beta (4H each), d_c_gamma, d_c_beta (H each)
  PartialSums sums(B, grain_for(H), 14 * H, opts);
  auto d_memory_gate = at::empty({steps, B, S}, opts);
  auto d_rc = at::empty({B, H}, opts), d_rhm = at::empty({B, K}, opts), d_hq = at::empty({B, H}, opts);
  const auto hm = h_masks.has_value() ? h_masks->contiguous() : Tensor();
  const auto qm = q_masks.has_value() ? q_masks->contiguous() : Tensor();
  RecurrentProduct query_gradient(w_query_h, w_query_low, /*transposed=*/false, steps, B);  // d W_qh
  RecurrentProduct hidden_gradient(kept_columns(w_hh, features), kept_columns(w_hh_low, features),
                                   /*transposed=*/false, steps, B);  // d U, at the kept features
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "prpn_reading_backward", [&] {
    using T = scalar_t;
    const T *hg = hh_gamma.data_ptr<T>(), *cg = c_gamma.data_ptr<T>(), *cb = c_beta.data_ptr<T>();
    const T *RM = rmask.data_ptr<T>(), *MG = memory_gate.data_ptr<T>(), *QM = data_or_null<T>(qm);
    const int64_t* KEPT = features.index.data_ptr<int64_t>();
    const T *HS = hs.data_ptr<T>(), *CS = cs.data_ptr<T>();
    T *DHS = d_hs.data_ptr<T>(), *DCS = d_cs.data_ptr<T>(), *DRC = d_rc.data_ptr<T>();
    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t j = S + t;  // every use of state j is in a later step: its gradient is complete
      const T *ACT = act[t].data_ptr<T>(), *XC = c_xhat[t].data_ptr<T>(), *CST = c_stats[t].data_ptr<T>();
      const T *XH = hh_xhat[t].data_ptr<T>(), *HST = hh_stats[t].data_ptr<T>(), *RCD = rc[t].data_ptr<T>();
      T *DGX = d_gates_x[t].data_ptr<T>(), *DU = d_u[t].data_ptr<T>();
      sums.for_rows<T>([&](int64_t b0, int64_t b1, T* sum) {
        std::vector<T> g(4 * H), dx(4 * H), d_o(H);
        T *sum_b_hh = sum, *sum_hh_gamma = sum + 4 * H, *sum_hh_beta = sum + 8 * H;
        T *sum_c_gamma = sum + 12 * H, *sum_c_beta = sum + 13 * H;
        for (int64_t b = b0; b < b1; ++b) {
          const T *dh = DHS + (j * B + b) * H, *a = ACT + b * 4 * H, *xc = XC + b * H;
SIMD
          for (int64_t x = 0; x < H; ++x) {  // h = o tanh(n), n = LN(c)
            const T tn = std::tanh(cg[x] * xc[x] + cb[x]), o = a[3 * H + x];
            const T dn = dh[x] * o * (T(1) - tn * tn);
            d_o[x] = dh[x] * tn;
            g[x] = dn * cg[x];
            sum_c_gamma[x] += dn * xc[x], sum_c_beta[x] += dn;
          }
          normalise_backward(g.data(), xc, CST[2 * b], CST[2 * b + 1], H, dx.data());
          const T *dc_in = DCS + (j * B + b) * H, *crd = RCD + b * H;
          T *dgx = DGX + b * 4 * H, *drc = DRC + b * H;
SIMD
          for (int64_t x = 0; x < H; ++x) {  // c = s(f) c~ + s(i) tanh(g): through the gates' nonlinearities
            const T dc = dc_in[x] + dx[x];
            const T i = a[x], f = a[H + x], gg = a[2 * H + x], o = a[3 * H + x];
            dgx[x] = dc * gg * i * (T(1) - i);
            dgx[H + x] = dc * crd[x] * f * (T(1) - f);
            dgx[2 * H + x] = dc * i * (T(1) - gg * gg);
            dgx[3 * H + x] = d_o[x] * o * (T(1) - o);
            drc[x] = dc * f;
          }
          // The gates' pre-activation is LN(W x) + LN(U h~ + b): the same gradient reaches both layer norms.
          const T *xh = XH + b * 4 * H, *du = DU + b * 4 * H;
SIMD
          for (int64_t y = 0; y < 4 * H; ++y) {
            g[y] = dgx[y] * hg[y];
            sum_hh_gamma[y] += dgx[y] * xh[y], sum_hh_beta[y] += dgx[y];
          }
          normalise_backward(g.data(), xh, HST[2 * b], HST[2 * b + 1], 4 * H, DU + b * 4 * H);
SIMD
          for (int64_t y = 0; y < 4 * H; ++y) sum_b_hh[y] += du[y];
        }
      });
      hidden_gradient.multiply(d_u[t], Tensor(), d_rhm);  // gradient w.r.t. h~ * rmask, at the kept features
      const T *DRHM = d_rhm.data_ptr<T>(), *Q = q[t].data_ptr<T>(), *EX = ex[t].data_ptr<T>();
      const T* Z = z[t].data_ptr<T>();
      const int64_t* AM = amax[t].data_ptr<int64_t>();
      T *DQX = d_query_x[t].data_ptr<T>(), *DMG = d_memory_gate[t].data_ptr<T>();
      at::parallel_for(0, B, grain_for(H), [&](int64_t b0, int64_t b1) {
        std::vector<T> drh(H, T(0)), work(3 * S);  // d h~: zero at the dropped features
        for (int64_t b = b0; b < b1; ++b) {
          for (int64_t k = 0; k < K; ++k) drh[KEPT[k]] = DRHM[b * K + k] * RM[KEPT[k]];
          T* dq = DQX + b * H;
          attend_row_backward(HS, CS, DHS, DCS, j, b, B, H, S, Q + b * H, MG + (t * B + b) * S, EX + b * S, Z[b],
                              AM[b], drh.data(), DRC + b * H, dq, DMG + b * S, work.data());
          if (QM) {
            const T* qmask = QM + (t * B + b) * H;
            for (int64_t x = 0; x < H; ++x) dq[x] *= qmask[x];
          }
        }
      });
      // the query's input: h_{t-1} (masked)
      query_gradient.multiply(d_query_x[t], Tensor(), d_hq);
      if (hm.defined()) d_hs[j - 1].addcmul_(d_hq, hm[t]);
      else d_hs[j - 1].add_(d_hq);
    }
  });
  const int64_t rows = steps * B;
  // One [out, T*B] x [T*B, in] product per weight instead of T small ones accumulated.
  auto d_w_hh = weight_gradient(d_u.view({rows, 4 * H}), rhm.view({rows, K}), w_hh_low.has_value());
  if (features.compact)  // the dropped features' columns of U had no effect: their gradient is zero
    d_w_hh = at::zeros({4 * H, H}, opts).index_copy_(1, features.index, d_w_hh);
  auto d_w_query_h = weight_gradient(d_query_x.view({rows, H}), hq.view({rows, H}), w_query_low.has_value());
  const auto total = sums.total();
  const auto part = [&](int64_t from, int64_t size) { return total.narrow(0, from, size).clone(); };
  return {d_gates_x,
          d_query_x,
          d_memory_gate,
          d_hs.narrow(0, 0, S).flip(0).transpose(0, 1).contiguous(),
          d_cs.narrow(0, 0, S).flip(0).transpose(0, 1).contiguous(),
          d_w_query_h,
          d_w_hh,
          part(0, 4 * H),
          part(4 * H, 4 * H),
          part(8 * H, 4 * H),
          part(12 * H, H),
          part(13 * H, H)};
}

// The predict network's attention, all steps at once (it has no recurrence): history [S + T, B, H] in the
// absolute layout, query [T, B, H], memory_gate [T, B, S] -> {read [T, B, H], e [T, B, S], z [T, B],
// argmax [T, B]}, the last three for `attend_backward`.
std::vector<Tensor> attend_forward(const Tensor& history, const Tensor& query, const Tensor& memory_gate) {
  const char* fn = "prpn attend_forward";
  check_float(query, 3, fn, "query");
  check_float(memory_gate, 3, fn, "memory_gate");
  const int64_t steps = query.size(0), B = query.size(1), H = query.size(2), S = memory_gate.size(2);
  check_tensor(query, query, {steps, B, H}, true, fn, "query");
  check_tensor(memory_gate, query, {steps, B, S}, true, fn, "memory_gate");
  check_tensor(history, query, {S + steps, B, H}, true, fn, "history");
  const auto opts = query.options();
  auto read = at::empty({steps, B, H}, opts), e = at::empty({steps, B, S}, opts);
  auto z = at::empty({steps, B}, opts);
  auto top = at::empty({steps, B}, opts.dtype(at::kLong));
  AT_DISPATCH_FLOATING_TYPES(query.scalar_type(), "prpn_attend_forward", [&] {
    using T = scalar_t;
    const T *HS = history.data_ptr<T>(), *Q = query.data_ptr<T>(), *MG = memory_gate.data_ptr<T>();
    T *R = read.data_ptr<T>(), *E = e.data_ptr<T>(), *Z = z.data_ptr<T>();
    int64_t* TOP = top.data_ptr<int64_t>();
    at::parallel_for(0, steps * B, grain_for(H), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)  // row r = t * B + b
        attend_row<T>(HS, nullptr, S + r / B, r % B, B, H, S, Q + r * H, MG + r * S, E + r * S, Z + r, TOP + r,
                      R + r * H, nullptr);
    });
  });
  return {read, e, z, top};
}

// Its backward: -> {d_history, d_query, d_memory_gate}.
std::vector<Tensor> attend_backward(const Tensor& d_read, const Tensor& history, const Tensor& query,
                                    const Tensor& memory_gate, const Tensor& e, const Tensor& z, const Tensor& top) {
  const char* fn = "prpn attend_backward";
  check_float(query, 3, fn, "query");
  check_float(memory_gate, 3, fn, "memory_gate");
  const int64_t steps = query.size(0), B = query.size(1), H = query.size(2), S = memory_gate.size(2);
  check_tensor(query, query, {steps, B, H}, true, fn, "query");
  check_tensor(memory_gate, query, {steps, B, S}, true, fn, "memory_gate");
  check_tensor(history, query, {S + steps, B, H}, true, fn, "history");
  check_tensor(d_read, query, {steps, B, H}, false, fn, "d_read");
  check_tensor(e, query, {steps, B, S}, true, fn, "e");
  check_tensor(z, query, {steps, B}, true, fn, "z");
  check_long(top, {steps, B}, fn, "top");
  auto d_history = at::zeros_like(history), d_query = at::empty_like(query);
  auto d_gate = at::empty_like(memory_gate);
  const auto dr = d_read.contiguous();
  AT_DISPATCH_FLOATING_TYPES(query.scalar_type(), "prpn_attend_backward", [&] {
    using T = scalar_t;
    const T *HS = history.data_ptr<T>(), *Q = query.data_ptr<T>(), *MG = memory_gate.data_ptr<T>();
    const T *E = e.data_ptr<T>(), *Z = z.data_ptr<T>(), *DR = dr.data_ptr<T>();
    const int64_t* TOP = top.data_ptr<int64_t>();
    T *DH = d_history.data_ptr<T>(), *DQ = d_query.data_ptr<T>(), *DG = d_gate.data_ptr<T>();
    // Rows of different steps add to the same states: split the work by batch row, never by step.
    at::parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
      std::vector<T> work(3 * S);
      for (int64_t b = b0; b < b1; ++b)
        for (int64_t t = 0; t < steps; ++t) {
          const int64_t r = t * B + b;
          attend_row_backward<T>(HS, nullptr, DH, nullptr, S + t, b, B, H, S, Q + r * H, MG + r * S, E + r * S,
                                 Z[r], TOP[r], DR + r * H, nullptr, DQ + r * H, DG + r * S, work.data());
        }
    });
  });
  return {d_history, d_query, d_gate};
}

// PRPN's layer norm over the last dimension of x [N, F] (see `normalise`): -> {y, xhat, stats [N, 2]}.
std::vector<Tensor> layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  const char* fn = "prpn layer_norm_forward";
  check_float(x, x.dim(), fn, "x");
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0, fn, ": x must have a last dimension of features, got ",
              shape_text(x.sizes()));
  const int64_t F = x.size(-1), N = x.numel() / F;
  check_tensor(gamma, x, {F}, true, fn, "gamma");
  check_tensor(beta, x, {F}, true, fn, "beta");
  auto xhat = x.clone(at::MemoryFormat::Contiguous), y = at::empty_like(xhat);
  auto stats = at::empty({N, 2}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "prpn_layer_norm_forward", [&] {
    using T = scalar_t;
    const T *G = gamma.data_ptr<T>(), *BT = beta.data_ptr<T>();
    T *XH = xhat.data_ptr<T>(), *Y = y.data_ptr<T>(), *ST = stats.data_ptr<T>();
    at::parallel_for(0, N, grain_for(F), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        T *xh = XH + r * F, *yr = Y + r * F;
        const auto st = normalise(xh, F, T(eps));
        ST[2 * r] = st.first, ST[2 * r + 1] = st.second;
SIMD
        for (int64_t j = 0; j < F; ++j) yr[j] = G[j] * xh[j] + BT[j];
      }
    });
  });
  return {y, xhat, stats};
}

// Its backward: -> {dx, d_gamma, d_beta}.
std::vector<Tensor> layer_norm_backward(const Tensor& dy, const Tensor& xhat, const Tensor& stats,
                                        const Tensor& gamma) {
  const char* fn = "prpn layer_norm_backward";
  check_float(xhat, xhat.dim(), fn, "xhat");
  TORCH_CHECK(xhat.dim() >= 1 && xhat.is_contiguous(), fn, ": xhat must be contiguous with a last dimension");
  const int64_t F = xhat.size(-1), N = xhat.numel() / F;
  check_tensor(dy, xhat, xhat.sizes(), false, fn, "dy");
  check_tensor(stats, xhat, {N, 2}, true, fn, "stats");
  check_tensor(gamma, xhat, {F}, true, fn, "gamma");
  const auto d = dy.contiguous();
  auto dx = at::empty_like(xhat);
  PartialSums sums(N, grain_for(F), 2 * F, xhat.options());  // d_gamma, d_beta
  AT_DISPATCH_FLOATING_TYPES(xhat.scalar_type(), "prpn_layer_norm_backward", [&] {
    using T = scalar_t;
    const T *G = gamma.data_ptr<T>(), *XH = xhat.data_ptr<T>(), *ST = stats.data_ptr<T>(), *D = d.data_ptr<T>();
    T* DX = dx.data_ptr<T>();
    sums.for_rows<T>([&](int64_t r0, int64_t r1, T* d_gamma) {
      std::vector<T> g(F);
      T* d_beta = d_gamma + F;
      for (int64_t r = r0; r < r1; ++r) {
        const T *dr = D + r * F, *xh = XH + r * F;
SIMD
        for (int64_t j = 0; j < F; ++j) {
          g[j] = dr[j] * G[j];
          d_gamma[j] += dr[j] * xh[j], d_beta[j] += dr[j];
        }
        normalise_backward(g.data(), xh, ST[2 * r], ST[2 * r + 1], F, DX + r * F);
      }
    });
  });
  const auto total = sums.total();
  return {dx, total.narrow(0, 0, F).clone(), total.narrow(0, F, F).clone()};
}

// Dropout masks (0 or 1 / (1 - p), p the probability of a zero) of `numel` values, from a counter-based
// generator (splitmix64 of seed + index: each 64-bit value gives two 24-bit uniforms, like torch.rand's
// floats), several times faster than torch.rand on the CPU; the seed comes from torch's generator, so the
// masks follow torch.manual_seed and a checkpoint's RNG state.
Tensor dropout_mask(const std::vector<int64_t>& shape, double p, int64_t seed, const Tensor& like) {
  check_float(like, like.dim(), "prpn dropout_mask", "like");
  TORCH_CHECK(p >= 0 && p < 1, "prpn dropout_mask: p must be in [0, 1), got ", p);
  auto mask = at::empty(shape, like.options());
  const int64_t n = mask.numel();
  const uint32_t threshold = static_cast<uint32_t>(std::ceil(p * 16777216.0));  // u >= p <=> bits >= this
  const auto bits = [seed](int64_t i) {  // splitmix64 of the counter
    uint64_t z = static_cast<uint64_t>(seed) + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  AT_DISPATCH_FLOATING_TYPES(mask.scalar_type(), "prpn_dropout_mask", [&] {
    using T = scalar_t;
    T* M = mask.data_ptr<T>();
    const T keep = T(1) / T(1 - p);
    // The loop takes its own copies of what it reads (captured by value): through references the compiler must
    // assume the stores to M may change them, and does not vectorise the loop (several times slower).
    at::parallel_for(0, n / 2, 16384, [M, keep, threshold, bits](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const uint64_t z = bits(i);
        M[2 * i] = static_cast<uint32_t>(z >> 40) >= threshold ? keep : T(0);
        M[2 * i + 1] = (static_cast<uint32_t>(z >> 16) & 0xFFFFFFu) >= threshold ? keep : T(0);
      }
    });
    if (n % 2) M[n - 1] = static_cast<uint32_t>(bits(n / 2) >> 40) >= threshold ? keep : T(0);
  });
  return mask;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.def("forward", &forward, "PRPN reading layer over a segment");
  module.def("backward", &backward, "backward of the PRPN reading layer over a segment");
  module.def("attend_forward", &attend_forward, "the predict network's attention over a segment");
  module.def("attend_backward", &attend_backward, "its backward");
  module.def("layer_norm_forward", &layer_norm_forward, "PRPN's layer norm");
  module.def("layer_norm_backward", &layer_norm_backward, "its backward");
  module.def("dropout_mask", &dropout_mask, "dropout masks from a counter-based generator");
}
