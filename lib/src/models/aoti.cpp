// AOTInductor packages as a Workload. See aoti.hpp.
#include <tvie/aoti.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include "core/text.hpp"
#include "models/zoo_common.hpp"
#include <tvie/errors.hpp>
#include <tvie/kernels.hpp>
#include <tvie/log.hpp>

namespace tvie {
namespace {

using Loader = torch::inductor::AOTIModelPackageLoader;

// The package's runtime prints each error it throws to stderr ("Error: ..."); a probe that expects some to fail
// keeps them off the terminal in a temporary file. Its generated input checks put their refusal into the exception
// in recent LibTorch, and only on stderr in older ones (2.11 throws "... API call failed"): refusal_text reads both.
class QuietStderr {
 public:
  QuietStderr() : saved_(dup(STDERR_FILENO)), file_(std::tmpfile()) {
    if (saved_ >= 0 && file_ != nullptr) dup2(fileno(file_), STDERR_FILENO);
  }
  ~QuietStderr() {
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);
      close(saved_);
    }
    if (file_ != nullptr) std::fclose(file_);
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

  // What was printed so far (pread: the writes' offset stays where it is).
  std::string text() const {
    std::string out;
    if (file_ == nullptr) return out;
    char buffer[4096];
    for (;;) {
      const ssize_t n = pread(fileno(file_), buffer, sizeof buffer, static_cast<off_t>(out.size()));
      if (n <= 0) break;
      out.append(buffer, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int saved_;
  std::FILE* file_;
};

std::string error_text(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  return detail::first_line(c10_error ? c10_error->what_without_backtrace() : std::string(e.what()));
}

// Why the package refused a run: the runtime's own "Error: " line where it printed one, else the exception's text.
std::string refusal_text(const std::exception& e, const QuietStderr& printed) {
  const std::string text = printed.text();
  const size_t at = text.find("Error: ");
  if (at == std::string::npos) return error_text(e);
  return detail::first_line(text.substr(at + 7));
}

std::unique_ptr<Loader> load_package(const std::string& path) {
  try {
    return std::make_unique<Loader>(path);
  } catch (const std::exception& e) {
    throw InvalidArgument("aoti.path", path,
                          cat("a package written by torch._inductor.aoti_compile_and_package (", error_text(e), ")"));
  }
}

// The package's constants (its weights and buffers), as its runner computes with them.
std::unordered_map<std::string, torch::Tensor> constants_of(Loader& loader) {
  return loader.get_runner()->extract_constants_map(/*use_inactive=*/false);
}

InferenceDtype dtype_of(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kBFloat16:
      return InferenceDtype::bf16;
    case torch::kFloat16:
      return InferenceDtype::fp16;
    default:
      return InferenceDtype::fp32;
  }
}

// An nn::Module around a loaded package: its constants registered as buffers (the same tensors, not copies), so
// that the ledger and the report see the weights the package computes with.
class AotiModuleImpl : public torch::nn::Module {
 public:
  explicit AotiModuleImpl(std::unique_ptr<Loader> l) : loader(std::move(l)) {
    int64_t i = 0;
    for (const auto& [name, t] : constants_of(*loader)) {
      register_buffer(cat("constant_", i++), t);
      loaded.push_back(t.scalar_type());
    }
  }
  std::unique_ptr<Loader> loader;
  std::vector<c10::ScalarType> loaded;  // each constant's dtype as the package holds it, in registration order
};

// The dtype the package computes in: that of most of its floating constants' bytes (Inductor may add a few fp32
// constants to a bf16 model's); fp32 when it has none.
InferenceDtype dominant_dtype(const std::unordered_map<std::string, torch::Tensor>& constants) {
  std::map<InferenceDtype, int64_t> bytes;
  for (const auto& [name, t] : constants)
    if (t.is_floating_point()) bytes[dtype_of(t)] += static_cast<int64_t>(t.nbytes());
  InferenceDtype best = InferenceDtype::fp32;
  int64_t most = -1;
  for (const auto& [dtype, n] : bytes)
    if (n > most) {
      best = dtype;
      most = n;
    }
  return best;
}

class AotiWorkload final : public Workload {
 public:
  // `inputs`: a model whose batches the package runs on (make_aoti_twin; it must outlive this), else batches of
  // the settings' shape.
  explicit AotiWorkload(AotiSettings s, const Workload* inputs = nullptr)
      : s_(std::move(s)), inputs_(inputs), package_(aoti_package(s_.path)) {
    // The package's generated code checks each input's rank, sizes (its dynamic batch's bounds included), dtype and
    // device only where this is set when it first runs; unchecked, a wrong shape reads out of bounds. A user's own
    // setting stands (setenv does not overwrite it).
    setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0);
    auto loader = load_package(s_.path);
    int64_t floating = 0, floating_bytes = 0;
    for (const auto& [name, t] : constants_of(*loader))
      if (t.is_floating_point()) {
        floating += t.numel();
        floating_bytes += static_cast<int64_t>(t.nbytes());
      }
    facts_.parameter_count = floating;
    const auto metadata = loader->get_metadata();
    if (const auto it = metadata.find(kAotiParametersKey); it != metadata.end()) {
      const int64_t declared = std::strtoll(it->second.c_str(), nullptr, 10);
      if (declared > 0 && declared <= floating) {
        facts_.parameter_count = declared;
        // The parameters in the package's dtype; the rest of the floating constants' bytes are its buffers.
        const int64_t element = package_.dtype == InferenceDtype::fp32 ? 4 : 2;
        facts_.buffer_bytes = std::max<int64_t>(0, floating_bytes - element * declared);
      }
    }
    if (const auto it = metadata.find(kAotiFlopsKey); it != metadata.end()) {
      char* end = nullptr;
      const double flops = std::strtod(it->second.c_str(), &end);
      if (end != it->second.c_str() && flops >= 0) {
        facts_.forward_flops_per_sample = flops;
        facts_.flops_source = cat("the package's metadata (", kAotiFlopsKey, ", written by its exporter)");
      }
    }
    if (facts_.forward_flops_per_sample == 0)
      facts_.flops_source = cat("not known: the package has no ", kAotiFlopsKey,
                                " in its metadata, and Inductor's kernels are not operators the profiler counts");
    if (s_.token_input && !s_.input_shape.empty()) facts_.tokens_per_sample = s_.input_shape.back();
    std::string base = s_.path;
    if (const auto slash = base.find_last_of('/'); slash != std::string::npos) base = base.substr(slash + 1);
    name_ = cat("aoti:", base);
    if (package_.device == "cpu") check_forward(*loader);
  }

  std::string name() const override { return name_; }
  const AotiPackage& package() const { return package_; }
  // A batch's input as the measured runs pass it: floating inputs in the package's dtype (the harness converts them
  // to the inference dtype, which is the package's).
  torch::Tensor package_input(const torch::Tensor& input) const {
    return input.is_floating_point()
               ? input.to(nn::inference_floating_dtype(package_.dtype, c10::Device(package_.device)))
               : input;
  }

  std::shared_ptr<torch::nn::Module> make_module() const override {
    return std::make_shared<AotiModuleImpl>(load_package(s_.path));
  }

  torch::Tensor forward(torch::nn::Module& module, const torch::Tensor& input) const override {
    // The generated code checks its input's strides against the contiguous ones, those of size-1 dimensions
    // included (which is_contiguous() ignores): a view such as a token window of a longer row is copied.
    std::vector<int64_t> strides(static_cast<size_t>(input.dim()));
    int64_t stride = 1;
    for (int64_t d = input.dim() - 1; d >= 0; --d) {
      strides[static_cast<size_t>(d)] = stride;
      stride *= input.size(d);
    }
    const bool packed = input.strides() == c10::IntArrayRef(strides);
    return static_cast<AotiModuleImpl&>(module)
        .loader->run({packed ? input : input.clone(at::MemoryFormat::Contiguous)})
        .at(0);
  }

  Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    if (inputs_ != nullptr) return inputs_->make_batch(batch_size, device, seed);
    auto gen = zoo::data_generator(seed);
    std::vector<int64_t> shape{batch_size};
    shape.insert(shape.end(), s_.input_shape.begin(), s_.input_shape.end());
    Batch b;
    b.input = s_.token_input ? torch::randint(0, s_.vocab_size, shape, gen, torch::kInt64)
                             : torch::randn(shape, gen, torch::kFloat32);
    b.input = b.input.to(device);
    b.target = torch::zeros({batch_size}, torch::TensorOptions(device));
    b.samples = batch_size;
    b.tokens = facts_.tokens_per_sample * batch_size;
    return b;
  }

