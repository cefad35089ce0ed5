// One step of a Llama-family (Gemma 3, Qwen3, Qwen3-MoE) decoder for a few rows, each one token at its own position (a
// decoding sequence's next token, or one of a prefill chunk's, whose rows all write their keys
// and values before any row of the layer attends):
// per layer RMSNorm -> fused q/k/v -> RoPE -> KV write into the paged cache -> grouped-query
// attention over each row's blocks -> o_proj + residual -> RMSNorm -> gate/up -> SwiGLU ->
// down + residual; then the final RMSNorm. Gemma 3 adds per-head q/k norms before RoPE, norms of
// the attention's and the MLP's outputs, GELU for SiLU, and windowed layers that see the last
// `window` positions through their own pool's block tables. Qwen3-MoE's layers of experts run
// moe.inc in place of the dense MLP. The same arithmetic as the torch modules
// (layers/*.py) in fp32, in another summation order; the matrices run the native kernels.

#include "decode.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace mcp_kernels {
namespace {

// A row's attention to more than kPartPositions positions (rounded up to whole blocks) is
// split into parts of that many, one task each, and the parts combined after: with 2 threads
// and SmolLM2's 3 kv heads, a lone long row otherwise left one thread 2 heads' work and the
// other 1. Shorter rows are one task per kv head, as before. The split depends on the row's
// length alone, so a row's result does not depend on what shares its step.
constexpr int64_t kPartPositions = 256;

// One attention task: row m's query heads that share kv head h, positions from..last, one of
// the row's `parts` parts (1: the whole row); positions before visible_from are hidden.
struct AttentionTask {
  int64_t m, h, parts, from, last, visible_from;
};

// A kind of layer's attention tasks: the global layers' (every position) or the windowed ones'.
struct TaskList {
  std::vector<AttentionTask> tasks;
  std::vector<int64_t> split_groups;  // the first task of each (row, kv head) split in parts

  // Row m sees positions visible..p (visible = 0, or the window's start); its parts begin at
  // visible's block and are kPartPositions long (whole blocks), so the split depends on the row alone.
  void build(const ModelDims& d, const StepRows& rows, int64_t window) {
    tasks.clear();
    split_groups.clear();
    const int64_t part = std::max<int64_t>(1, (kPartPositions + d.block_size - 1) / d.block_size) * d.block_size;
    for (int64_t m = 0; m < rows.M; ++m) {
      const int64_t p = rows.positions[m], visible = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
      const int64_t start = visible / d.block_size * d.block_size, parts = (p - start) / part + 1;
      for (int64_t h = 0; h < d.kv_heads; ++h) {
        if (parts > 1) split_groups.push_back(static_cast<int64_t>(tasks.size()));
        for (int64_t c = 0; c < parts; ++c)
          tasks.push_back({m, h, parts, start + c * part, std::min(p, start + (c + 1) * part - 1), visible});
      }
    }
  }
};

// Scratch reused across steps: a step allocates nothing once the shapes were seen.
struct Scratch {
  std::vector<float> normed, qkv, attn, gate_up, act, proj, scores, part_outs, part_stats;
  std::vector<float> logits, pair_gate_up, pair_act, pair_out;  // layers of experts (moe.inc)
  TaskList global, windowed;
  void fit(const ModelDims& d, const StepRows& rows, int64_t max_len) {
    const int64_t M = rows.M;
    normed.resize(M * std::max(d.hidden, d.intermediate));
    qkv.resize(M * (d.heads + 2 * d.kv_heads) * d.head_dim);
    attn.resize(M * d.heads * d.head_dim);
    gate_up.resize(M * 2 * d.intermediate);
    act.resize(M * d.intermediate);
    proj.resize(M * d.hidden);
    scores.resize(M * d.heads * max_len);
    global.build(d, rows, 0);
    windowed.build(d, rows, d.window);
    const int64_t group = d.heads / d.kv_heads;
    const size_t most = std::max(global.tasks.size(), windowed.tasks.size());
    part_outs.resize(most * group * d.head_dim);
    part_stats.resize(most * group * 2);
    const int64_t pairs = M * d.top_k, I = d.expert_intermediate;  // (row, chosen expert) pairs
    logits.resize(M * d.num_experts);
    pair_gate_up.resize(pairs * 2 * I);
    pair_act.resize(pairs * I);
    pair_out.resize(pairs * d.hidden);
  }
};

// out = weight * (x * rsqrt(mean(x^2) + eps)), per row of [M, n]
void rms_norm(const float* x, const float* weight, int64_t M, int64_t n, float eps, float* out) {
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * n;
    const float inverse = 1.0f / std::sqrt(dot_f32(row, row, n) / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) out[m * n + i] = weight[i] * (row[i] * inverse);
  }
}

