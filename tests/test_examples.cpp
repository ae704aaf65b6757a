// The example programs, run as a reader would run them, and the tutorial's doc-test: the tables in
// docs/why-training-needs-more-memory.md are what examples/why_training_needs_more_memory measures.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "report_keys.hpp"

namespace fs = std::filesystem;
using tvie::test::read_text;
using namespace tvie;

namespace {

std::string example(const std::string& name) { return (fs::path(TVIE_BIN_DIR) / name).string(); }

using Rows = std::vector<std::vector<std::string>>;

// Every <!-- table:NAME --> ... <!-- /table --> block: its rows of cells (the header first, the |---| line dropped).
std::map<std::string, Rows> tables_of(const std::string& text) {
  std::map<std::string, Rows> tables;
  std::istringstream in(text);
  std::string line, name;
  while (std::getline(in, line)) {
    if (line.rfind("<!-- table:", 0) == 0) {
      name = line.substr(11, line.find(" -->") - 11);
      tables[name];
    } else if (line == "<!-- /table -->") {
      name.clear();
    } else if (!name.empty() && line.rfind("|---", 0) != 0 && line.rfind('|', 0) == 0) {
      std::vector<std::string> cells;
      std::string cell;
      std::istringstream cols(line.substr(1));
      while (std::getline(cols, cell, '|')) {
        const auto a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
        cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
      }
      tables[name].push_back(cells);
    }
  }
  return tables;
}

// "86,189,060" -> 86189060, "4.90x" -> 4.9; nullopt for text.
std::optional<double> number_of(std::string cell) {
  cell.erase(std::remove(cell.begin(), cell.end(), ','), cell.end());
  if (!cell.empty() && cell.back() == 'x') cell.pop_back();
  if (cell.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size()) return std::nullopt;
  return v;
}

// Columns whose bytes do not depend on the CPU's kernels or the C library's heap: compared exactly.
bool exact_column(const std::string& header) {
  for (const char* word : {"parameters", "gradients", "optimizer state", "weight copies", "weight tensors", "KV cache"})
    if (header.find(word) != std::string::npos && header.find("/") == std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the tutorial's tables are what examples/why_training_needs_more_memory measures", "[examples]") {
  test::TempDir dir;
  const auto run_example = [&](const std::string& env) {
    const auto run = test::run_command(env + example("why_training_needs_more_memory") + " --out " + dir.path.string());
    INFO(run.out);
    REQUIRE(run.exit_code == 0);
    return tables_of(read_text(dir.path / "tables.md"));
  };
  auto measured = run_example("");
  const fs::path doc_path = fs::path(TVIE_SOURCE_DIR) / "docs" / "why-training-needs-more-memory.md";
  const auto documented = tables_of(read_text(doc_path));
  REQUIRE(measured.size() >= 9);
  CHECK(documented.size() == measured.size());
  // bf16's bytes depend on the kernels LibTorch runs bf16 on (oneDNN with AVX-512, else its own): the bf16 rows'
  // activations and peaks are compared where this CPU runs the kernels the document was made with, natively or
  // under oneDNN's ISA limit (AVX2: LibTorch then runs bf16 on its own kernels, as a CPU without AVX-512 does).
  REQUIRE(measured.count("machine") == 1);
  REQUIRE(documented.count("machine") == 1);
  const std::string kernels_doc = documented.at("machine").at(1).at(1);
  if (measured.at("machine").at(1).at(1) != kernels_doc) {
    auto limited = run_example("ONEDNN_MAX_CPU_ISA=AVX2 ");
    if (limited.count("machine") == 1 && limited.at("machine").at(1).at(1) == kernels_doc) {
      std::cout << "the tutorial's tables made again under ONEDNN_MAX_CPU_ISA=AVX2, whose bf16 kernels are the "
                   "document's (\""
                << kernels_doc << "\")" << std::endl;
      measured = std::move(limited);
    }
  }
  const std::string kernels_here = measured.at("machine").at(1).at(1);
  const bool same_bf16_kernels = kernels_here == kernels_doc;
  std::vector<std::string> not_compared;
  for (const auto& [name, rows] : measured) {
    if (name == "machine") continue;
    INFO("table " << name << " (regenerate: why_training_needs_more_memory --update-doc " << doc_path.string() << ")");
    REQUIRE(documented.count(name) == 1);
    const auto& doc = documented.at(name);
    REQUIRE(doc.size() == rows.size());
    CHECK(doc.front() == rows.front());  // the header
    for (size_t r = 1; r < rows.size(); ++r) {
      REQUIRE(doc[r].size() == rows[r].size());
      for (size_t c = 0; c < rows[r].size(); ++c) {
        INFO(rows[r][0] << " / " << rows.front()[c] << ": documented " << doc[r][c] << ", measured " << rows[r][c]);
        const auto m = number_of(rows[r][c]);
        const auto d = number_of(doc[r][c]);
        // Weights, gradients, optimizer state, weight copies, the KV cache: exact; activations, peaks and int8
        // packs (glibc heap growth) within 10% (they depend a little on the CPU's kernels and the heap); text
        // exactly.
        if (c == 0 || !m || !d || exact_column(rows.front()[c]) || rows[r][0] == "parameters of the model")
          CHECK(doc[r][c] == rows[r][c]);
        else if (!same_bf16_kernels && rows[r][0].find("bf16") != std::string::npos)
          not_compared.push_back(name + " / " + rows[r][0] + " / " + rows.front()[c]);
        else if (test::kAddressSanitizer && name == "inference" && rows[r][0] == "int8")
          // The int8 packs are glibc heap growth, in the row's peak too.
          TVIE_SKIP_PART(
              "built with AddressSanitizer, whose allocator leaves no glibc heap growth to read: not "
              "compared: "
              << name << " / " << rows[r][0] << " / " << rows.front()[c]);
        else
          CHECK(*d == Approx(*m).epsilon(0.10));
      }
    }
  }
  if (!not_compared.empty()) {
    TVIE_SKIP_PART("the tutorial's bf16 rows were made with bf16 kernels \""
                   << kernels_doc << "\", this CPU runs \"" << kernels_here
                   << "\" even under ONEDNN_MAX_CPU_ISA=AVX2; not compared: " << not_compared.size() << " cells ("
                   << not_compared.front() << ", ...)");
    CHECK(not_compared.size() <= 12);  // the bf16 rows only
  }
  // The charts the page shows exist, and the program wrote its own.
  for (const char* svg : {"why-training-memory-over-time.svg", "why-training-ledger.svg"})
    CHECK(fs::exists(fs::path(TVIE_SOURCE_DIR) / "docs" / "results" / "tutorial" / svg));
  for (const char* svg : {"memory-over-time.svg", "ledger.svg"}) {
    const auto text = read_text(dir.path / svg);
    CHECK(text.rfind("<svg class=\"chart\"", 0) == 0);
    CHECK(text.find("xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  }
  const auto timeline = read_text(dir.path / "memory-over-time.svg");
  CHECK(timeline.find("data-series=\"training step\"") != std::string::npos);
  CHECK(timeline.find("data-series=\"inference batch\"") != std::string::npos);
  CHECK(read_text(dir.path / "ledger.svg").find("data-series=\"optimizer state\"") != std::string::npos);
}

TEST_CASE("examples/custom_workload: a user's Workload compared on the CPU, then projected onto cards", "[examples]") {
  const auto run = test::run_command(example("custom_workload") + " --device cpu");
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("regressor (example)") != std::string::npos);
  CHECK(run.out.find("gap: training peak / inference peak") != std::string::npos);
  // Then projected onto four cards, said to be projected, its work counted by the profiler.
  CHECK(run.out.find("PROJECTED: nothing ran on them") != std::string::npos);
  for (const char* card : {"t4 ", "l4 ", "a100-80gb-sxm ", "h100-sxm "}) CHECK(run.out.find(card) != std::string::npos);
  CHECK(run.out.find("profiler") != std::string::npos);
}

TEST_CASE("examples/own_training_loop: a loop of its own with tvie's probe, timer and timeline", "[examples]") {
  const auto run = test::run_command(example("own_training_loop") + " --device cpu --steps 4");
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  // The classifier's weights, 256x1024 + 1024 + 1024x10 + 10 floats, and AdamW's two moments of them.
  const int64_t weights = 4 * (256 * 1024 + 1024 + 1024 * 10 + 10);
  CHECK(run.out.find("weights:            " + format_bytes(weights)) != std::string::npos);
  CHECK(run.out.find("optimizer state:    " + format_bytes(2 * weights)) != std::string::npos);
  CHECK(run.out.find("phases (median over 4 steps") != std::string::npos);
  CHECK(run.out.find("back to " + format_bytes(3 * weights)) != std::string::npos);  // weights + moments
}

TEST_CASE("examples/serve_your_model: a Workload of one's own under the server scenario", "[examples]") {
  const auto run = test::run_command(example("serve_your_model") + " --device cpu --qps 400 --p99-ms 50");
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("ranker (example)") != std::string::npos);
  CHECK(run.out.find("scenario server") != std::string::npos);
  CHECK(run.out.find("the highest rate with p99 <= 50 ms: ") != std::string::npos);
}

TEST_CASE("examples/torchscript_from_python: a model saved by Python, compared in C++", "[examples]") {
  const std::string python = TVIE_PYTHON_WITH_TORCH;
  if (python.empty() || test::run_command(python + " -c 'import torch'").exit_code != 0) {
    TVIE_SKIP("no python with torch configured (TVIE_PYTHON; scripts/setup.sh sets it)");
  }
  test::TempDir dir;
  const auto model = (dir.path / "model.pt").string();
  const auto saved =
      test::run_command(python + " " + std::string(TVIE_SOURCE_DIR) + "/examples/torchscript_from_python.py " + model);
  INFO(saved.out);
  REQUIRE(saved.exit_code == 0);
  const auto run = test::run_command(example("torchscript_from_python") + " " + model + " --device cpu");
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("gap: training peak / inference peak") != std::string::npos);
  const auto missing = test::run_command(example("torchscript_from_python") + " " + (dir.path / "none.pt").string());
  CHECK(missing.exit_code == 2);
}

TEST_CASE("examples/aoti_from_python: an AOTInductor package tvie infer --aoti runs, its TorchScript twin's outputs",
          "[examples][aoti]") {
  const std::string python = TVIE_PYTHON_WITH_TORCH;
  if (python.empty() || test::run_command(python + " -c 'import torch'").exit_code != 0) {
    TVIE_SKIP("no python with torch configured (TVIE_PYTHON; scripts/setup.sh sets it)");
  }
  test::TempDir dir;
  const auto package = (dir.path / "net.pt2").string(), twin = (dir.path / "net.pt").string();
  const auto saved = test::run_command(python + " " + std::string(TVIE_SOURCE_DIR) + "/examples/aoti_from_python.py " +
                                       package + " --twin " + twin);
  INFO(saved.out);
  REQUIRE(saved.exit_code == 0);
  // The library: the package and the twin compute the same logits from the same inputs.
  tvie::AotiSettings as;
  as.path = package;
  as.input_shape = {3, 32, 32};
  const auto compiled = tvie::make_aoti_workload(as);
  tvie::TorchScriptSettings ts;
  ts.path = twin;
  ts.input_shape = {3, 32, 32};
  const auto scripted = tvie::make_torchscript_workload(ts);
  const auto input = compiled->make_batch(5, c10::Device(c10::kCPU), 7).input;  // a batch the export never saw
  const auto compiled_module = compiled->make_module();
  const auto scripted_module = scripted->make_module();
  scripted_module->eval();
  torch::Tensor a, b;
  {
    c10::InferenceMode guard;
    a = compiled->forward(*compiled_module, input);
    b = scripted->forward(*scripted_module, input);
  }
  REQUIRE(a.sizes() == b.sizes());  // [5, 10]
  CHECK(torch::allclose(a, b, 1e-4, 1e-5));
  for (const int64_t n : {1, 32}) {  // below the exported batch's bound of 2; where ATen picks oneDNN's convolution
    c10::InferenceMode guard;
    const auto x = compiled->make_batch(n, c10::Device(c10::kCPU), 11).input;
    CHECK(torch::allclose(compiled->forward(*compiled_module, x), scripted->forward(*scripted_module, x), 1e-4, 1e-5));
  }
  CHECK(compiled->facts().buffer_bytes == 4 * (2 * 32 + 2 * 64));  // BatchNorm's running means and variances
  CHECK(compiled->facts().parameter_count == scripted->facts().parameter_count);  // conv, BatchNorm and Linear weights
  // The exporter's FLOPs (torch.utils.flop_counter) and LibTorch's profiler on the twin: the convolutions and the head.
  CHECK(compiled->facts().forward_flops_per_sample == Approx(scripted->facts().forward_flops_per_sample));
  CHECK_THROWS_AS(compiled->loss(a, compiled->make_batch(5, c10::Device(c10::kCPU), 7)), tvie::InvalidArgument);
  // The tool: a sweep, its weights the package's constants (held outside the allocator on the CPU).
  const auto json = (dir.path / "aoti.json").string();
  const auto run = test::run_command(std::string(TVIE_CLI_PATH) + " infer --aoti " + package +
                                     " --input-shape 3,32,32 --batch 1,4 --steps 2 --warmup 0 --quiet --json " + json);
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["model"]["name"] == "aoti:net.pt2");
  CHECK(j["model"]["parameters"] == compiled->facts().parameter_count);
  int64_t constant_bytes = 0;
  for (const auto& t : compiled_module->buffers()) constant_bytes += static_cast<int64_t>(t.nbytes());
  for (const auto& row : j["inference_sweep"]["rows"]) {
    CHECK(row["fits"] == true);
    CHECK(row["result"]["memory"]["parameters"].get<int64_t>() +
              row["result"]["memory"]["packed_weights"].get<int64_t>() ==
          constant_bytes);
  }
  // Served: the batcher's batches, the weights the package's constants.
  const auto served_json = (dir.path / "serve.json").string();
  const auto served = test::run_command(std::string(TVIE_CLI_PATH) + " serve --aoti " + package +
                                        " --input-shape 3,32,32 --scenario offline --queries 64 --max-batch 32 "
                                        "--quiet --json " +
                                        served_json);
  INFO(served.out);
  REQUIRE(served.exit_code == 0);
  std::ifstream served_in(served_json);
  const auto sj = nlohmann::json::parse(served_in);
  CHECK(sj["serving"]["answered"] == 64);
  CHECK(sj["serving"]["batches"] == 2);
  CHECK(sj["serving"]["weight_bytes"] == constant_bytes);
  const auto beyond = test::run_command(std::string(TVIE_CLI_PATH) + " serve --aoti " + package +
                                        " --input-shape 3,32,32 --max-batch 5000");
  CHECK(beyond.exit_code == 2);
  CHECK(beyond.out.find("--max-batch: got '5000'; accepted: a batch the package accepts") != std::string::npos);
  // A dtype or device the package was not compiled for: refused, one line naming the option.
  const auto bf16 = test::run_command(std::string(TVIE_CLI_PATH) + " infer --aoti " + package +
                                      " --input-shape 3,32,32 --dtype bf16");
  CHECK(bf16.exit_code == 2);
  CHECK(bf16.out.find("--dtype") != std::string::npos);
  CHECK(bf16.out.find("fp32 with this package") != std::string::npos);
  const auto cuda = test::run_command(std::string(TVIE_CLI_PATH) + " infer --aoti " + package +
                                      " --input-shape 3,32,32 --device cuda");
  CHECK(cuda.exit_code == 2);
  CHECK(cuda.out.find("--device: got 'cuda'") != std::string::npos);
  const auto shape =
      test::run_command(std::string(TVIE_CLI_PATH) + " infer --aoti " + package + " --input-shape 3,16,16,2");
  CHECK(shape.exit_code == 2);
  CHECK(shape.out.find("--input-shape") != std::string::npos);
  // A batch beyond the exported range (1 .. 4096): refused by its own line before any run, the runtime's "Error:"
  // print kept off the output.
  const auto large = test::run_command(std::string(TVIE_CLI_PATH) + " infer --aoti " + package +
                                       " --input-shape 3,32,32 --batch 8192");
  CHECK(large.exit_code == 2);
  CHECK(large.out.find("--batch: got '8192'; accepted: a batch the package accepts") != std::string::npos);
  CHECK(large.out.find("Error:") == std::string::npos);
}

TEST_CASE("examples/aoti_zoo_gpt: the zoo's gpt on tvie's trained weights, compiled, its logits equal to tvie's own",
          "[examples][aoti]") {
  const std::string python = TVIE_PYTHON_WITH_TORCH;
  if (python.empty() || test::run_command(python + " -c 'import torch'").exit_code != 0) {
    TVIE_SKIP("no python with torch configured (TVIE_PYTHON; scripts/setup.sh sets it)");
  }
  test::TempDir dir;
  const auto weights = (dir.path / "gpt.pt").string(), package = (dir.path / "gpt.pt2").string();
  const auto trained = test::run_command(
      std::string(TVIE_CLI_PATH) + " train --model gpt --preset tiny --steps 20 --quiet --save-parameters " + weights);
  INFO(trained.out);
  REQUIRE(trained.exit_code == 0);
  const auto saved = test::run_command(python + " " + std::string(TVIE_SOURCE_DIR) + "/examples/aoti_zoo_gpt.py " +
                                       weights + " " + package + " --heads 4");
  INFO(saved.out);
  REQUIRE(saved.exit_code == 0);
  const auto zoo = tvie::make_zoo_workload("gpt", "tiny");
  const auto eager = tvie::read_parameters(*zoo, weights);
  eager->eval();
  tvie::AotiSettings as;
  as.path = package;
  as.input_shape = {32};
  as.token_input = true;
  as.vocab_size = 256;
  const auto compiled = tvie::make_aoti_workload(as);
  const auto compiled_module = compiled->make_module();
  // The same parameters, and FLOPs counted as the zoo's analytic formulas count them (attention in full).
  CHECK(compiled->facts().parameter_count == zoo->facts().parameter_count);
  CHECK(compiled->facts().forward_flops_per_sample == Approx(zoo->facts().forward_flops_per_sample).epsilon(1e-9));
  for (const int64_t n : {1, 7}) {
    const auto idx = zoo->make_batch(n, c10::Device(c10::kCPU), 3).input;  // [n, 32] token ids
    c10::InferenceMode guard;
    const auto a = compiled->forward(*compiled_module, idx), b = zoo->forward(*eager, idx);  // [n, 32, 256]
    REQUIRE(a.sizes() == b.sizes());
    CHECK(torch::allclose(a, b, 1e-4, 1e-4));
    CHECK(torch::equal(a.argmax(-1), b.argmax(-1)));
  }
  // The tool: the package's row, its weights the trained model's bytes.
  const auto json = (dir.path / "aoti.json").string();
  const auto run =
      test::run_command(std::string(TVIE_CLI_PATH) + " infer --aoti " + package +
                        " --input-shape 32 --vocab 256 --batch 1,8 --steps 2 --warmup 0 --quiet --json " + json);
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["model"]["tokens_per_sample"] == 32);
  for (const auto& row : j["inference_sweep"]["rows"])
    CHECK(row["result"]["memory"]["parameters"].get<int64_t>() +
              row["result"]["memory"]["packed_weights"].get<int64_t>() ==
          4 * zoo->facts().parameter_count);
  // Compiled in bf16: its rows in bf16 only, with no fp32 copy to compare with.
  const auto bf16_package = (dir.path / "gpt-bf16.pt2").string();
  const auto saved_bf16 = test::run_command(python + " " + std::string(TVIE_SOURCE_DIR) + "/examples/aoti_zoo_gpt.py " +
                                            weights + " " + bf16_package + " --heads 4 --dtype bf16");
  INFO(saved_bf16.out);
  REQUIRE(saved_bf16.exit_code == 0);
  const auto bf16_json = (dir.path / "aoti-bf16.json").string();
  const auto bf16_run = test::run_command(std::string(TVIE_CLI_PATH) + " infer --aoti " + bf16_package +
                                          " --input-shape 32 --vocab 256 --batch 2 --dtype bf16 --steps 2 --warmup 0 "
                                          "--quiet --json " +
                                          bf16_json);
  INFO(bf16_run.out);
  REQUIRE(bf16_run.exit_code == 0);
  std::ifstream bf16_in(bf16_json);
  const auto jb = nlohmann::json::parse(bf16_in);
  CHECK(jb["inference_sweep"]["settings"]["accuracy_vs_fp32"] == false);
  REQUIRE(jb["inference_sweep"]["rows"].size() == 1);
  const auto& row = jb["inference_sweep"]["rows"][0];
  CHECK(row["dtype"] == "bf16");
  CHECK_FALSE(row.contains("accuracy_vs_fp32"));
  CHECK(row["result"]["memory"]["parameters"].get<int64_t>() +
            row["result"]["memory"]["packed_weights"].get<int64_t>() ==
        2 * zoo->facts().parameter_count);
  const auto fp32_of_bf16 = test::run_command(std::string(TVIE_CLI_PATH) + " infer --aoti " + bf16_package +
                                              " --input-shape 32 --vocab 256 --batch 2");
  CHECK(fp32_of_bf16.exit_code == 2);
  CHECK(fp32_of_bf16.out.find("--dtype: got 'fp32'; accepted: bf16 with this package") != std::string::npos);
}