  // A package holds a forward only.
  torch::Tensor loss(const torch::Tensor& output, const Batch& batch) const override {
    (void)output;
    (void)batch;
    throw InvalidArgument("aoti.path", s_.path, "inference only (an AOTInductor package has no backward)");
  }

  ModelFacts facts() const override { return facts_; }

  // The package's constants, exactly. On the CPU they are mapped from its library, not allocated: the ledger counts
  // them as weights outside the allocator (InferenceMemory::packed_weights).
  int64_t inference_weight_bytes(const torch::nn::Module& module) const override {
    int64_t bytes = 0;
    for (const auto& b : module.buffers()) bytes += static_cast<int64_t>(b.nbytes());
    return bytes;
  }

  // The copy tvie converted must be the package's own: its kernels compute in the dtype and on the device they were
  // compiled for, whatever the registered buffers are converted to.
  void prepare_inference(torch::nn::Module& module) const override {
    const auto& loaded = static_cast<AotiModuleImpl&>(module).loaded;
    const auto buffers = module.buffers();
    for (size_t i = 0; i < buffers.size() && i < loaded.size(); ++i) {
      const auto& b = buffers[i];
      if (b.device().type() != c10::Device(package_.device).type())
        throw InvalidArgument(
            "aoti.path", s_.path,
            cat("a package compiled for ", b.device().str(), " (this one runs on ", package_.device, ")"));
      if (b.scalar_type() != loaded[i])
        throw InvalidArgument("aoti.path", s_.path,
                              cat("a package compiled in ", to_string(dtype_of(b)), " (this one computes in ",
                                  to_string(package_.dtype), ")"));
    }
  }