// Rotate-half RoPE of one head [D] in place: x * cos + (x2, x1) * sin_signed
void rotate(float* head, const float* cos, const float* sin_signed, int64_t D) {
  float swapped[512];
  const int64_t half = D / 2;
  for (int64_t j = 0; j < half; ++j) {
    swapped[j] = head[j + half];
    swapped[j + half] = head[j];
  }
  for (int64_t j = 0; j < D; ++j) head[j] = head[j] * cos[j] + swapped[j] * sin_signed[j];
}

// Row m's block table in the layer's pool.
const int64_t* table_of(const LayerRef& layer, const StepRows& rows, int64_t m) {
  return layer.windowed ? rows.local_tables + m * rows.local_max_blocks : rows.tables + m * rows.max_blocks;
}

// The q/k norms (Gemma 3) and RoPE on every q and k head of row m, then its k and v into the
// cache slot of its position (rounded to halves for a cache of halves).
void rope_and_write(const ModelDims& d, const LayerRef& layer, const StepRows& rows, float* qkv, int64_t m) {
  const int64_t D = d.head_dim, width = (d.heads + 2 * d.kv_heads) * D;
  const int64_t p = rows.positions[m];
  float* row = qkv + m * width;
  if (layer.q_norm != nullptr) {
    rms_norm(row, layer.q_norm, d.heads, D, d.eps, row);  // in place: each value read before it is written
    rms_norm(row + d.heads * D, layer.k_norm, d.kv_heads, D, d.eps, row + d.heads * D);
  }
  const int64_t R = d.rotary_dim;  // the first R dims of each head turn, rotate-half among themselves
  const float* cos = (layer.windowed ? d.local_cos : d.cos) + p * R;
  const float* sin_signed = (layer.windowed ? d.local_sin_signed : d.sin_signed) + p * R;
  for (int64_t h = 0; h < d.heads + d.kv_heads; ++h) rotate(row + h * D, cos, sin_signed, R);
  const int64_t block = table_of(layer, rows, m)[p / d.block_size];
  const int64_t slot = (block * d.block_size + p % d.block_size) * d.kv_heads * D, n = d.kv_heads * D;
  const float* k = row + d.heads * D;
  const float* v = k + n;
  if (d.kv_f16) {
    to_halves(k, static_cast<uint16_t*>(layer.keys) + slot, n);
    to_halves(v, static_cast<uint16_t*>(layer.values) + slot, n);
  } else {
    std::copy(k, k + n, static_cast<float*>(layer.keys) + slot);
    std::copy(v, v + n, static_cast<float*>(layer.values) + slot);
  }
}

// Task t of the step's attention: the query heads of row m that share kv head h,
// softmax(q . k_t / sqrt(D)) over the row's visible positions t <= p, times v_t, into
// s.attn; or, for a part of a long row, its unnormalized sums and stats (attend_group_part).
// Scratch scores: the group's [heads / kv_heads, max_len] rows of s.scores, a part's from
// its first position on.
void attend(const ModelDims& d, const LayerRef& layer, const StepRows& rows, Scratch& s, int64_t t,
            int64_t max_len) {
  const AttentionTask& task = (layer.windowed ? s.windowed : s.global).tasks[t];
  const int64_t D = d.head_dim, width = (d.heads + 2 * d.kv_heads) * D, group = d.heads / d.kv_heads;
  const int64_t first_head = task.m * d.heads + task.h * group;
  GroupAttention a{s.qkv.data() + task.m * width + task.h * group * D, layer.keys, layer.values,
                   table_of(layer, rows, task.m), d.block_size, d.kv_heads, task.h, group, D, task.last,
                   d.attn_scale, task.from, d.kv_f16, task.visible_from};
  float* scores = s.scores.data() + first_head * max_len + task.from * group;
  if (task.parts == 1) {
    attend_group(a, scores, s.attn.data() + first_head * D);
  } else {
    attend_group_part(a, scores, s.part_outs.data() + t * group * D, s.part_stats.data() + t * group * 2);
  }
}

