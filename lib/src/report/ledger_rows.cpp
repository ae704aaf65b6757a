#include "report/ledger_rows.hpp"

#include <string_view>

namespace tvie::detail {

std::vector<LedgerRow> ledger_rows(const TrainingMemory& m, const PredictedTrainingMemory* p, HeldRows held) {
  const auto predicted = [&](int64_t PredictedTrainingMemory::*field) { return p ? p->*field : int64_t{-1}; };
  return {{"parameters", m.parameters, predicted(&PredictedTrainingMemory::parameters), true},
          {"gradients", m.gradients, predicted(&PredictedTrainingMemory::gradients), true},
          {"optimizer_state", m.optimizer_state, predicted(&PredictedTrainingMemory::optimizer_state), true},
          {"activations", m.activations, predicted(&PredictedTrainingMemory::activations), true},
          {"weight_copies", m.weight_copies, predicted(&PredictedTrainingMemory::weight_copies), held.amp},
          {"loss_scaler", m.loss_scaler, predicted(&PredictedTrainingMemory::loss_scaler), held.loss_scaling},
          {"comm_buffers", m.comm_buffers, predicted(&PredictedTrainingMemory::comm_buffers), held.data_parallel},
          {"other", m.other, p ? p->other() : -1, true},
          {"batch", m.batch, predicted(&PredictedTrainingMemory::batch), true},
          {"peak", m.peak, predicted(&PredictedTrainingMemory::peak), true},
          {"peak_reserved", m.peak_reserved, -1, m.peak_reserved >= 0}};
}

std::vector<LedgerRow> ledger_rows(const InferenceMemory& m, const PredictedInferenceMemory* p) {
  const auto predicted = [&](int64_t PredictedInferenceMemory::*field) { return p ? p->*field : int64_t{-1}; };
  const int64_t packed = predicted(&PredictedInferenceMemory::packed_weights);
  return {{"parameters", m.parameters, predicted(&PredictedInferenceMemory::parameters), true},
          {"packed_weights", m.packed_weights, packed, m.packed_weights != 0 || (p && packed != 0)},
          {"activations", m.activations, predicted(&PredictedInferenceMemory::activations), true},
          {"other", m.other, p ? p->other() : -1, true},
          {"batch", m.batch, predicted(&PredictedInferenceMemory::batch), true},
          {"peak", m.peak, predicted(&PredictedInferenceMemory::peak), true},
          {"peak_reserved", m.peak_reserved, -1, m.peak_reserved >= 0}};
}

std::vector<LedgerRow> ledger_rows(const TrainingResult& t, bool data_parallel) {
  return ledger_rows(t.memory, &t.predicted, {is_amp(t.precision), t.loss_scaling, data_parallel});
}

std::vector<LedgerRow> ledger_rows(const InferenceResult& i) { return ledger_rows(i.memory, &i.predicted); }

std::vector<LedgerRow> generation_rows(const GenerationMemory& m, const GenerationMemory* p) {
  const auto predicted = [&](int64_t GenerationMemory::*field) { return p ? p->*field : int64_t{-1}; };
  const int64_t packed = predicted(&GenerationMemory::packed_weights);
  return {{"parameters", m.weights, predicted(&GenerationMemory::weights), true},
          {"packed_weights", m.packed_weights, packed, m.packed_weights != 0 || (p && packed != 0)},
          {"kv_cache", m.kv_cache, predicted(&GenerationMemory::kv_cache), true},
          {"working_set", m.working_set, predicted(&GenerationMemory::working_set), true},
          {"prompt", m.prompt, predicted(&GenerationMemory::prompt), true},
          {"other", m.other(), p ? p->other() : -1, true},
          {"peak", m.peak, predicted(&GenerationMemory::peak), true}};
}

const std::vector<const char*>& ledger_row_names() {
  static const std::vector<const char*> names = {"parameters",  "packed_weights", "gradients",   "optimizer_state",
                                                 "activations", "weight_copies",  "loss_scaler", "comm_buffers",
                                                 "other",       "batch",          "peak",        "peak_reserved"};
  return names;
}

const LedgerRow* find_row(const std::vector<LedgerRow>& rows, const char* name) {
  for (const auto& r : rows)
    if (std::string_view(r.name) == name) return &r;
  return nullptr;
}

}  // namespace tvie::detail