 private:
  // One forward of a batch of 2 of the declared shape: a package that rejects the shape, or whose output does not
  // have the batch first, is refused with one line before any run.
  void check_forward(Loader& loader) const {
    std::vector<torch::Tensor> out;
    QuietStderr quiet;
    try {
      c10::InferenceMode guard;
      out = loader.run({package_input(make_batch(2, c10::Device(c10::kCPU), 0).input)});
    } catch (const std::exception& e) {
      const std::string why = refusal_text(e, quiet);
      if (inputs_ != nullptr)  // the package is refused, not the model's inputs
        throw InvalidArgument(
            "aoti.path", s_.path,
            cat("a package of ", inputs_->name(), ", whose samples are ", s_.token_input ? "token ids " : "", "[",
                detail::shape_text(s_.input_shape), "] (a batch of 2 of them failed: ", why, ")"));
      throw InvalidArgument("aoti.input_shape", detail::shape_text(s_.input_shape),
                            cat("a shape the package accepts (a batch of 2 of this shape failed: ", why, ")"));
    }
    if (out.empty() || out.front().dim() == 0 || out.front().size(0) != 2)
      throw InvalidArgument("aoti.input_shape", detail::shape_text(s_.input_shape),
                            "a shape for which the output's first dimension is the batch");
  }

  AotiSettings s_;
  const Workload* inputs_;
  AotiPackage package_;
  std::string name_;
  ModelFacts facts_;
};

}  // namespace

