// The memory ledger's rows, defined once for every format (console, JSON, CSV, HTML): the categories a mode's peak
// is made of, `other` (the peak less those categories: the input batch and the transients of the moment), the peak,
// and two figures beside it (batch: the part of `other` that is the input; peak_reserved: what the allocator held,
// cached blocks included). Measured and predicted come from the result; -1 says there is no such figure.
#pragma once

#include <cstdint>
#include <vector>

#include <tvie/decode.hpp>
#include <tvie/infer.hpp>
#include <tvie/train.hpp>

namespace tvie::detail {

struct LedgerRow {
  const char* name;
  int64_t measured;
  int64_t predicted;  // -1: not predicted (peak_reserved never is)
  // Whether this run holds the category (weight_copies: amp; loss_scaler: loss scaling; comm_buffers: data
  // parallelism; packed_weights: int8 packs outside LibTorch's allocator; peak_reserved: an allocator that reports
  // its reserve). The console shows the held rows; JSON and CSV every row of the mode.
  bool held;
};

// A mode's rows in the ledger's one order (ledger_row_names): training has no packed_weights, inference no
// gradients, optimizer_state, weight_copies, loss_scaler or comm_buffers. Without a prediction every predicted
// figure is -1; `held` as the run says (a ledger alone holds every row).
struct HeldRows {
  bool amp = true, loss_scaling = true, data_parallel = true;
};
std::vector<LedgerRow> ledger_rows(const TrainingMemory& m, const PredictedTrainingMemory* p, HeldRows held = {});
std::vector<LedgerRow> ledger_rows(const InferenceMemory& m, const PredictedInferenceMemory* p);
std::vector<LedgerRow> ledger_rows(const TrainingResult& t, bool data_parallel);
std::vector<LedgerRow> ledger_rows(const InferenceResult& i);
// A generation's ledger (tvie/decode.hpp): parameters (the weights, packs included), packed_weights (held where
// there are packs), kv_cache, working_set, prompt, other, peak.
std::vector<LedgerRow> generation_rows(const GenerationMemory& m, const GenerationMemory* p);
// parameters, packed_weights, gradients, optimizer_state, activations, weight_copies, loss_scaler, comm_buffers,
// other, batch, peak, peak_reserved: the rows of a table that lines the modes up.
const std::vector<const char*>& ledger_row_names();
// The row of `rows` called `name`, or nullptr where the mode has none.
const LedgerRow* find_row(const std::vector<LedgerRow>& rows, const char* name);

}  // namespace tvie::detail