// The threads of one step: a step runs inside one OpenMP parallel region, its phases
// separated by barriers, where a region per matrix product forked and joined the team 4
// times a layer. Work is shared statically: item i of a phase goes to thread i % size.
struct Team {
  int index, size;
  bool mine(int64_t item) const { return item % size == index; }
  bool owns_any(int64_t first, int64_t count) const {  // of items first .. first + count - 1
    for (int64_t item = first; item < first + std::min<int64_t>(count, size); ++item)
      if (mine(item)) return true;
    return false;
  }
  void barrier() const {
    if (size > 1) {
#pragma omp barrier
    }
  }
};

// Rows [n0, n1) of a stacked matrix: each part's rows through its own kernel, into its
// columns of out (prepared: matmul()'s arguments for the whole matrix, x prepared once).
void matrix_rows(const MatmulArgs& prepared, const MatrixRef& w, int64_t n0, int64_t n1) {
  int64_t first = 0;
  for (int64_t p = 0; p < w.parts; ++p) {
    const MatrixPart& part = w.part[p];
    const int64_t lo = std::max(n0, first), hi = std::min(n1, first + part.rows);
    if (lo < hi) {
      MatmulArgs a = prepared;
      a.kind = part.kind;
      a.codes = part.codes;
      a.qparams = part.qparams;
      a.qparams_f16 = part.qparams_f16;
      a.N = part.rows;
      a.out = static_cast<float*>(prepared.out) + first;
      a.out_stride = prepared.N;
      matmul_rows(a, lo - first, hi - first);
    }
    first += part.rows;
  }
}

// This thread's chunks of W's rows (kernels.h, row_chunks: one contiguous run per thread):
// out[m, n] = x[m] . W[n] for every row m and each n of the chunk, then fn(n0, n1) on it.
// Chunk c is the phase's item first_item + c (a layer of experts numbers its experts' chunks on).
template <class Fn>
void project(const Team& team, const MatrixRef& w, const float* x, int64_t M, float* out, int x_digits,
             int64_t rows_shared, int64_t first_item, const Fn& fn) {
  const MatrixPart& first = w.part[0];
  const MatmulArgs args = prepare_matmul(
      MatmulArgs{first.kind, x, M, w.K, w.N, nullptr, first.codes, first.qparams, first.qparams_f16, out, false,
                 x_digits});
  const int64_t chunks = row_chunks(rows_shared, team.size);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    if (!team.mine(first_item + chunk)) continue;
    const auto [n0, n1] = row_chunk(rows_shared, chunks, chunk);
    if (n0 < n1) fn(args, n0, n1);
  }
}

// torch's F.gelu(x, approximate="tanh"): 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
inline float gelu_tanh(float x) {
  constexpr float kBeta = 0.7978845608028654f, kKappa = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kBeta * (x + kKappa * x * x * x)));
}

// The gated activation of one gate and up value: SwiGLU, or Gemma's GeGLU
inline float glu(const ModelDims& d, float gate, float up) {
  return (d.gelu ? gelu_tanh(gate) : gate / (1.0f + std::exp(-gate))) * up;
}

// x += in . W^T (o or down), or with an output norm (Gemma 3) x += norm(in . W^T): without
// one, each thread adds its own columns as it computes them; with one, a row's whole
// projection is normalized first, so the rows are added after a barrier, a row per thread.
// Ends with a barrier: the next phase reads every column of x.
void project_to_x(const Team& team, const ModelDims& d, const MatrixRef& w, const float* out_norm, const float* in,
                  const StepRows& rows, Scratch& s, int x_digits) {
  const int64_t M = rows.M, H = d.hidden;
  project(team, w, in, M, s.proj.data(), x_digits, H, 0, [&](const MatmulArgs& a, int64_t n0, int64_t n1) {
    matrix_rows(a, w, n0, n1);
    if (out_norm == nullptr)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = n0; n < n1; ++n) rows.x[m * H + n] += s.proj[m * H + n];
  });
  team.barrier();
  if (out_norm == nullptr) return;
  for (int64_t m = 0; m < M; ++m)
    if (team.mine(m)) {
      float* row = s.proj.data() + m * H;
      rms_norm(row, out_norm, 1, H, d.eps, row);
      for (int64_t n = 0; n < H; ++n) rows.x[m * H + n] += row[n];
    }
  team.barrier();
}

