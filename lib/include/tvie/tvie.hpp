// tvie: the training-vs-inference emulator. Umbrella header; the layers and what each header holds are in
// docs/architecture.md, an example of each in docs/library.md.
//   run.hpp        the front door: run_compare, run_train, run_train_data_parallel, run_infer_sweep, run_serve,
//                  run_decode, run_allreduce, run_max_batch, run_slices, run_plan, run_cards, run_list
//                  (one shape: workload, settings, RunOptions -> a report)
//   report.hpp     ConsoleReporter; JsonReporter, CsvReporter, HtmlReporter, TraceReporter (files, atomically)
//   workload.hpp   the Workload interface you implement to bring your own model
//   models.hpp     the zoo: mlp, cnn, gpt, resnet, bert, llama, with presets and analytic counts
//   settings.hpp   TrainSettings, InferSettings, CompareSettings (+ validate)
//   ledger.hpp     the vocabulary: precisions, optimizers, operator classes, the predicted ledgers
//   predict.hpp    predict_training_memory, predict_inference_memory
//   plan.hpp, projection.hpp, catalog.hpp: the projection onto accelerators (tvie plan, tvie cards)
//   building blocks: train.hpp (Trainer, measure_training), infer.hpp (InferenceSession, measure_inference,
//   sweep), serve.hpp (DynamicBatcher, measure_serving, find_max_qps), decode.hpp (measure_decoding), max_batch.hpp,
//   slices.hpp, dist.hpp (Communicator, DataParallel), precision.hpp (AutocastGuard, LossScaler), checkpoint.hpp,
//   layers.hpp (tvie::nn::Linear), kernels.hpp (the quantised Linear kinds and what their kernels take),
//   torchscript.hpp, aoti.hpp, memory.hpp (probes, ledgers), timeline.hpp, timing.hpp (StepTimer), energy.hpp,
//   stats.hpp, class_times.hpp, device.hpp, context.hpp, options_file.hpp, output_files.hpp, errors.hpp, log.hpp
#pragma once

#include <tvie/aoti.hpp>
#include <tvie/catalog.hpp>
#include <tvie/checkpoint.hpp>
#include <tvie/class_times.hpp>
#include <tvie/config.hpp>
#include <tvie/context.hpp>
#include <tvie/decode.hpp>
#include <tvie/device.hpp>
#include <tvie/energy.hpp>
#include <tvie/dist.hpp>
#include <tvie/errors.hpp>
#include <tvie/headroom.hpp>
#include <tvie/infer.hpp>
#include <tvie/kernels.hpp>
#include <tvie/layers.hpp>
#include <tvie/ledger.hpp>
#include <tvie/log.hpp>
#include <tvie/max_batch.hpp>
#include <tvie/memory.hpp>
#include <tvie/models.hpp>
#include <tvie/options_file.hpp>
#include <tvie/output_files.hpp>
#include <tvie/precision.hpp>
#include <tvie/predict.hpp>
#include <tvie/plan.hpp>
#include <tvie/projection.hpp>
#include <tvie/report.hpp>
#include <tvie/run.hpp>
#include <tvie/serve.hpp>
#include <tvie/settings.hpp>
#include <tvie/slices.hpp>
#include <tvie/stats.hpp>
#include <tvie/timeline.hpp>
#include <tvie/timing.hpp>
#include <tvie/torchscript.hpp>
#include <tvie/train.hpp>
#include <tvie/workload.hpp>
