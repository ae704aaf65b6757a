// Where a measured figure stands against the device it ran on: the model FLOP/s a run achieved as a fraction of the
// card's dense peak in the dtype its matmuls ran in (model FLOPs utilisation, MFU), and the bytes a step must read as
// a fraction of the card's memory bandwidth (memory bandwidth utilisation, MBU). The peaks and bandwidths are the
// catalog's (tvie cards): a CUDA device is the catalog card of its name and memory, the CPU this machine's host card
// (its class's peaks per core and cycle x LibTorch's threads x the clock). docs/metrics.md, "Fractions of the card".
#pragma once

#include <optional>
#include <string>

#include <tvie/catalog.hpp>
#include <tvie/context.hpp>
#include <tvie/decode.hpp>
#include <tvie/infer.hpp>
#include <tvie/serve.hpp>
#include <tvie/train.hpp>
#include <tvie/workload.hpp>

namespace tvie {

struct CardFraction {
  std::string card;                // the catalog card's id ("h200"; "host": this machine's CPU); "" when none
  std::string card_name;           // "NVIDIA H200 SXM 141GB", "this machine's CPU (cpu-amx, 2 cores at 2.1 GHz)"
  std::string why_none;            // card "": why the run's device has no card in the catalog
  std::string peak_field;          // the dense peak the fraction is of: "bf16_tflops", "int8_tops"
  double peak_tflops = -1;         // the card's peak of peak_field (int8: TOPS); -1: the card publishes none
  double bandwidth_gbs = -1;       // the card's memory bandwidth, GB/s
  double model_tflops = 0;         // the model FLOPs (2 per multiply-add, analytic) per second the run achieved
  double peak_fraction = -1;       // model_tflops / peak_tflops; -1 where there is no card or no peak
  double bytes = 0;                // the bytes a batch or step must read at least (bytes_counted says which)
  double bandwidth_fraction = -1;  // bytes / mean time / bandwidth; -1 where not counted or there is no card
  std::string bytes_counted;       // what `bytes` is: "the weights, once" ...; "" where no bytes are counted
};

// The catalog card of the run's device: a CUDA device by its name and memory (catalog_card_of_device), the CPU as
// this machine's host card (local_host_accelerator). nullopt when the catalog has none; `why` says why.
std::optional<Accelerator> card_of_run(const RunContext& context, std::string* why);

// The dense peak a run's matmuls use: training at `settings`' precision (fp32, tf32 with settings.tf32, bf16,
// fp16), inference in `dtype` (int8: int8_tops; fp8: fp8_tflops; int8-weight-only computes in bf16).
std::string matmul_peak_field(const TrainSettings& settings);
std::string matmul_peak_field(InferenceDtype dtype);

// A training step: its model TFLOP/s (3 x forward FLOPs x batch / mean step) against the peak; no bytes counted
// (a training step at these batches is bound by its matmuls, not by reading the weights).
CardFraction training_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                               const TrainSettings& settings, const TrainingResult& result);
// An inference batch: its model TFLOP/s against the peak, and the weights it must read once (the measured copy's
// bytes, packs included) over its mean latency against the bandwidth.
CardFraction inference_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                                const InferenceResult& result);
// A serving run: the model TFLOP/s of its answered requests (forward FLOPs per sample x answered / the run's
// duration) against the peak of `dtype`, and the weights read once per batch over the run against the bandwidth.
// Both are averages over the run, idle time between batches included: the card's share the load used.
CardFraction serving_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                              const ModelFacts& facts, InferenceDtype dtype, const ServeResult& result);
// A generation's prefill: the prompt's traced FLOPs (decoding_work) over the mean time to first token.
CardFraction prefill_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                              const Workload& workload, const DecodeSettings& settings, const DecodeResult& result);
// A generation's decoding step: the traced FLOPs of a step at the mean cached positions over the mean time per
// output token, and the bytes it must read: the weights once and the keys and values of the positions it attends
// to (on average prompt + new / 2 of the cache's prompt + new - 1) against the bandwidth.
CardFraction decoding_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                               const Workload& workload, const DecodeSettings& settings, const DecodeResult& result);

}  // namespace tvie