void validate(const AotiSettings& s) {
  if (s.path.empty() || !std::ifstream(s.path).good())
    throw InvalidArgument("aoti.path", s.path,
                          "a readable .pt2 file written by torch._inductor.aoti_compile_and_package");
  if (s.input_shape.empty())
    throw InvalidArgument("aoti.input_shape", "", "one sample's shape without the batch dimension, e.g. 3,32,32");
  for (int64_t d : s.input_shape)
    if (d < 1) throw InvalidArgument("aoti.input_shape", cat(d), "dimensions >= 1");
  if (s.token_input && s.vocab_size < 1)
    throw InvalidArgument("aoti.vocab_size", cat(s.vocab_size), "an integer >= 1 (token inputs need it)");
}

AotiPackage aoti_package(const std::string& path) {
  if (path.empty() || !std::ifstream(path).good())
    throw InvalidArgument("aoti.path", path,
                          "a readable .pt2 file written by torch._inductor.aoti_compile_and_package");
  AotiPackage p;
  std::unordered_map<std::string, std::string> metadata;
  try {
    metadata = Loader::load_metadata_from_package(path, "model");
  } catch (const std::exception& e) {
    throw InvalidArgument("aoti.path", path,
                          cat("a package written by torch._inductor.aoti_compile_and_package (", error_text(e), ")"));
  }
  const auto it = metadata.find("AOTI_DEVICE_KEY");
  p.device = it == metadata.end() ? "cpu" : it->second;
  auto loader = load_package(path);  // on the package's device: refused with its reason where that is missing
  p.dtype = dominant_dtype(constants_of(*loader));
  return p;
}

void check_aoti_batches(const Workload& aoti, const std::vector<int64_t>& batch_sizes, const std::string& field) {
  const auto* w = dynamic_cast<const AotiWorkload*>(&aoti);
  if (w == nullptr) throw InvalidArgument(field, "", "a workload made by make_aoti_workload or make_aoti_twin");
  const auto module = w->make_module();
  const c10::Device device(w->package().device);
  for (const int64_t n : batch_sizes) {
    QuietStderr quiet;
    try {
      c10::InferenceMode guard;
      w->forward(*module, w->package_input(w->make_batch(n, device, 0).input));
    } catch (const std::exception& e) {
      const auto text = refusal_text(e, quiet);
      // The generated checks name the input they refuse; anything else (out of memory) is the run's to report.
      if (text.find("input_handles[") != std::string::npos)
        throw InvalidArgument(field, cat(n), cat("a batch the package accepts (", text, ")"));
    }
  }
}

std::unique_ptr<Workload> make_aoti_workload(const AotiSettings& settings) {
  validate(settings);
  return std::make_unique<AotiWorkload>(settings);
}

std::unique_ptr<Workload> make_aoti_twin(const Workload& model, const std::string& path, const c10::Device& device,
                                         InferenceDtype dtype, const std::string& dtype_field) {
  // The package's input as the model makes it: one sample's shape, and token ids in the range its batches draw.
  const torch::Tensor sample = model.make_batch(2, c10::Device(c10::kCPU), 0).input;
  AotiSettings s;
  s.path = path;
  s.input_shape.assign(sample.sizes().begin() + 1, sample.sizes().end());
  s.token_input = !sample.is_floating_point();
  s.vocab_size = s.token_input ? sample.max().item<int64_t>() + 1 : 0;
  validate(s);
  auto package = std::make_unique<AotiWorkload>(s, &model);
  const AotiPackage& p = package->package();
  if (c10::Device(p.device).type() != device.type())
    throw InvalidArgument("device", device.str(), cat(p.device, " with this package (the device it was compiled for)"));
  if (p.dtype != dtype)
    throw InvalidArgument(dtype_field, to_string(dtype),
                          cat(to_string(p.dtype), " with this package (the dtype it was compiled in)"));
  const int64_t expected = model.facts().parameter_count, held = package->facts().parameter_count;
  if (expected > 0 && held != expected)
    throw InvalidArgument("aoti.path", path,
                          cat("a package of ", model.name(), " (", detail::with_commas(expected),
                              " parameters; this one holds ", detail::with_commas(held), ")"));
  return package;
}

}  // namespace tvie