TEST_CASE("examples/aoti_zoo_resnet: the zoo's resnet on trained weights and statistics, compiled, compare --aoti",
          "[examples][aoti]") {
  const std::string python = TVIE_PYTHON_WITH_TORCH;
  if (python.empty() || test::run_command(python + " -c 'import torch'").exit_code != 0) {
    TVIE_SKIP("no python with torch configured (TVIE_PYTHON; scripts/setup.sh sets it)");
  }
  test::TempDir dir;
  const auto weights = (dir.path / "resnet.pt").string(), package = (dir.path / "resnet.pt2").string();
  const auto trained = test::run_command(std::string(TVIE_CLI_PATH) +
                                         " train --model resnet --preset tiny --batch 8 --steps 5 --quiet "
                                         "--save-parameters " +
                                         weights);
  INFO(trained.out);
  REQUIRE(trained.exit_code == 0);
  const auto saved = test::run_command(python + " " + std::string(TVIE_SOURCE_DIR) + "/examples/aoti_zoo_resnet.py " +
                                       weights + " " + package + " --image-size 32");
  INFO(saved.out);
  REQUIRE(saved.exit_code == 0);
  // tvie's own eval() forward on the same file: the trained parameters and BatchNorm's running statistics.
  const auto zoo = tvie::make_zoo_workload("resnet", "tiny");
  const auto eager = tvie::read_parameters(*zoo, weights);
  eager->eval();
  int64_t moved = 0;  // the statistics the file carried are the trained ones, not a fresh module's
  for (const auto& b : eager->named_buffers())
    if (b.key().find("running_mean") != std::string::npos) moved += b.value().abs().sum().item<double>() > 0 ? 1 : 0;
  CHECK(moved > 0);
  const auto compiled =
      tvie::make_aoti_twin(*zoo, package, c10::Device(c10::kCPU), tvie::InferenceDtype::fp32, "infer.dtype");
  const auto compiled_module = compiled->make_module();
  CHECK(compiled->facts().parameter_count == zoo->facts().parameter_count);
  CHECK(compiled->facts().forward_flops_per_sample == Approx(zoo->facts().forward_flops_per_sample).epsilon(1e-9));
  for (const int64_t n : {1, 16, 19}) {
    const auto images = compiled->make_batch(n, c10::Device(c10::kCPU), 3).input;  // the zoo's: [n, 3, 32, 32]
    CHECK(torch::equal(images, zoo->make_batch(n, c10::Device(c10::kCPU), 3).input));
    c10::InferenceMode guard;
    const auto a = compiled->forward(*compiled_module, images), b = zoo->forward(*eager, images);  // [n, 10]
    REQUIRE(a.sizes() == b.sizes());
    CHECK(torch::allclose(a, b, 1e-4, 1e-4));
    CHECK(torch::equal(a.argmax(-1), b.argmax(-1)));
  }

  // compare --aoti: the compiled row beside eager's, at the inference batch, in the report's three renderings.
  const auto json = (dir.path / "compare.json").string(), html = (dir.path / "compare.html").string();
  const auto compare = std::string(TVIE_CLI_PATH) +
                       " compare --model resnet --preset tiny --batch 4 --infer-batch 8 --steps 2 --warmup 0 "
                       "--device cpu --aoti " +
                       package;
  const auto run = test::run_command(compare + " --infer-dtype fp32 --json " + json + " --html " + html);
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("compiled: AOTInductor package " + package + ", fp32, batch 8") != std::string::npos);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  test::check_documented(j, "compare");
  const auto& c = j["compiled_inference"];
  CHECK(c["package"] == package);
  CHECK(c["dtype"] == "fp32");
  CHECK(c["timed_batches"] == 2);
  // The package's weights are its constants, exactly: the fp32 parameters and what Inductor kept of BatchNorm's
  // running statistics (the eval() forward reads no num_batches_tracked).
  int64_t constant_bytes = 0;
  for (const auto& t : compiled_module->buffers()) constant_bytes += static_cast<int64_t>(t.nbytes());
  CHECK(c["memory"]["parameters"].get<int64_t>() + c["memory"]["packed_weights"].get<int64_t>() == constant_bytes);
  CHECK(constant_bytes > 4 * zoo->facts().parameter_count);
  CHECK(constant_bytes <= 4 * zoo->facts().parameter_count + zoo->facts().buffer_bytes);
  CHECK(j["gap"]["compiled_throughput_ratio"].get<double>() ==
        Approx(c["throughput"]["samples_per_s"].get<double>() /
               j["inference"]["throughput"]["samples_per_s"].get<double>()));
  std::ifstream page(html);
  const std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  CHECK(text.find("Inference eager and compiled (AOTInductor)") != std::string::npos);

  // Compiled in bf16, its inputs images: the package's checks and runs see them in bf16, as eager's bf16 copy does.
  const auto bf16_package = (dir.path / "resnet-bf16.pt2").string();
  const auto saved_bf16 =
      test::run_command(python + " " + std::string(TVIE_SOURCE_DIR) + "/examples/aoti_zoo_resnet.py " + weights + " " +
                        bf16_package + " --image-size 32 --dtype bf16");
  INFO(saved_bf16.out);
  REQUIRE(saved_bf16.exit_code == 0);
  const auto bf16_json = (dir.path / "compare-bf16.json").string();
  const auto bf16_run = test::run_command(std::string(TVIE_CLI_PATH) +
                                          " compare --model resnet --preset tiny --batch 4 --steps 1 --warmup 0 "
                                          "--device cpu --infer-dtype bf16 --aoti " +
                                          bf16_package + " --quiet --json " + bf16_json);
  INFO(bf16_run.out);
  REQUIRE(bf16_run.exit_code == 0);
  std::ifstream bf16_in(bf16_json);
  const auto jb = nlohmann::json::parse(bf16_in);
  CHECK(jb["compiled_inference"]["dtype"] == "bf16");
  CHECK(jb["compiled_inference"]["memory"]["parameters"].get<int64_t>() +
            jb["compiled_inference"]["memory"]["packed_weights"].get<int64_t>() ==
        constant_bytes / 2);

  // Refused before anything runs, one line each: another dtype, another model, a slice plan.
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {compare + " --infer-dtype bf16", "--infer-dtype: got 'bf16'; accepted: fp32 with this package"},
           {std::string(TVIE_CLI_PATH) + " compare --model mlp --steps 1 --infer-dtype fp32 --device cpu --aoti " +
                package,
            "accepted: a package of mlp/tiny, whose samples are ["},
           {compare + " --infer-dtype fp32 --slice-layers 1,2", "--aoti: got '" + package + "'"}}) {
    const auto r = test::run_command(args);
    INFO(args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK(r.out.find(needle) != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 1);
  }
}