#include "moe.inc"

void run_layer(const Team& team, const ModelDims& d, const LayerRef& layer, const StepRows& rows, Scratch& s,
               int64_t max_len, int x_digits) {
  const int64_t M = rows.M, H = d.hidden, I = d.intermediate;
  const int64_t width = (d.heads + 2 * d.kv_heads) * d.head_dim;
  // Every thread normalizes x for itself (a few hundred floats a row), so no barrier waits for it.
  static thread_local std::vector<float> normed;
  normed.resize(M * H);
  rms_norm(rows.x, layer.input_norm, M, H, d.eps, normed.data());
  project(team, layer.qkv, normed.data(), M, s.qkv.data(), x_digits, width, 0,
          [&](const MatmulArgs& a, int64_t n0, int64_t n1) {
            matrix_rows(a, layer.qkv, n0, n1);
            if (layer.qkv_bias != nullptr)
              for (int64_t m = 0; m < M; ++m)
                for (int64_t n = n0; n < n1; ++n) s.qkv[m * width + n] += layer.qkv_bias[n];
          });
  team.barrier();
  for (int64_t m = 0; m < M; ++m)
    if (team.mine(m)) rope_and_write(d, layer, rows, s.qkv.data(), m);
  team.barrier();  // a chunk's rows attend to each other's keys: all written first
  const TaskList& list = layer.windowed ? s.windowed : s.global;
  const int64_t num_tasks = static_cast<int64_t>(list.tasks.size());
  for (int64_t t = 0; t < num_tasks; ++t)
    if (team.mine(t)) attend(d, layer, rows, s, t, max_len);
  team.barrier();
  if (!list.split_groups.empty()) {  // the parts of long rows, combined
    const int64_t group = d.heads / d.kv_heads, D = d.head_dim;
    for (int64_t i = 0; i < static_cast<int64_t>(list.split_groups.size()); ++i) {
      if (!team.mine(i)) continue;
      const int64_t first = list.split_groups[i];
      const AttentionTask& task = list.tasks[first];
      combine_parts(s.part_outs.data() + first * group * D, s.part_stats.data() + first * group * 2, task.parts,
                    group, D, s.attn.data() + (task.m * d.heads + task.h * group) * D);
    }
    team.barrier();
  }
  project_to_x(team, d, layer.o, layer.attn_out_norm, s.attn.data(), rows, s, x_digits);
  rms_norm(rows.x, layer.post_norm, M, H, d.eps, normed.data());
  if (layer.experts.router != nullptr) return run_experts(team, d, layer, normed.data(), rows, s, x_digits);
  // gate rows [i0, i1) and their up rows [I + i0, I + i1) in one thread, SwiGLU on them there
  project(team, layer.gate_up, normed.data(), M, s.gate_up.data(), x_digits, I, 0,
          [&](const MatmulArgs& a, int64_t i0, int64_t i1) {
            matrix_rows(a, layer.gate_up, i0, i1);
            matrix_rows(a, layer.gate_up, I + i0, I + i1);
            for (int64_t m = 0; m < M; ++m) {
              const float* gate = s.gate_up.data() + m * 2 * I;
              for (int64_t i = i0; i < i1; ++i) s.act[m * I + i] = glu(d, gate[i], gate[I + i]);
            }
          });
  team.barrier();
  project_to_x(team, d, layer.down, layer.mlp_out_norm, s.act.data(), rows, s, x_digits);
}

void run_layers(const Team& team, const ModelDims& d, const LayerRef* layers, int64_t num_layers,
                const StepRows& rows, Scratch& s, int64_t max_len, int x_digits) {
  for (int64_t i = 0; i < num_layers; ++i) run_layer(team, d, layers[i], rows, s, max_len, x_digits);
  if (team.index == 0) {
    rms_norm(rows.x, d.final_norm, rows.M, d.hidden, d.eps, s.normed.data());
    std::copy(s.normed.begin(), s.normed.begin() + rows.M * d.hidden, rows.x);
  }
}