TEST_CASE("examples/data_parallel: two ranks under tvie launch", "[examples][dist]") {
  const auto run = test::run_command(std::string(TVIE_CLI_PATH) + " launch --nproc 2 -- " + example("data_parallel") +
                                     " --device cpu");
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("distributed: gloo, 2 ranks, data parallel") != std::string::npos);
  CHECK(run.out.find("parameters identical on every rank after the run: yes") != std::string::npos);
}

TEST_CASE("the tutorial's GPU paragraph quotes the committed H200 report", "[examples]") {
  // The figures of "On a GPU" are the report's bytes, written with thousands separators, and their ratio to one
  // decimal: a new H200 run that changes them fails here until the paragraph is updated.
  const fs::path root(TVIE_SOURCE_DIR);
  const auto report =
      nlohmann::json::parse(read_text(root / "docs" / "results" / "gpu-h200" / "compare-gpt2-small.json"));
  const auto grouped = [](int64_t v) {
    std::string digits = std::to_string(v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return out;
  };
  const auto t = report.at("training").at("memory"), i = report.at("inference").at("memory");
  const int64_t train_peak = t.at("peak").get<int64_t>(), infer_peak = i.at("peak").get<int64_t>();
  std::string doc = read_text(root / "docs" / "why-training-needs-more-memory.md");
  std::replace(doc.begin(), doc.end(), '\n', ' ');
  std::ostringstream ratio;
  ratio.setf(std::ios::fixed);
  ratio.precision(1);
  ratio << static_cast<double>(train_peak) / static_cast<double>(infer_peak);
  for (const std::string& quoted :
       {"peaked at " + grouped(train_peak) + " bytes allocated",
        "(saved activations " + grouped(t.at("activations").get<int64_t>()) + ")",
        "bf16 inference at " + grouped(infer_peak) + " bytes: " + ratio.str() + " times less"}) {
    INFO(quoted);
    CHECK(doc.find(quoted) != std::string::npos);
  }
}