// Whole blocks of K for each part's kind (GGUF's K-quants: 256 weights, the others 32).
int64_t block_weights(WeightKind kind) {
  return kind == WeightKind::kQ5K || kind == WeightKind::kQ6K || kind == WeightKind::kQ4K || kind == WeightKind::kQ4Kx16 ||
                 kind == WeightKind::kQ6Kx16 || kind == WeightKind::kQ5Kx16
             ? 256
             : kGroup;
}

std::string check_matrix(const char* name, int64_t layer, const MatrixRef& w, int64_t N, int64_t K) {
  const std::string where = "layer " + std::to_string(layer) + " " + name;
  if (w.parts < 1 || w.parts > kMaxParts) return where + ": 1 to 3 parts, got " + std::to_string(w.parts);
  int64_t rows = 0;
  for (int64_t p = 0; p < w.parts; ++p) {
    const MatrixPart& part = w.part[p];
    if (static_cast<int>(part.kind) < 0 || static_cast<int>(part.kind) > kLastKind)
      return where + ": unknown weight kind " + std::to_string(static_cast<int>(part.kind));
    const bool own_params = part.kind == WeightKind::kInt4 || part.kind == WeightKind::kInt8;
    if (part.codes == nullptr || (own_params && part.qparams == nullptr) || part.rows < 1 ||
        K % block_weights(part.kind) != 0)
      return where + " part " + std::to_string(p) + " lacks its codes or parameters, or K = " + std::to_string(K) +
             " is not whole blocks of its kind";
    if (is_row16_kind(part.kind) && (rows % kTileRows != 0 || part.rows % kTileRows != 0))
      return where + " part " + std::to_string(p) + " is interleaved 16 rows at a time but does not span whole tiles";
    rows += part.rows;
  }
  if (w.N == N && w.K == K && rows == N) return "";
  return where + " is [" + std::to_string(w.N) + " (parts: " + std::to_string(rows) + "), " + std::to_string(w.K) +
         "], the model needs [" + std::to_string(N) + ", " + std::to_string(K) + "]";
}

// Row m's entries first_block..p / block_size of a table [M, width] name blocks in -1..num_blocks - 1,
// the last one kept (the row writes its position there).
std::string check_table(const char* name, const int64_t* tables, int64_t width, int64_t num_blocks,
                        int64_t first_block, int64_t m, int64_t p, int64_t block_size) {
  const std::string row = std::string(name) + " row " + std::to_string(m) + ": ";
  if (p / block_size >= width)
    return row + "position " + std::to_string(p) + " is past its " + std::to_string(width) + " blocks";
  for (int64_t b = first_block; b <= p / block_size; ++b) {
    const int64_t block = tables[m * width + b];
    if (block < -1 || block >= num_blocks)
      return row + "block " + std::to_string(block) + " outside -1.." + std::to_string(num_blocks - 1);
  }
  if (tables[m * width + p / block_size] < 0) return row + "position " + std::to_string(p) + " falls in a dropped block";
  return "";
}

// A layer of experts: 1 <= top_k <= num_experts, each expert's gate_up and down of the experts'
// width, no output norm (moe.inc adds the experts' sum as it is).
std::string check_experts(const ModelDims& d, int64_t layer, const LayerRef& l) {
  const std::string where = "layer " + std::to_string(layer);
  if (d.num_experts < 1 || d.top_k < 1 || d.top_k > d.num_experts || d.expert_intermediate < 1 ||
      l.experts.gate_up == nullptr || l.experts.down == nullptr || l.mlp_out_norm != nullptr)
    return where + " has experts: the dims need 1 <= top_k <= num_experts and an expert_intermediate, the layer "
                   "its experts' matrices and no MLP output norm";
  for (int64_t e = 0; e < d.num_experts; ++e) {
    const std::string name = "expert " + std::to_string(e);
    for (const std::string& problem :
         {check_matrix((name + " gate_up").c_str(), layer, l.experts.gate_up[e], 2 * d.expert_intermediate, d.hidden),
          check_matrix((name + " down").c_str(), layer, l.experts.down[e], d.hidden, d.expert_intermediate)})
      if (!problem.empty()) return problem;
  }
  return "";
}

std::string check_rows(const ModelDims& d, const StepRows& rows) {
  if (rows.M < 1 || rows.M > 256) return "a decode step takes 1 to 256 rows, got " + std::to_string(rows.M);
  for (int64_t m = 0; m < rows.M; ++m) {
    const int64_t p = rows.positions[m];
    if (p < 0 || p >= d.max_positions)
      return "row " + std::to_string(m) + ": position " + std::to_string(p) + " outside 0.." +
             std::to_string(d.max_positions - 1);
    std::string problem = check_table("tables", rows.tables, rows.max_blocks, d.num_blocks, 0, m, p, d.block_size);
    if (problem.empty() && d.window > 0)
      problem = check_table("local_tables", rows.local_tables, rows.local_max_blocks, d.local_num_blocks,
                            std::max<int64_t>(0, p - d.window + 1) / d.block_size, m, p, d.block_size);
    if (!problem.empty()) return problem;
  }
  return "";
}

}  // namespace

std::string check_step(const ModelDims& d, const LayerRef* layers, int64_t num_layers, const StepRows& rows) {
  if (d.heads < 1 || d.kv_heads < 1 || d.heads % d.kv_heads != 0 || d.head_dim % 2 != 0 || d.head_dim > 512 ||
      d.block_size < 1 || num_layers < 1 || !(d.attn_scale > 0.0f) || d.window < 0 || d.rotary_dim < 2 ||
      d.rotary_dim > d.head_dim || d.rotary_dim % 2 != 0)
    return "model dims: heads must be a multiple of kv heads, head_dim even and at most 512, a layer and a block, "
           "a positive attention scale, a window >= 0 and an even rotary_dim of 2..head_dim";
  const int64_t qkv = (d.heads + 2 * d.kv_heads) * d.head_dim;
  for (int64_t i = 0; i < num_layers; ++i) {
    const LayerRef& l = layers[i];
    for (const std::string& problem :
         {check_matrix("qkv", i, l.qkv, qkv, d.hidden), check_matrix("o", i, l.o, d.hidden, d.heads * d.head_dim),
          l.experts.router != nullptr ? check_experts(d, i, l) : check_matrix("gate_up", i, l.gate_up,
                                                                               2 * d.intermediate, d.hidden),
          l.experts.router != nullptr ? "" : check_matrix("down", i, l.down, d.hidden, d.intermediate)})
      if (!problem.empty()) return problem;
    if (l.keys == nullptr || l.values == nullptr || l.input_norm == nullptr || l.post_norm == nullptr)
      return "layer " + std::to_string(i) + " lacks its norms or its KV cache";
    if ((l.q_norm == nullptr) != (l.k_norm == nullptr))
      return "layer " + std::to_string(i) + " has a q norm without a k norm, or a k norm without a q norm";
    if (l.windowed && (d.window < 1 || rows.local_tables == nullptr || d.local_cos == nullptr))
      return "layer " + std::to_string(i) + " is windowed but the step has no window, local tables or local RoPE";
  }
  return check_rows(d, rows);
}

void decode_step(const ModelDims& d, const LayerRef* layers, int64_t num_layers, const StepRows& rows,
                 int x_digits, int num_threads) {
  static thread_local Scratch scratch;
  int64_t max_len = 1;
  for (int64_t m = 0; m < rows.M; ++m) max_len = std::max(max_len, rows.positions[m] + 1);
  scratch.fit(d, rows, max_len);
  static const pid_t parent = getpid();  // GNU OpenMP is not fork-safe: a forked child runs alone
  if (num_threads <= 1 || getpid() != parent) {
    run_layers(Team{0, 1}, d, layers, num_layers, rows, scratch, max_len, x_digits);
    return;
  }
  Scratch& shared = scratch;
#pragma omp parallel num_threads(num_threads)
  run_layers(Team{omp_get_thread_num(), omp_get_num_threads()}, d, layers, num_layers, rows, shared, max_len,
             x_digits);
}

}  // namespace mcp_kernels
